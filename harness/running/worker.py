"""A worker: one process running the cases of a campaign stored in PostgreSQL, beside any
number of others, on this machine or others (docs/scale-out.md).

Each worker folds the log once at start (the closed cases are never generated), then walks
the campaign's plan and runs only the cases it leases (`harness.store.postgres_leases`),
renewing its leases while it runs. A case another worker began is continued from the log
exactly as ``harness resume`` continues it. After its walk it takes up the cases other
workers gave back or left behind a lapsed lease, and waits while others still hold open
cases (`harness.running.worker_reclaim`). When every planned case is closed, the worker that sees
it last records CampaignFinished, once. A worker that stops or aborts records the
campaign's end as one process does (CampaignFinished stopped/aborted with its reason) when
no other process is running the campaign; a process that joins a campaign whose last
recorded event is such an end records CampaignResumed first, as ``harness resume`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from harness.models.providers import VendorGate
from harness.running.batch_waves import BatchGate, KnownWave
from harness.running.campaign import CampaignConfig
from harness.running.engine import AnswerCache, Engine, ProgressSink, RunSummary
from harness.running.plan import Plan
from harness.running.postgres_budgets import SharedBudgets
from harness.running.postgres_spend import SharedSpend, SharedSpendGate
from harness.running.runner import (
    ResumePoint,
    Session,
    campaign_started,
    check_plan_has_cases,
    install_stop_handlers,
    load_resume_point,
    updated_config,
    waves_in_log,
)
from harness.running.worker_ends import join_campaign, record_end
from harness.running.worker_reclaim import run_to_the_end
from harness.store.log import Log, LogLike
from harness.store.open import open_writer
from harness.store.postgres_driver import psycopg
from harness.store.postgres_leases import CaseLeases, reopen_open_cases
from harness.store.postgres_workers import CampaignRunners
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import CampaignAbortedError, HarnessError
from harness.vocabulary.model import Model


@dataclass
class WorkerSummary:
    run: RunSummary
    owner: str
    taken_over: int  # cases continued from another worker's part of the log
    finished: bool  # this worker recorded CampaignFinished
    claims: int = 0  # case claims this worker sent (granted or not)


async def _renew(
    leases: CaseLeases, spend: SharedSpend, runners: CampaignRunners, engine: Engine
) -> bool:
    """Renew every ttl/3; a worker that cannot reach the database stops taking cases
    (and returns True: it lost the database, like a crash it records no end)."""
    while True:
        await asyncio.sleep(leases.ttl_s / 3)
        try:
            await leases.renew()
            await spend.renew()
            await runners.renew()
        except (HarnessError, psycopg.Error) as exc:
            engine.request_stop(f"lost the database: {exc}")
            return True


async def run_worker(
    db: LogLike,
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
    CampaignResumed) serve ``harness resume``, which runs on PostgreSQL as one worker.
    Models in batch mode send the steps of the cases this worker holds in its own
    batches (docs/scale-out.md)."""
    db = Log.at(db)
    db.postgres("workers", field="DB_URL")  # refused on a SQLite log, before any read
    point = point if point is not None else load_resume_point(db, campaign)
    updates = dict(config_updates or {})
    config = plan.config if plan is not None else updated_config(point.config, updates)
    plan = plan if plan is not None else Plan(config)
    session = Session.build(config, overrides, spent_usd=point.spent_usd)
    session.attach(progress)
    leases = await db.leases(point.campaign, ttl_s=lease_s, had_events=set(point.open_cases))
    runners = leases.runners(lease_s)
    if announce:  # resume: what the log says is open is open, whatever the leases say
        await reopen_open_cases(leases, sorted(point.open_cases))
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
    try:
        async with await open_writer(db, create=False) as store:
            # A case's lease is marked done in the commit of its CaseClosed (one commit less
            # a case).
            leases.release_closed_in(store)
            await join_campaign(store, leases, runners, point, db, updates, announce)
            if session.batch_clients:
                # Its batches re-attach to the waves the log knows, whoever queued them, and
                # to those other workers queue later for cases this one takes over.
                async def refresh() -> dict[str, KnownWave]:
                    return await asyncio.to_thread(waves_in_log, db, point.campaign)

                session.use_batches(
                    config,
                    store,
                    point.campaign,
                    await refresh(),
                    owner=leases.owner,
                    refresh=refresh,
                    live_owners=runners.live_owners,
                )
            for name, gate in list(session.gates.items()):
                if isinstance(gate, VendorGate | BatchGate) and gate.price is not None:
                    session.gates[name] = SharedSpendGate(gate, spend)
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
                install_stop_handlers(engine.signal_stop, grace_s=config.limits.stop_grace_s)
            renewer = asyncio.create_task(
                _renew(leases, spend, runners, engine), name="lease-renewal"
            )
            aborted: CampaignAbortedError | None = None
            try:
                poll_s = max(0.05, min(1.0, lease_s / 10))
                summary = await run_to_the_end(engine, leases, plan, poll_s=poll_s)
            except CampaignAbortedError as exc:
                aborted, summary = exc, engine.summary
            finally:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer
                await session.aclose()
            lost = renewer.done() and not renewer.cancelled() and renewer.result()
            finished = False
            if not lost:
                # The cases this process gives up go to the others before its end is judged.
                held = sorted(leases.held)
                await asyncio.gather(*(leases.release(c, closed=False) for c in held))
                finished = await record_end(store, leases, runners, plan.total_cases, db, summary)
            if aborted is not None:
                raise aborted
    finally:
        with contextlib.suppress(psycopg.Error):
            await runners.leave()
        await spend.close()
        await shared.close()
        await leases.close()
    return WorkerSummary(summary, leases.owner, leases.taken_over, finished, leases.claims_sent)


async def resume_with_leases(
    db: LogLike,
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


async def start_campaign(config: CampaignConfig, db: LogLike, plan: Plan) -> str:
    """Record a new campaign in the PostgreSQL log ``db`` for workers to run; its id."""
    check_plan_has_cases(plan)
    campaign_id = uuid.uuid4().hex[:12]
    async with await open_writer(db) as store:
        started = campaign_started(config, plan.total_cases)
        await store.append([PendingEvent(campaign_id, "", 1, started)])
    return campaign_id


def spawn_workers(
    db: LogLike, campaign: str, count: int, lease_s: float
) -> list[subprocess.Popen[bytes]]:
    """``count`` more ``harness worker`` processes on this machine (each its own core).
    A password in ``db`` goes to them in their environment (PGPASSWORD), never on their
    command line, which any user of the machine can list."""
    target = Log.at(db).postgres("workers")
    env = dict(os.environ)
    if target.secrets:
        env["PGPASSWORD"] = target.secrets[0]
    argv = [sys.executable, "-c", "from harness.cli import main; main()", "worker"]
    argv += [target.shown if target.secrets else target.url, "--campaign", campaign]
    argv += ["--lease", str(lease_s)]
    return [
        subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(count)
    ]
