"""Issue 36: workers claim disjoint slices of the plan instead of racing for every case;
a slice a worker dies in is taken over, no case runs twice, and every case closes."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import psycopg
import pytest

from harness.plugins.registry import Family, register_family
from harness.running import worker_reclaim
from harness.running.plan import Plan
from harness.running.worker import run_worker, start_campaign
from harness.running.worker_reclaim import slice_cases, slice_of
from harness.store.log import Log
from harness.store.open import open_reader
from harness.store.postgres_leases import MARK_EVERY
from harness.testing import FakeModel
from harness.vocabulary.model import Message
from harness.vocabulary.relation import Ask, Case, Outcome, RelationBase, Transcript, Verdict

MODEL = "sim:fake"


class _One(RelationBase):
    """One ask naming its case, then HELD."""

    name: ClassVar[str] = "slices.one"
    family: ClassVar[str] = "slices"
    summary: ClassVar[str] = "test relation: one ask"

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if transcript.turns:
            return Verdict(outcome=Outcome.HELD, reason="answered")
        return [Ask(thread="t", prompt=f"{case.case_id}")]


register_family(Family(name="slices", summary="test relations", relations=(_One,)), origin=__name__)


def _name(case_id: str) -> str:
    found = slice_of(case_id)
    assert found is not None
    return f"{found[0]}/{found[1]}"


def counting_model(answered: Counter[str]) -> FakeModel:
    async def answer(messages: Sequence[Message]) -> str:
        await asyncio.sleep(0.002)
        answered[messages[-1].content] += 1
        return "ok"

    return FakeModel(answer, name=MODEL)


def _closed(url: str, campaign: str) -> int:
    with open_reader(url) as log:
        return len(set(log.case_ids(campaign, kind="CaseClosed")))


async def _slices(url: str, campaign: str) -> dict[str, bool]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT slice, walked FROM lease_slices WHERE campaign = %s", (campaign,)
        )
        return {part: walked for part, walked in await cur.fetchall()}


@pytest.fixture(autouse=True)
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of 8 indices, so these small campaigns have many."""
    monkeypatch.setattr(worker_reclaim, "SLICE_INDICES", 8)


def test_a_slice_holds_consecutive_indices_of_one_relation_and_model(make_campaign: Any) -> None:
    config = make_campaign(("slices.one", 20, {}), model=MODEL, repeats=2)
    plan = Plan(config)
    every = [case.case_id for case, _ in plan.cases_for(MODEL)]
    parts = Counter(_name(c) for c in every)
    assert sorted(parts.values()) == [
        8,
        2 * worker_reclaim.SLICE_INDICES,
        2 * worker_reclaim.SLICE_INDICES,
    ]
    # Each slice's cases, listed from its name, are exactly those the walk assigns to it.
    for part in parts:
        assert part is not None
        assert sorted(slice_cases(plan, part)) == sorted(c for c in every if _name(c) == part)
    assert slice_of("not a case") is None
    assert slice_cases(plan, f"other.relation@{MODEL}/0") == []
    # The walk meets a lane's blocks in increasing order (what marks a slice passed).
    blocks = [found[1] for c in every if (found := slice_of(c)) is not None]
    assert blocks == sorted(blocks)


async def test_workers_claim_disjoint_slices_and_close_every_case_once(
    make_campaign: Any, pg_url: str
) -> None:
    cases, workers = 400, 3
    config = make_campaign(("slices.one", cases, {}), model=MODEL, max_in_flight=8)
    campaign = await start_campaign(config, pg_url, Plan(config))
    answered: Counter[str] = Counter()
    done = await asyncio.gather(
        *(
            run_worker(
                pg_url, campaign=campaign, lease_s=10, overrides={MODEL: counting_model(answered)}
            )
            for _ in range(workers)
        )
    )
    assert _closed(pg_url, campaign) == cases
    assert len(answered) == cases and max(answered.values()) == 1  # no case run twice
    assert sum(d.finished for d in done) == 1
    assert all((await _slices(pg_url, campaign)).values())  # every slice walked
    # Before slices every worker claimed every case it met: about workers x cases claims.
    # Now each case is claimed once, plus at most the cases of the other workers' live
    # slices (their current one and those passed but not yet marked walked) when a walk ends.
    tail = workers * (workers - 1) * (MARK_EVERY + 1) * worker_reclaim.SLICE_INDICES
    assert sum(d.claims for d in done) <= cases + tail, [d.claims for d in done]


async def test_a_dead_workers_slice_is_taken_over_and_every_case_closes(
    make_campaign: Any, pg_url: str
) -> None:
    cases = 40
    config = make_campaign(("slices.one", cases, {}), model=MODEL, max_in_flight=4)
    campaign = await start_campaign(config, pg_url, Plan(config))
    # A worker claims the first slice and one case of it, then dies: it never releases
    # anything, its leases lapse.
    ghost = await Log.at(pg_url).leases(campaign, ttl_s=2.0)
    ghost.slice_of, ghost.walking = slice_of, True
    first = next(iter(Plan(config).cases_for(MODEL)))[0].case_id
    assert (await ghost.claim(first))[0] is True
    for conn in ghost._conns:
        await conn.close()
    # Another worker sees the slice held (live) and, later, lapsed.
    other = await Log.at(pg_url).leases(campaign, ttl_s=2.0)
    try:
        part = _name(first)
        assert await other.slices_elsewhere() == [part]
        assert await other.held_elsewhere()
        other.slice_of, other.walking = slice_of, True
        assert await other.claim(first) == (False, None)
        assert other.claims_sent == 0  # refused by its slice, without a claim
        await asyncio.sleep(2.2)
        assert await other.lapsed_slices() == [part]
        assert await other.lapsed_slices() == []  # taken over: now other's
    finally:
        await other.close()  # gives the slice back, unwalked
    answered: Counter[str] = Counter()
    done = await asyncio.wait_for(
        run_worker(
            pg_url, campaign=campaign, lease_s=2, overrides={MODEL: counting_model(answered)}
        ),
        timeout=120,
    )
    assert _closed(pg_url, campaign) == cases
    assert len(answered) == cases and max(answered.values()) == 1
    assert done.finished and done.run.status == "completed"
    assert all((await _slices(pg_url, campaign)).values())
