"""A worker: one process running the cases of a campaign stored in PostgreSQL, beside any
number of others, on this machine or others (docs/scale-out.md).

Each worker folds the log once at start (the closed cases are never generated), then walks
the campaign's plan and runs only the cases it leases (`harness.store.postgres_leases`),
renewing its leases while it runs. A case another worker began is continued from the log
exactly as ``harness resume`` continues it. When every planned case is closed, the worker
that sees it last records CampaignFinished, once.
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

from harness.campaign import CampaignConfig
from harness.engine import AnswerCache, Engine, ProgressSink, RunSummary
from harness.errors import ConfigError, HarnessError
from harness.events import CampaignFinished
from harness.model import Model
from harness.plan import Plan
from harness.providers import VendorGate
from harness.runner import (
    Session,
    campaign_started,
    check_plan_has_cases,
    install_stop_handlers,
    load_resume_point,
)
from harness.store.open import is_postgres_url, open_reader, open_writer
from harness.store.postgres_budgets import SharedBudgets
from harness.store.postgres_leases import CaseLeases
from harness.store.postgres_spend import SharedSpend, SharedSpendGate
from harness.store.postgres_url import PostgresUrl
from harness.store.protocol import EventSink
from harness.store.writer import PendingEvent

FINISH_LOCK = 0x6268_0003  # one worker at a time checks and records the campaign's end


@dataclass
class WorkerSummary:
    run: RunSummary
    owner: str
    taken_over: int  # cases continued from another worker's part of the log
    finished: bool  # this worker recorded CampaignFinished


async def _renew(leases: CaseLeases, spend: SharedSpend, engine: Engine) -> None:
    """Renew every ttl/3; a worker that cannot reach the database stops taking cases."""
    while True:
        await asyncio.sleep(leases.ttl_s / 3)
        try:
            await leases.renew()
            await spend.renew()
        except HarnessError as exc:
            engine.request_stop(f"lost the database: {exc}")
            return


async def _finish_if_complete(
    store: EventSink, leases: CaseLeases, campaign: str, planned: int, db: str
) -> bool:
    conn = leases._conn
    await conn.execute("SELECT pg_advisory_lock(%s)", (FINISH_LOCK,))
    try:
        with open_reader(db) as log:
            closed = log.connection.execute(
                "SELECT count(DISTINCT case_id) FROM events WHERE campaign = ?"
                " AND kind = 'CaseClosed'",
                (campaign,),
            ).fetchone()[0]
            last = log.connection.execute(
                "SELECT kind FROM events WHERE campaign = ? AND case_id = ''"
                " ORDER BY seq DESC LIMIT 1",
                (campaign,),
            ).fetchone()
        if closed < planned or (last is not None and last[0] == "CampaignFinished"):
            return False
        seq = await store.next_seq(campaign, "")
        ended = CampaignFinished(status="completed", reason="", cases_closed=int(closed))
        await store.append([PendingEvent(campaign, "", seq, ended)])
        return True
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (FINISH_LOCK,))


async def run_worker(
    db: str,
    *,
    campaign: str | None = None,
    lease_s: float = 30.0,
    progress: ProgressSink | None = None,
    overrides: Mapping[str, Model] | None = None,
    cache: AnswerCache | None = None,
    handle_signals: bool = False,
) -> WorkerSummary:
    """Run cases of ``campaign`` (default: the latest) of the PostgreSQL log ``db`` until
    none is left to lease."""
    if not is_postgres_url(db):
        raise ConfigError(
            "workers share a campaign through a PostgreSQL database",
            field="DB_URL",
            fix="give a postgresql:// URL (copy a SQLite log there with 'harness copy')",
        )
    point = load_resume_point(db, campaign)
    plan = Plan(point.config)
    session = Session.build(point.config, overrides, spent_usd=point.spent_usd)
    session.attach(progress)
    leases = await CaseLeases.open(
        db, point.campaign, ttl_s=lease_s, had_events=set(point.open_cases)
    )
    # Requests and tokens per window hold for all workers together, not for each.
    shared = await SharedBudgets.share(db, point.campaign, session.budgets.gates)
    # ... and so does the spending ceiling: every worker's calls count against it.
    spend = await SharedSpend.open(
        db,
        point.campaign,
        leases.owner,
        ceiling_usd=point.config.limits.spend_ceiling_usd,
        spent_in_log=point.spent_usd,
        ttl_s=lease_s,
    )
    for name, gate in list(session.gates.items()):
        if isinstance(gate, VendorGate) and gate.price is not None:
            session.gates[name] = SharedSpendGate(gate, spend)
    try:
        async with await open_writer(db, create=False) as store:
            engine = Engine(
                store,
                point.config,
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
            renewer = asyncio.create_task(_renew(leases, spend, engine), name="lease-renewal")
            try:
                summary = await engine.run()
            finally:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer
                await session.aclose()
            finished = False
            if summary.status == "completed":
                finished = await _finish_if_complete(
                    store, leases, point.campaign, plan.total_cases, db
                )
    finally:
        await spend.close()
        await shared.close()
        await leases.close()
    return WorkerSummary(summary, leases.owner, leases.taken_over, finished)


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
