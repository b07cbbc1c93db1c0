"""A worker runs the campaign to its end, not just its own walk of the plan: cases given
back behind it are taken up again (`run_to_the_end`).

Every worker walks the whole plan once and claims each case it passes. A case another
worker gives back (it stopped, aborted, or lost its lease) is claimable again, but a worker
whose walk has already passed it would never see it, and the campaign would never end. So
after its walk a worker asks the leases for open cases nobody holds and runs them (each
continued from the log, as a takeover is), and while other workers hold open cases it
waits for them to close or come back. It leaves when no open case is left anywhere, or
when it is told to stop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

from harness.running.engine import Engine, RunSummary
from harness.running.plan import Plan
from harness.store.postgres_leases import CaseLeases
from harness.vocabulary.relation import Case, Relation


class GivenBackCases(Plan):
    """The part of a plan a worker runs after its walk: the cases with the given ids."""

    def __init__(self, plan: Plan, case_ids: list[str]) -> None:
        # The plan's relations as they are (built once); only the walk differs.
        self.config = plan.config
        self.relations = plan.relations
        self._plan = plan
        self._case_ids = case_ids

    def cases_for(
        self, model: str, skip: Callable[[str], bool] | None = None
    ) -> Iterator[tuple[Case, Relation]]:
        """The given-back cases of ``model``. ``skip`` (closed when this worker started) is
        not applied: a case closed whose lease was never marked done (its worker died in
        between) must be claimed to be marked done, and the claim's fold sees it closed."""
        for case_id in self._case_ids:
            if not case_id.endswith(f"@{model}"):
                continue
            found = self._plan.case(case_id)
            if found is not None and found[0].model == model:
                yield found


async def run_to_the_end(
    engine: Engine, leases: CaseLeases, plan: Plan, *, poll_s: float
) -> RunSummary:
    """Walk the plan, then take up given-back cases until none is open anywhere (or this
    worker is stopped); the run's summary over all of it."""
    started = time.monotonic()
    summary = await engine.run()
    while summary.status == "completed":
        if engine.stopping:
            # Stopped while waiting for other workers' cases: one more (empty) run records
            # the stop and its reason in the summary, as a stop during the walk does.
            engine.plan = GivenBackCases(plan, [])
            summary = await engine.run()
            break
        # Cases this worker claimed but never ran go back first, so they are taken below.
        held = sorted(leases.held)
        await asyncio.gather(*(leases.release(c, closed=False) for c in held))
        # Ids outside this worker's plan (none, with one campaign config) are left alone.
        # A case this worker left failed, retryable is not taken up again by it: resending
        # it at once would only meet the same outage (a later run or resume retries it).
        given_back = [
            c
            for c in await leases.given_back()
            if plan.case(c) is not None and not engine.left_retryable(c)
        ]
        if given_back:
            engine.plan = GivenBackCases(plan, given_back)
            summary = await engine.run()
            continue
        if not await leases.held_elsewhere():
            break
        await asyncio.sleep(poll_s)
    summary.elapsed_s = time.monotonic() - started
    return summary
