"""How a campaign run by workers ends and resumes on PostgreSQL: a worker that aborts
records the campaign's end as one process does (CampaignFinished aborted, with its reason)
when it is the last process running the campaign, and records nothing while others still
run it; ``harness resume`` takes leases as a worker does, so it may run beside workers
without sending any call twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, ClassVar

import pytest

from harness.plugins.registry import Family, register_family
from harness.running.plan import Plan
from harness.running.worker import resume_with_leases, run_worker, start_campaign
from harness.store.open import open_reader
from harness.testing import FakeModel
from harness.vocabulary.errors import AuthenticationError, CampaignAbortedError
from harness.vocabulary.relation import Ask, Case, Outcome, RelationBase, Transcript, Verdict

MODEL = "sim:fake"
SECRET = "sk-abcdefghijklmnop"


class _Pair(RelationBase):
    """Two asks in one thread, each prompt naming its case and turn (so a call sent twice
    is seen by the model), then HELD."""

    name: ClassVar[str] = "workerend.pair"
    family: ClassVar[str] = "workerend"
    summary: ClassVar[str] = "test relation: two asks in one thread"

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if transcript.first_error() is not None:
            return Verdict(outcome=Outcome.INVALID, reason="call failed")
        if len(transcript.turns) >= 2:
            return Verdict(outcome=Outcome.HELD, reason="both answered")
        return [Ask(thread="t", prompt=f"case {case.index} turn {len(transcript.turns)}")]


register_family(
    Family(name="workerend", summary="test relations", relations=(_Pair,)), origin=__name__
)


def counting_model(
    sent: Counter[str], delay: float = 0.02, error: BaseException | None = None
) -> FakeModel:
    """Answers "[]" after ``delay``; counts every prompt it is sent in ``sent`` (shared
    between the workers' models); fails every call with ``error`` when given."""
    return FakeModel(
        lambda messages: error if error is not None else "[]",
        name=MODEL,
        delay=delay,
        on_call=lambda messages, params: sent.update([messages[-1].content]),
    )


def _ends(url: str) -> list[tuple[str, str, str]]:
    """The campaign-level events after CampaignStarted: (kind, status, reason)."""
    with open_reader(url) as log:
        return [
            (s.event.kind, getattr(s.event, "status", ""), getattr(s.event, "reason", ""))
            for s in log.events(kinds=("CampaignFinished", "CampaignResumed"))
        ]


async def _start(make_campaign: Any, url: str, cases: int) -> str:
    config = make_campaign(("workerend.pair", cases, {}), model=MODEL, max_in_flight=4)
    return await start_campaign(config, url, Plan(config))


async def test_a_worker_alone_that_aborts_records_the_campaigns_end(
    make_campaign: Any, pg_url: str
) -> None:
    campaign = await _start(make_campaign, pg_url, 12)
    failing = counting_model(Counter(), error=AuthenticationError(f"bad key {SECRET}"))
    with pytest.raises(CampaignAbortedError):
        await run_worker(pg_url, campaign=campaign, lease_s=5, overrides={MODEL: failing})
    [(kind, status, reason)] = _ends(pg_url)
    assert (kind, status) == ("CampaignFinished", "aborted")
    assert "authentication" in reason.lower() or "bad key" in reason
    assert SECRET not in reason
    # A worker started later continues the campaign as resume does, and completes it.
    sent: Counter[str] = Counter()
    done = await run_worker(pg_url, campaign=campaign, lease_s=5,
                            overrides={MODEL: counting_model(sent)})  # fmt: skip
    assert done.finished and done.run.status == "completed"
    assert [k for k, _, _ in _ends(pg_url)] == [
        "CampaignFinished",
        "CampaignResumed",
        "CampaignFinished",
    ]
    assert _ends(pg_url)[-1][1] == "completed"
    assert max(sent.values()) == 1


async def test_a_worker_that_aborts_beside_a_running_one_leaves_the_end_to_it(
    make_campaign: Any, pg_url: str
) -> None:
    campaign = await _start(make_campaign, pg_url, 80)  # 2 s of calls at least
    sent: Counter[str] = Counter()
    slow = counting_model(sent, delay=0.05)
    healthy = asyncio.create_task(
        run_worker(pg_url, campaign=campaign, lease_s=5, overrides={MODEL: slow})
    )
    while not sent:  # the healthy worker is running cases
        await asyncio.sleep(0.01)
    failing = counting_model(Counter(), error=AuthenticationError("bad key"))
    with pytest.raises(CampaignAbortedError):
        await run_worker(pg_url, campaign=campaign, lease_s=5, overrides={MODEL: failing})
    assert _ends(pg_url) == []  # the other worker still runs the campaign: no end yet
    assert not healthy.done()
    first = await healthy
    assert first.run.status == "completed"  # the abort did not stop the other worker
    # The cases the aborted worker gave up, even those the healthy one had walked past,
    # are closed by the healthy one, which records the campaign's one end (issue 15).
    assert first.finished
    assert _ends(pg_url) == [("CampaignFinished", "completed", "")]


async def test_resume_beside_a_worker_never_sends_a_call_twice(
    make_campaign: Any, pg_url: str
) -> None:
    campaign = await _start(make_campaign, pg_url, 40)
    sent: Counter[str] = Counter()
    by_worker, by_resume = counting_model(sent), counting_model(sent)
    worker = asyncio.create_task(
        run_worker(pg_url, campaign=campaign, lease_s=5, overrides={MODEL: by_worker})
    )
    while not sent:
        await asyncio.sleep(0.01)
    resumed = await resume_with_leases(pg_url, campaign=campaign, overrides={MODEL: by_resume})
    done = await worker
    assert resumed.status == done.run.status == "completed"
    assert len(sent) == 80 and max(sent.values()) == 1  # every call sent once, no more
    assert by_worker.calls > 0 and by_resume.calls > 0  # both ran cases
    assert [k for k, _, _ in _ends(pg_url)] == ["CampaignResumed", "CampaignFinished"]
    with open_reader(pg_url) as log:
        assert len(set(log.case_ids(campaign, kind="CaseClosed"))) == 40
