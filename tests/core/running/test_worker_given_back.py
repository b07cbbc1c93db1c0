"""Issue 15: cases a worker gives back after another worker's plan walk has passed them are
taken up by that other worker, which then ends the campaign (before, nobody picked them up
and the campaign never finished)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from harness.plugins.registry import Family, register_family
from harness.running.plan import Plan
from harness.running.worker import run_worker, start_campaign
from harness.store.open import open_reader
from harness.testing import FakeModel
from harness.vocabulary.errors import AuthenticationError, CampaignAbortedError, ServerError
from harness.vocabulary.model import Message
from harness.vocabulary.relation import Ask, Case, Outcome, RelationBase, Transcript, Verdict

MODEL = "sim:fake"
CASES = 20
IN_FLIGHT = 4


class _Pair(RelationBase):
    """Two asks in one thread, each prompt naming its case and turn, then HELD."""

    name: ClassVar[str] = "givenback.pair"
    family: ClassVar[str] = "givenback"
    summary: ClassVar[str] = "test relation: two asks in one thread"

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if len(transcript.turns) >= 2:
            return Verdict(outcome=Outcome.HELD, reason="both answered")
        return [Ask(thread="t", prompt=f"case {case.index} turn {len(transcript.turns)}")]


register_family(
    Family(name="givenback", summary="test relations", relations=(_Pair,)), origin=__name__
)


def answering_model(
    answered: Counter[str],
    hold: asyncio.Event | None = None,
    failing: frozenset[str] = frozenset(),
) -> FakeModel:
    """Counts the prompts it answers in ``answered``. With ``hold``, every call waits for
    it and then fails with an authentication error (the worker aborts and gives its cases
    back); ``failing`` prompts fail with a 500 each time."""

    async def answer(messages: Sequence[Message]) -> str | BaseException:
        if hold is not None:
            await hold.wait()
            return AuthenticationError("the key was revoked")
        if messages[-1].content in failing:
            return ServerError("HTTP 500: down", status=500)
        await asyncio.sleep(0.005)
        answered[messages[-1].content] += 1
        return "ok"

    return FakeModel(answer, name=MODEL)


def _closed_and_ends(url: str, campaign: str) -> tuple[int, list[tuple[str, str]]]:
    with open_reader(url) as log:
        closed = len(set(log.case_ids(campaign, kind="CaseClosed")))
        ends = [
            (s.event.kind, getattr(s.event, "status", ""))
            for s in log.events(kinds=("CampaignFinished",))
        ]
    return closed, ends


async def test_cases_given_back_behind_a_workers_walk_are_taken_up(
    make_campaign: Any, pg_url: str
) -> None:
    config = make_campaign(("givenback.pair", CASES, {}), model=MODEL, max_in_flight=IN_FLIGHT)
    campaign = await start_campaign(config, pg_url, Plan(config))
    # Worker B takes the first cases of the plan and holds them: its calls hang.
    hold = asyncio.Event()
    stuck = answering_model(Counter(), hold)
    b = asyncio.create_task(
        run_worker(pg_url, campaign=campaign, lease_s=5, overrides={MODEL: stuck})
    )
    while stuck.in_flight < IN_FLIGHT:
        await asyncio.sleep(0.01)
    # Worker A walks the whole plan past B's cases and runs every other case.
    answered: Counter[str] = Counter()
    a = asyncio.create_task(
        run_worker(
            pg_url, campaign=campaign, lease_s=5, overrides={MODEL: answering_model(answered)}
        )
    )
    while len(answered) < 2 * (CASES - IN_FLIGHT):
        assert not a.done(), a
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # A's walk is over: its case workers found no case left
    # Now B gives its cases back (it aborts; A still runs, so B records no end).
    hold.set()
    with pytest.raises(CampaignAbortedError):
        await b
    done = await asyncio.wait_for(a, timeout=60)
    closed, ends = _closed_and_ends(pg_url, campaign)
    assert closed == CASES
    assert done.finished and done.run.status == "completed"
    assert ends == [("CampaignFinished", "completed")]
    assert max(answered.values()) == 1  # no call answered twice


def test_a_planned_case_is_found_by_its_id(make_campaign: Any) -> None:
    # A worker takes up given-back cases by id: each id gives the case the walk gives.
    config = make_campaign(("givenback.pair", 5, {}), model=MODEL, repeats=2)
    plan = Plan(config)
    walked = list(plan.all_cases())
    assert len(walked) == 10
    for case, relation in walked:
        assert plan.case(case.case_id) == (case, relation)
    for outside in (
        f"givenback.pair/5/r0@{MODEL}",  # past the relation's cases
        f"givenback.pair/1/r2@{MODEL}",  # past the repeats
        f"givenback.pair/01/r0@{MODEL}",  # not the id's spelling
        "givenback.pair/1/r0@sim:other",  # another model
        f"other.relation/1/r0@{MODEL}",
        "garbage",
    ):
        assert plan.case(outside) is None, outside


async def test_a_suspended_case_on_postgresql_stays_open_and_is_counted(
    make_campaign: Any, pg_url: str
) -> None:
    # Issue 32 on PostgreSQL: a case whose transient failures outlast max_attempts is given
    # back open (not closed, not INVALID), counted as failed, retryable by the status, and a
    # later worker answers it.
    from harness.reporting.campaign_status import campaign_status

    config = make_campaign(
        ("givenback.pair", 4, {}), model=MODEL, max_in_flight=2, limits={"max_attempts": 2}
    )
    campaign = await start_campaign(config, pg_url, Plan(config))
    answered: Counter[str] = Counter()
    flaky = answering_model(answered, failing=frozenset({"case 2 turn 1"}))
    first = await run_worker(pg_url, campaign=campaign, lease_s=5, overrides={MODEL: flaky})
    assert first.run.retryable == 1 and first.run.cases_closed == 3
    with open_reader(pg_url) as log:
        status = campaign_status(log, campaign)
    assert status.retryable == 1 and status.status == "unfinished", status
    # The last worker to leave records it so (CampaignFinished v2), not "completed".
    assert first.finished and _closed_and_ends(pg_url, campaign)[1] == [
        ("CampaignFinished", "unfinished")
    ]
    second = await run_worker(
        pg_url, campaign=campaign, lease_s=5, overrides={MODEL: answering_model(answered)}
    )
    assert second.run.cases_closed == 1
    closed, ends = _closed_and_ends(pg_url, campaign)
    assert closed == 4 and max(answered.values()) == 1
    assert ends == [("CampaignFinished", "unfinished"), ("CampaignFinished", "completed")]
    with open_reader(pg_url) as log:
        assert campaign_status(log, campaign).retryable == 0
