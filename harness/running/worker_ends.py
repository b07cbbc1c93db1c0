"""How a process joins a campaign run by workers on PostgreSQL and how the campaign's end
is recorded (`harness.running.worker`, and ``harness resume`` on PostgreSQL, which is one worker).

The end is judged under one advisory lock, so a process joining and one leaving never
cross: completed when every planned case is closed (whoever sees it last); stopped or
aborted, as one process records it, when the leaving process stopped or aborted and no
other process runs the campaign (`CampaignRunners`). A process that joins a campaign whose
last recorded event is an end short of completion records CampaignResumed first.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.models.providers import campaign_endpoints
from harness.running.engine import RunSummary
from harness.running.runner import (
    ResumePoint,
    code_version,
    recordable_overrides,
    updated_config,
)
from harness.store.log import LogLike
from harness.store.open import open_reader
from harness.store.postgres_leases import CaseLeases
from harness.store.postgres_workers import CampaignRunners
from harness.store.protocol import EventSink
from harness.store.writer import PendingEvent
from harness.vocabulary.events import CampaignFinished, CampaignResumed


async def join_campaign(
    store: EventSink,
    leases: CaseLeases,
    runners: CampaignRunners,
    point: ResumePoint,
    db: LogLike,
    updates: Mapping[str, object],
    announce: bool,
) -> None:
    """Count this process among the campaign's runners; record CampaignResumed when the
    log says the campaign ended short of completion (or always, with ``announce``)."""
    async with leases.finish_lock():
        await runners.join()
        with open_reader(db) as log:
            _, last, status = log.closing_state(point.campaign)
        if not announce and (last != "CampaignFinished" or status == "completed"):
            return
        in_flight = sum(1 for s in point.open_cases.values() for t in s.open_turns() if t.in_flight)
        resumed = CampaignResumed(
            code_version=code_version(),
            open_cases=len(point.open_cases),
            in_flight_resent=in_flight,
            config_overrides=recordable_overrides(updates),
            endpoints=campaign_endpoints(updated_config(point.config, updates)),
        )
        seq = await store.next_seq(point.campaign, "")
        await store.append([PendingEvent(point.campaign, "", seq, resumed)])


async def record_end(
    store: EventSink,
    leases: CaseLeases,
    runners: CampaignRunners,
    planned: int,
    db: LogLike,
    summary: RunSummary,
) -> bool:
    """Record CampaignFinished if the campaign ended with this process: completed when
    every planned case is closed (whoever sees it last); else, when no other process is
    running the campaign (the others go on, and the last to leave records the end),
    stopped or aborted as this process did, or unfinished (cases left open, failed,
    retryable). True if recorded."""
    campaign = leases.campaign
    async with leases.finish_lock():
        with open_reader(db) as log:
            closed, last, _ = log.closing_state(campaign)
        if last == "CampaignFinished":
            return False  # recorded already, and nobody joined since
        if closed >= planned:
            ended = CampaignFinished(status="completed", reason="", cases_closed=closed)
        elif not await runners.others_running():
            # The last to leave, with cases still open: a run that went to its end left
            # them failed, retryable (CampaignFinished v2 "unfinished"), or it stopped or
            # aborted.
            status = summary.status if summary.status in ("stopped", "aborted") else "unfinished"
            reason = summary.reason or f"{planned - closed} planned cases not closed"
            ended = CampaignFinished(
                status=status,  # type: ignore[arg-type]
                reason=reason,
                cases_closed=closed,
            )
        else:
            return False
        seq = await store.next_seq(campaign, "")
        await store.append([PendingEvent(campaign, "", seq, ended)])
        return True
