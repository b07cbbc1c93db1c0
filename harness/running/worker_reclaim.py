"""A worker runs the campaign to its end, not just its own walk of the plan: cases given
back behind it are taken up again (`run_to_the_end`).

Every worker walks the whole plan once, but claims only the cases of the slices it wins
(`slice_of`: a few consecutive indices of one relation for one model, claimed when the walk
first meets one of their cases), so workers do not race for the same cases. A case another
worker gives back (it stopped, aborted, or lost its lease) is claimable again, and a slice a
worker stopped or died in is claimable again; a worker whose walk has already passed them
would never see them, and the campaign would never end. So after its walk a worker asks the
leases for open cases nobody holds and for lapsed slices, and runs them (each case continued
from the log, as a takeover is); it also claims, case by case, what other workers' live
slices have not claimed yet (a slow worker's slice is not left to it alone). While other
workers hold open cases or slices it waits for them to close or come back. It leaves when
no open case is left anywhere, or when it is told to stop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

from harness.running.engine import Engine, RunSummary
from harness.running.plan import Plan, case_id_for
from harness.store.postgres_leases import CaseLeases
from harness.vocabulary.relation import Case, Relation

# Indices of one relation a slice holds (each with all its repeats): a slice claim is a
# write of its own (a WAL flush), so at 8 a slice the claims added 0.125 flushes a call
# (bench/RESULTS.md); the tail of a campaign, where one worker's last slice may be left to
# it, is covered by the others claiming what its live slices have not claimed yet.
SLICE_INDICES = 32


def slice_of(case_id: str) -> tuple[str, int] | None:
    """The slice of a planned case's id (`case_id_for`) as (lane, block): the lane is
    ``relation@model``, the block the index over `SLICE_INDICES` (the walk meets a lane's
    blocks in increasing order); None for an id that is not a planned case's. The slice is
    named ``lane/block``."""
    name, _, rest = case_id.partition("/")
    index_text, _, rest = rest.partition("/r")
    _, at, model = rest.partition("@")
    if not (index_text.isdigit() and at):
        return None
    return f"{name}@{model}", int(index_text) // SLICE_INDICES


def slice_cases(plan: Plan, part: str) -> list[str]:
    """The ids of the planned cases of slice ``part`` (none when it is not the plan's)."""
    lane, _, block_text = part.rpartition("/")
    name, _, model = lane.partition("@")
    if not block_text.isdigit() or model not in {spec.name for spec in plan.config.models}:
        return []
    counts = {relation: count for relation, _, count in plan.relations}
    if name not in counts:
        return []
    first = int(block_text) * SLICE_INDICES
    return [
        case_id_for(name, index, repeat, model)
        for index in range(first, min(first + SLICE_INDICES, counts[name]))
        for repeat in range(plan.config.repeats)
    ]


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
    leases.slice_of = slice_of
    leases.walking = True
    try:
        summary = await engine.run()
    finally:
        leases.walking = False
    stolen: set[str] = set()  # other workers' live slices this worker claimed cases of
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
        # The walk went past every slice this worker holds (its own, or taken over below).
        await leases.walked()
        # Ids outside this worker's plan (none, with one campaign config) are left alone.
        # A case this worker left failed, retryable is not taken up again by it: resending
        # it at once would only meet the same outage (a later run or resume retries it).
        found = await leases.given_back()
        for part in await leases.lapsed_slices():
            found.extend(slice_cases(plan, part))
        # A slow worker's slice: its cases not claimed yet are claimed here, once a slice
        # (the worker that holds it refuses nothing it has not claimed).
        elsewhere = [part for part in await leases.slices_elsewhere() if part not in stolen]
        stolen.update(elsewhere)
        for part in elsewhere:
            found.extend(slice_cases(plan, part))
        given_back = [
            c
            for c in dict.fromkeys(found)
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
