"""A worker: one process running the cases of a campaign stored in PostgreSQL, beside any
number of others, on this machine or others (docs/scale-out.md).

Each worker folds the log once at start (the closed cases are never generated), then walks
the campaign's plan and runs only the cases it leases (`harness.store.postgres_leases`),
renewing its leases while it runs. A case another worker began is continued from the log
exactly as ``harness resume`` continues it. When every planned case is closed, the worker
that sees it last records CampaignFinished, once. A worker that stops or aborts records the
campaign's end as one process does (CampaignFinished stopped/aborted with its reason) when
no other process is running the campaign; a process that joins a campaign whose last
recorded event is such an end records CampaignResumed first, as ``harness resume`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import psycopg

from harness.campaign import CampaignConfig
from harness.engine import AnswerCache, Engine, ProgressSink, RunSummary
from harness.errors import CampaignAbortedError, ConfigError, HarnessError
from harness.events import CampaignFinished, CampaignResumed
from harness.model import Model
from harness.plan import Plan
from harness.providers import VendorGate, campaign_endpoints
from harness.runner import (
    ResumePoint,
    Session,
    campaign_started,
    check_plan_has_cases,
    code_version,
    install_stop_handlers,
    load_resume_point,
    updated_config,
)
from harness.store.open import is_postgres_url, open_reader, open_writer
from harness.store.postgres_budgets import SharedBudgets
from harness.store.postgres_leases import CaseLeases
from harness.store.postgres_spend import SharedSpend, SharedSpendGate
from harness.store.postgres_url import PostgresUrl
from harness.store.postgres_workers import CampaignRunners
from harness.store.protocol import EventSink
from harness.store.writer import PendingEvent

FINISH_LOCK = 0x6268_0003  # one worker at a time checks and records the campaign's end


@dataclass
class WorkerSummary:
    run: RunSummary
    owner: str
    taken_over: int  # cases continued from another worker's part of the log
    finished: bool  # this worker recorded CampaignFinished


async def _renew(
    leases: CaseLeases, spend: SharedSpend, runners: CampaignRunners, engine: Engine
) -> None:
    """Renew every ttl/3; a worker that cannot reach the database stops taking cases."""
    while True:
        await asyncio.sleep(leases.ttl_s / 3)
        try:
            await leases.renew()
            await spend.renew()
            await runners.renew()
        except (HarnessError, psycopg.Error) as exc:
            engine.request_stop(f"lost the database: {exc}")
            return


@contextlib.asynccontextmanager
async def _finish_lock(leases: CaseLeases) -> AsyncIterator[None]:
    """One process at a time joins a campaign or records its end."""
    conn = leases._conn
    await conn.execute("SELECT pg_advisory_lock(%s)", (FINISH_LOCK,))
    try:
        yield
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (FINISH_LOCK,))


def _log_state(db: str, campaign: str) -> tuple[int, str | None, str | None]:
    """(closed cases, kind and status of the campaign's last event outside its cases)."""
    with open_reader(db) as log:
        closed = log.connection.execute(
            "SELECT count(DISTINCT case_id) FROM events WHERE campaign = ? AND kind = 'CaseClosed'",
            (campaign,),
        ).fetchone()[0]
        last = log.connection.execute(
            "SELECT kind, payload FROM events WHERE campaign = ? AND case_id = ''"
            " ORDER BY seq DESC LIMIT 1",
            (campaign,),
        ).fetchone()
    if last is None:
        return int(closed), None, None
    status = json.loads(last[1]).get("status") if last[0] == "CampaignFinished" else None
    return int(closed), str(last[0]), status


async def _join(
    store: EventSink,
    leases: CaseLeases,
    runners: CampaignRunners,
    point: ResumePoint,
    db: str,
    updates: Mapping[str, object],
    announce: bool,
) -> None:
    """Count this process among the campaign's runners; record CampaignResumed when the
    log says the campaign ended short of completion (or always, with ``announce``)."""
    async with _finish_lock(leases):
        await runners.join()
        _, last, status = _log_state(db, point.campaign)
        if not announce and (last != "CampaignFinished" or status == "completed"):
            return
        in_flight = sum(1 for s in point.open_cases.values() for t in s.open_turns() if t.in_flight)
        resumed = CampaignResumed(
            code_version=code_version(),
            open_cases=len(point.open_cases),
            in_flight_resent=in_flight,
            config_overrides=dict(updates),
            endpoints=campaign_endpoints(updated_config(point.config, updates)),
        )
        seq = await store.next_seq(point.campaign, "")
        await store.append([PendingEvent(point.campaign, "", seq, resumed)])


async def _record_end(
    store: EventSink,
    leases: CaseLeases,
    runners: CampaignRunners,
    planned: int,
    db: str,
    summary: RunSummary,
) -> bool:
    """Record CampaignFinished if the campaign ended with this process: completed when
    every planned case is closed (whoever sees it last); stopped or aborted, as one process
    records it, when this process stopped or aborted and no other is running the campaign
    (the others go on, and the last to leave records the end). True if recorded."""
    campaign = leases.campaign
    async with _finish_lock(leases):
        closed, last, _ = _log_state(db, campaign)
        if last == "CampaignFinished":
            return False  # recorded already, and nobody joined since
        if closed >= planned:
            ended = CampaignFinished(status="completed", reason="", cases_closed=closed)
        elif summary.status != "completed" and not await runners.others_running():
            ended = CampaignFinished(
                status=summary.status,  # type: ignore[arg-type]
                reason=summary.reason,
                cases_closed=closed,
            )
        else:
            return False
        seq = await store.next_seq(campaign, "")
        await store.append([PendingEvent(campaign, "", seq, ended)])
        return True


async def run_worker(
    db: str,
    *,
    campaign: str | None = None,
    lease_s: float = 30.0,
    progress: ProgressSink | None = None,
    overrides: Mapping[str, Model] | None = None,
    cache: AnswerCache | None = None,
    handle_signals: bool = False,
    config_updates: Mapping[str, object] | None = None,
    point: ResumePoint | None = None,
    plan: Plan | None = None,
    announce: bool = False,
) -> WorkerSummary:
    """Run cases of ``campaign`` (default: the latest) of the PostgreSQL log ``db`` until
    none is left to lease. ``config_updates``, ``point`` and ``announce`` (record
    CampaignResumed) serve ``harness resume``, which runs on PostgreSQL as one worker."""
    if not is_postgres_url(db):
        raise ConfigError(
            "workers share a campaign through a PostgreSQL database",
            field="DB_URL",
            fix="give a postgresql:// URL (copy a SQLite log there with 'harness copy')",
        )
    point = point if point is not None else load_resume_point(db, campaign)
    updates = dict(config_updates or {})
    config = plan.config if plan is not None else updated_config(point.config, updates)
    plan = plan if plan is not None else Plan(config)
    session = Session.build(config, overrides, spent_usd=point.spent_usd)
    session.attach(progress)
    leases = await CaseLeases.open(
        db, point.campaign, ttl_s=lease_s, had_events=set(point.open_cases)
    )
    runners = CampaignRunners(leases._conn, point.campaign, leases.owner, lease_s)
    # Requests and tokens per window hold for all workers together, not for each.
    shared = await SharedBudgets.share(db, point.campaign, session.budgets.gates)
    # ... and so does the spending ceiling: every worker's calls count against it.
    spend = await SharedSpend.open(
        db,
        point.campaign,
        leases.owner,
        ceiling_usd=config.limits.spend_ceiling_usd,
        spent_in_log=point.spent_usd,
        ttl_s=lease_s,
    )
    for name, gate in list(session.gates.items()):
        if isinstance(gate, VendorGate) and gate.price is not None:
            session.gates[name] = SharedSpendGate(gate, spend)
    try:
        async with await open_writer(db, create=False) as store:
            await _join(store, leases, runners, point, db, updates, announce)
            engine = Engine(
                store,
                config,
                point.campaign,
                session.models,
                session.judges,
                gates=session.gates,
                progress=progress,
                skip=point.closed.__contains__,
                cache=cache,
                plan=plan,
                lease=leases,
            )
            if handle_signals:
                install_stop_handlers(engine.signal_stop)
            renewer = asyncio.create_task(
                _renew(leases, spend, runners, engine), name="lease-renewal"
            )
            aborted: CampaignAbortedError | None = None
            try:
                summary = await engine.run()
            except CampaignAbortedError as exc:
                aborted, summary = exc, engine.summary
            finally:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer
                await session.aclose()
            # The cases this process gives up go to the others before its end is judged.
            for case_id in list(leases.held):
                await leases.release(case_id, closed=False)
            finished = await _record_end(store, leases, runners, plan.total_cases, db, summary)
            if aborted is not None:
                raise aborted
    finally:
        with contextlib.suppress(psycopg.Error):
            await runners.leave()
        await spend.close()
        await shared.close()
        await leases.close()
    return WorkerSummary(summary, leases.owner, leases.taken_over, finished)


async def resume_with_leases(
    db: str,
    *,
    campaign: str | None = None,
    point: ResumePoint | None = None,
    plan: Plan | None = None,
    config_updates: Mapping[str, object] | None = None,
    progress: ProgressSink | None = None,
    overrides: Mapping[str, Model] | None = None,
    cache: AnswerCache | None = None,
    handle_signals: bool = False,
) -> RunSummary:
    """``harness resume`` on a PostgreSQL log: one worker that records CampaignResumed, so
    it may run beside other workers (it claims each case as they do: never a case another
    process holds, never a call twice)."""
    done = await run_worker(
        db,
        campaign=campaign,
        point=point,
        plan=plan,
        config_updates=config_updates,
        progress=progress,
        overrides=overrides,
        cache=cache,
        handle_signals=handle_signals,
        announce=True,
    )
    return done.run


async def start_campaign(config: CampaignConfig, db: str, plan: Plan) -> str:
    """Record a new campaign in the PostgreSQL log ``db`` for workers to run; its id."""
    check_plan_has_cases(plan)
    campaign_id = uuid.uuid4().hex[:12]
    async with await open_writer(db) as store:
        started = campaign_started(config, plan.total_cases)
        await store.append([PendingEvent(campaign_id, "", 1, started)])
    return campaign_id


def spawn_workers(
    db: str, campaign: str, count: int, lease_s: float
) -> list[subprocess.Popen[bytes]]:
    """``count`` more ``harness worker`` processes on this machine (each its own core).
    A password in ``db`` goes to them in their environment (PGPASSWORD), never on their
    command line, which any user of the machine can list."""
    target = PostgresUrl.parse(db)
    env = dict(os.environ)
    if target.secrets:
        env["PGPASSWORD"] = target.secrets[0]
    argv = [sys.executable, "-c", "from harness.cli import main; main()", "worker"]
    argv += [target.shown if target.secrets else db, "--campaign", campaign]
    argv += ["--lease", str(lease_s)]
    return [
        subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(count)
    ]
