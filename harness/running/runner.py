"""Glue between a campaign file, the event store, the models and the engine."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from harness.models.batch import BatchClient, batch_client_for
from harness.models.gates import CallGate, InFlightGate
from harness.models.providers import Budgets, build_budgets, campaign_endpoints
from harness.plugins.assembly import build_model
from harness.reporting.campaign_status import refuse_resume_of_import
from harness.running.batch_waves import (
    BatchGate,
    BatchModel,
    BatchRecorder,
    KnownWave,
    batch_progress,
    known_waves,
)
from harness.running.campaign import CampaignConfig, parse_campaign, parse_recorded_campaign
from harness.running.code_version import code_version as code_version
from harness.running.engine import AnswerCache, Engine, ProgressSink, RunSummary
from harness.running.plan import Plan
from harness.running.stopping import StoppingMonitor, monitor_from_log
from harness.store.fold import CaseState, fold_case
from harness.store.log import LogLike
from harness.store.open import log_exists, open_reader, open_writer
from harness.store.protocol import EventSink
from harness.store.reader import LogSummary
from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.errors import ConfigError, StoreError, strip_url_credentials
from harness.vocabulary.events import CampaignResumed, CampaignStarted, Note
from harness.vocabulary.model import Model


def harness_version() -> str:
    try:
        return version("bias-harness")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass
class Session:
    """What a run needs besides the store: models, judges, their gates and the budgets."""

    models: dict[str, Model]
    judges: list[Model]
    gates: dict[str, CallGate]
    budgets: Budgets
    # The batch clients of the models in ``mode = "batch"`` (by name), built before the first
    # call: a scheme without a batch API is a ConfigError then (exit 2).
    batch_clients: dict[str, BatchClient] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        config: CampaignConfig,
        overrides: Mapping[str, Model] | None = None,
        *,
        spent_usd: float = 0.0,
    ) -> Session:
        """``spent_usd``: what earlier runs of this campaign spent, so a resumed campaign's
        ceiling covers the whole campaign, not each run."""
        overrides = overrides or {}
        clients = {
            s.name: batch_client_for(s)
            for s in [*config.models, *config.judges]
            if s.mode == "batch"
        }
        models = {s.name: overrides.get(s.name) or build_model(s) for s in config.models}
        judges = [overrides.get(s.name) or build_model(s) for s in config.judges]
        budgets = build_budgets(config, spent_usd=spent_usd)
        gates: dict[str, CallGate] = {
            s.name: budgets.gates.get(s.name) or InFlightGate(s.max_in_flight)
            for s in [*config.models, *config.judges]
        }
        return cls(models, judges, gates, budgets, clients)

    def use_batches(
        self,
        config: CampaignConfig,
        store: EventSink,
        campaign_id: str,
        known: Mapping[str, KnownWave] | None = None,
        owner: str | None = None,
        refresh: Callable[[], Awaitable[Mapping[str, KnownWave]]] | None = None,
        live_owners: Callable[[], Awaitable[set[str]]] | None = None,
    ) -> None:
        """Put every model in ``mode = "batch"`` behind its `BatchModel` (docs/batch.md).
        ``known``: the waves of the log being resumed, to re-attach to; ``owner``: the
        worker that runs them (PostgreSQL), named in the batch notes; ``refresh`` and
        ``live_owners``: what other workers queued and who runs now (`BatchModel`)."""
        if not self.batch_clients:
            return
        recorder = BatchRecorder(store, campaign_id, owner)

        def batched(model: Model) -> Model:
            client = self.batch_clients.get(model.name)
            if client is None:
                return model
            self.gates[model.name] = BatchGate(
                model.name, self.gates.get(model.name), getattr(client, "price", None)
            )
            return BatchModel(model, client, config.batch, recorder, known, refresh, live_owners)

        self.models = {name: batched(m) for name, m in self.models.items()}
        self.judges = [batched(j) for j in self.judges]

    def status_line(self) -> str:
        """Rate, tokens, spend and retries of the vendor models (empty without any), and
        the batches under way."""
        line = self.budgets.snapshot().line() if self.budgets.gates else ""
        batches = batch_progress([*self.models.values(), *self.judges])
        return " · ".join(part for part in (line, batches) if part)

    def attach(self, progress: ProgressSink | None) -> None:
        setter = getattr(progress, "set_status_source", None)
        if setter is not None:
            setter(self.status_line)

    async def aclose(self) -> None:
        for model in [*self.models.values(), *self.judges]:
            await model.aclose()


# How long past its grace period a stopped campaign may take to wind down (commit the
# cancelled calls, close the log) before the process exits regardless.
HARD_STOP_MARGIN_S = 5.0


def install_stop_handlers(
    on_signal: Callable[[str], object], *, grace_s: float | None = None
) -> None:
    """Call ``on_signal(reason)`` on SIGINT and SIGTERM instead of dying mid-call, until the
    calling task ends (then the handlers before are back, so a signal while the report is
    printed still ends the command as an interruption, not with the default 143).

    The handlers are the interpreter's own, not the event loop's: they run between two
    bytecodes even while the loop is busy, and wake it. ``grace_s``: the campaign's
    ``stop_grace_s``; if the process is still running `HARD_STOP_MARGIN_S` after it, it
    exits with 130 regardless. That is as safe as a kill: every step is committed before the
    next one is taken (invariant 1), and resume re-sends what was in flight.
    """
    loop = asyncio.get_running_loop()
    timers: list[threading.Timer] = []

    def handler(signum: int, frame: object) -> None:
        reason = f"stopped by {signal.Signals(signum).name}"
        with contextlib.suppress(RuntimeError):  # the loop closed under us: nothing to stop
            loop.call_soon_threadsafe(on_signal, reason)
        if grace_s is not None and not timers:
            timer = threading.Timer(grace_s + HARD_STOP_MARGIN_S, _hard_stop, args=(reason,))
            timer.daemon = True
            timers.append(timer)
            timer.start()

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread (tests): no signals to catch
            return
    task = asyncio.current_task()

    def restore(_: object = None) -> None:
        for sig, before in previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, before)
        for timer in timers:
            timer.cancel()

    if task is not None:
        task.add_done_callback(restore)


def _hard_stop(reason: str) -> None:
    sys.stderr.write(
        f"{reason}: the campaign did not wind down within its grace period; exiting now "
        "(every committed step is kept: resume the log to continue)\n"
    )
    sys.stderr.flush()
    os._exit(130)  # the documented interruption status (harness.cli.exit_codes)


def waves_in_log(db: LogLike, campaign: str) -> dict[str, KnownWave]:
    """The batch waves the log of ``campaign`` records (to re-attach to on resume)."""
    with open_reader(db) as log:
        notes = [e.event for e in log.events(campaign, kinds=("Note",))]
    return known_waves(n for n in notes if isinstance(n, Note))


def campaign_started(config: CampaignConfig, planned_cases: int) -> CampaignStarted:
    """The first event of a campaign: its resolved config, code version and endpoints (the
    one constructor for runs and imports)."""
    return CampaignStarted(
        name=config.name,
        config=config.resolved(),
        config_hash=config.config_hash(),
        code_version=code_version(),
        harness_version=harness_version(),
        planned_cases=planned_cases,
        endpoints=campaign_endpoints(config),
    )


async def run_campaign(
    config: CampaignConfig,
    db: LogLike,
    *,
    progress: ProgressSink | None = None,
    overrides: Mapping[str, Model] | None = None,
    cache: AnswerCache | None = None,
    handle_signals: bool = False,
    plan: Plan | None = None,
) -> RunSummary:
    """Start a new campaign in ``db`` (a new or existing log file) and run it to the end.

    ``plan``: the plan of ``config`` if the caller built it already (one per run)."""
    plan = plan if plan is not None else Plan(config)
    check_plan_has_cases(plan)
    session = Session.build(config, overrides)
    session.attach(progress)
    campaign_id = uuid.uuid4().hex[:12]
    async with await open_writer(db) as store:
        started = campaign_started(config, plan.total_cases)
        await store.append([PendingEvent(campaign_id, "", 1, started)])
        session.use_batches(config, store, campaign_id)
        engine = Engine(
            store,
            config,
            campaign_id,
            session.models,
            session.judges,
            gates=session.gates,
            progress=progress,
            cache=cache,
            plan=plan,
        )
        if handle_signals:
            install_stop_handlers(engine.signal_stop, grace_s=config.limits.stop_grace_s)
        try:
            return await engine.run()
        finally:
            await session.aclose()


def check_plan_has_cases(plan: Plan) -> None:
    """A new campaign whose relation selects no case fails before the first call, instead
    of "completing" with nothing asked (a question file that is not one, an unknown
    attribute...)."""
    for i, (name, _relation, count) in enumerate(plan.relations):
        if count == 0:
            options = plan.config.relations[i].options
            raise ConfigError(
                f"relation {name} has no case to run with the options {options}",
                field=f"relations[{i}].options",
                fix="check the options that select cases (a file path, attributes, concerns, "
                "languages...): 'harness relations --verbose' lists them",
            )


@dataclass
class ResumePoint:
    campaign: str
    config: CampaignConfig
    open_cases: dict[str, CaseState]
    closed: set[str]
    spent_usd: float = 0.0  # what the campaign's calls cost so far (see `spent_so_far`)
    # What the log said of the campaign's cases and spend; one computed from every row (a
    # log written before summaries) is recorded by the resume (`EventReader.summary`).
    summary: LogSummary | None = None


def load_resume_point(db: LogLike, campaign: str | None = None) -> ResumePoint:
    """The open cases of ``campaign`` (default: the latest) with their state, the ids of the
    closed ones, and the spend so far.

    Only open cases are decoded and folded: a closed case is known by its CaseClosed row and
    its spend read from its ReplyReceived rows in SQL, so the first call of a resumed
    campaign does not wait for every event of a long log to be decoded (a fold of every
    case took 26.8 s on 428,000 events).
    """
    with open_reader(db) as log:
        refuse_resume_of_import(log, campaign)
        campaign = campaign or log.latest_campaign()
        started = next((e.event for e in log.events(campaign, kinds=("CampaignStarted",))), None)
        if not isinstance(started, CampaignStarted):
            known = ", ".join(c for c, _ in log.campaigns()) or "none"
            raise ConfigError(
                f"{db} holds no campaign {campaign!r} (campaigns: {known})",
                field="--campaign",
                fix="give one of those ids, or leave --campaign out for the latest",
            )
        config = parse_recorded_campaign(started.config, source=f"{db} (recorded campaign)")
        config = updated_config(config, recorded_endpoint_overrides(log, campaign))
        summary = log.summary(campaign)
        closed = summary.closed
        open_cases: dict[str, CaseState] = {}
        for case_id in sorted(summary.unclosed):
            events = log.case_events(campaign, case_id)
            try:
                state = fold_case(events)
            except (ValueError, KeyError) as exc:
                raise StoreError(
                    f"{db}: case {case_id} has a malformed event sequence ({exc!r}); "
                    "the log cannot be resumed"
                ) from exc
            if state.closed:  # a CaseClosed row the query above did not see: never expected
                closed.add(case_id)
            else:
                open_cases[case_id] = state
    return ResumePoint(campaign, config, open_cases, closed, summary.usd, summary)


# The endpoint options `harness resume --base-url/--api-key-env` may change; a change is
# recorded in CampaignResumed.config_overrides under `endpoint_key` and kept by later resumes.
ENDPOINT_OPTIONS = ("base_url", "api_key_env", "url")  # url: an http: target's


def endpoint_key(model: str, option: str) -> str:
    """The override path of a model's endpoint option (``models[NAME].options.base_url``)."""
    return f"models[{model}].options.{option}"


def _is_endpoint_key(dotted: str) -> bool:
    return dotted.startswith(("models[", "judges[")) and dotted.rsplit(".", 1)[-1] in (
        ENDPOINT_OPTIONS
    )


def updated_config(config: CampaignConfig, updates: Mapping[str, object] | None) -> CampaignConfig:
    """``config`` with dotted-path overrides (``{"limits.spend_ceiling_usd": 5}``) applied.

    A part ``models[NAME]`` (or ``judges[NAME]``) names the model of that name; a value
    None removes the option (an endpoint option set back to the SDK's default)."""
    if not updates:
        return config
    data = config.resolved()
    for dotted, value in updates.items():
        node: dict[str, Any] = data
        *parents, leaf = _path(dotted)
        for key in parents:
            if "[" in key:
                group, name = key.rstrip("]").split("[", 1)
                found = [s for s in data.get(group) or [] if s.get("name") == name]
                if not found:
                    known = ", ".join(s["name"] for s in data.get(group) or [])
                    raise ConfigError(
                        f"the campaign has no model {name!r} (its {group}: {known})",
                        field="resume",
                        fix="give one of those names before the '='",
                    )
                node = found[0]
            else:
                node = node.setdefault(key, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return parse_campaign(data, source="resume overrides", recorded=True)


def _path(dotted: str) -> list[str]:
    """``models[openai:gpt-4o].options.base_url`` -> its parts; a model name may hold dots."""
    if dotted.startswith(("models[", "judges[")) and "]" in dotted:
        head, _, rest = dotted.partition("]")
        return [head + "]", *rest.lstrip(".").split(".")]
    return dotted.split(".")


def recorded_endpoint_overrides(log: Any, campaign: str) -> dict[str, object]:
    """The endpoint options earlier resumes of ``campaign`` changed, the latest of each:
    a base URL fixed by `harness resume --base-url` stays fixed for every later resume."""
    found: dict[str, object] = {}
    for stored in log.events(campaign, kinds=("CampaignResumed",)):
        event = stored.event
        if isinstance(event, CampaignResumed):
            for key, value in event.config_overrides.items():
                if _is_endpoint_key(key):
                    found[key] = value
    return found


def recordable_overrides(updates: Mapping[str, object] | None) -> dict[str, object]:
    """``updates`` as CampaignResumed records them: credentials removed from every URL."""
    return {
        key: strip_url_credentials(value) if isinstance(value, str) else value
        for key, value in (updates or {}).items()
    }


async def resume_campaign(
    db: LogLike,
    *,
    campaign: str | None = None,
    progress: ProgressSink | None = None,
    overrides: Mapping[str, Model] | None = None,
    config_updates: Mapping[str, object] | None = None,
    handle_signals: bool = False,
    cache: AnswerCache | None = None,
    point: ResumePoint | None = None,
    plan: Plan | None = None,
) -> RunSummary:
    """Continue an interrupted campaign: closed cases are skipped, open ones continue from
    their last committed turn, and calls that were in flight at the crash are re-sent.

    ``point``: the log folded by `load_resume_point`, if the caller did it already (the log
    is folded once per resume). ``plan``: the plan of the resumed config, with
    ``config_updates`` applied (`updated_config`), if the caller built it already.
    """
    if not log_exists(db):
        raise StoreError(f"{db} does not exist")
    if point is None:
        point = load_resume_point(db, campaign)
    config = plan.config if plan is not None else updated_config(point.config, config_updates)
    plan = plan if plan is not None else Plan(config)
    session = Session.build(config, overrides, spent_usd=point.spent_usd)
    session.attach(progress)
    async with await open_writer(db, create=False) as store:
        in_flight = sum(1 for s in point.open_cases.values() for t in s.open_turns() if t.in_flight)
        resumed = CampaignResumed(
            code_version=code_version(),
            open_cases=len(point.open_cases),
            in_flight_resent=in_flight,
            config_overrides=recordable_overrides(config_updates),
            endpoints=campaign_endpoints(config),
        )
        await store.append(
            [PendingEvent(point.campaign, "", await store.next_seq(point.campaign, ""), resumed)]
        )
        if session.batch_clients:
            session.use_batches(config, store, point.campaign, waves_in_log(db, point.campaign))
        stopping: StoppingMonitor | None = None
        if config.stopping is not None:
            # The decisions the log records stand; looks a crash cut off are recorded now.
            with open_reader(db) as log:
                stopping, missing = monitor_from_log(config.stopping, plan, log, point.campaign)
            if missing:
                seq = await store.next_seq(point.campaign, "")
                await store.append(
                    [PendingEvent(point.campaign, "", seq + i, x) for i, x in enumerate(missing)]
                )
        engine = Engine(
            store,
            config,
            point.campaign,
            session.models,
            session.judges,
            gates=session.gates,
            progress=progress,
            resume=point.open_cases,
            skip=point.closed.__contains__,
            cache=cache,
            plan=plan,
            stopping=stopping,
        )
        if handle_signals:
            install_stop_handlers(engine.signal_stop, grace_s=config.limits.stop_grace_s)
        try:
            summary = await engine.run()
        finally:
            await session.aclose()
            if point.summary and not point.summary.found and isinstance(store, EventWriter):
                # A log written before summaries paid for the full scans: record what they
                # found (true of the events up to its gseq) once the run is over, not before
                # its first call; the next resume reads it and the events after it.
                await store.record_summary(point.campaign, point.summary)
    return summary
