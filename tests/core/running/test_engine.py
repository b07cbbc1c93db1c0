"""The engine: committed steps, concurrency, limits, retries, failures as data, lazy plans."""

from __future__ import annotations

import asyncio
import itertools
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from harness.cli.exit_codes import ExitCode, campaign_exit_code
from harness.plugins.registry import Family, register_family
from harness.running.campaign import CampaignConfig
from harness.running.plan import Plan
from harness.running.runner import resume_campaign, run_campaign
from harness.store.fold import fold_case
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.testing import FakeModel
from harness.vocabulary.errors import (
    AuthenticationError,
    BadRequestError,
    CampaignAbortedError,
    ModelError,
    RateLimitedError,
)
from harness.vocabulary.events import AskFailed, AskSent, CampaignFinished, ReplyReceived
from harness.vocabulary.model import Message
from harness.vocabulary.relation import (
    Ask,
    Case,
    Outcome,
    RelationBase,
    Transcript,
    Verdict,
)

MODEL = "sim:fake"


# --- relations built for these tests ----------------------------------------------------


class _ChainOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turns: int = 3
    db: str = ""  # when set, each step checks the log for the replies it is given


class _Chain(RelationBase):
    """Asks ``turns`` prompts one after the other in one thread; HELD if every call worked.

    With ``db`` set, every step reads the log through its own connection and returns
    INVALID unless each turn it is shown already has its ReplyReceived committed.
    """

    name: ClassVar[str] = "testkit.chain"
    family: ClassVar[str] = "testkit"
    summary: ClassVar[str] = "test relation: a chain of asks in one thread"
    Options: ClassVar[type[BaseModel]] = _ChainOptions
    options: _ChainOptions

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {"n": index}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if self.options.db and transcript.turns:
            with connect(f"file:{self.options.db}?mode=ro", uri=True) as conn:
                committed = {
                    turn
                    for (turn,) in conn.execute(
                        "SELECT turn FROM events WHERE case_id = ? AND kind = 'ReplyReceived'",
                        (case.case_id,),
                    )
                }
            conn.close()
            missing = [t.index for t in transcript.turns if t.ok and t.index not in committed]
            if missing:
                return Verdict(outcome=Outcome.INVALID, reason=f"uncommitted turns {missing}")
        failed = transcript.first_error()
        if failed is not None:
            return Verdict(outcome=Outcome.INVALID, reason=f"call failed: {failed.error}")
        if len(transcript.turns) >= self.options.turns:
            return Verdict(outcome=Outcome.HELD, reason="all turns answered")
        return [Ask(thread="t", prompt=f"case {case.index} turn {len(transcript.turns)}")]


class _Fanout(RelationBase):
    """One step of three asks in three fresh threads, then a verdict."""

    name: ClassVar[str] = "testkit.fanout"
    family: ClassVar[str] = "testkit"
    summary: ClassVar[str] = "test relation: three concurrent asks"

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if not transcript.turns:
            return [Ask(thread=name, prompt=f"{case.index} {name}") for name in "abc"]
        outcome = Outcome.HELD if all(t.ok for t in transcript.turns) else Outcome.INVALID
        return Verdict(outcome=outcome, reason=f"{len(transcript.turns)} turns")


register_family(
    Family(name="testkit", summary="test relations", relations=(_Chain, _Fanout)),
    origin=__name__,
)


# --- models built for these tests ---------------------------------------------------------


def scripted_model(
    *,
    delay: float = 0.0,
    answer: Callable[[Sequence[Message]], str] = lambda m: "[]",
    fail_first: Sequence[BaseException] = (),
) -> FakeModel:
    """The kit's fake model as these tests use it: answers ``answer(messages)`` ("[]" by
    default); each prompt fails first with ``fail_first``; records calls and concurrency."""
    return FakeModel(answer, name=MODEL, delay=delay, fail_first=fail_first, per_prompt=True)


def config_for(
    make_campaign: Callable[..., CampaignConfig],
    relation: str,
    cases: int,
    options: dict[str, Any] | None = None,
    **kwargs: Any,
) -> CampaignConfig:
    return make_campaign((relation, cases, options or {}), model=MODEL, **kwargs)


def events_of(db: Path, kind: type) -> list[Any]:
    with EventReader(db) as log:
        return [s.event for s in log.events(kinds=(kind.__name__,))]


def verdicts(db: Path) -> list[tuple[str, str]]:
    with connect(db) as conn:
        return conn.execute("SELECT outcome, reason FROM verdicts ORDER BY case_id").fetchall()


# --- tests ------------------------------------------------------------------------------


async def test_each_step_sees_only_committed_turns(make_campaign, db_path: Path) -> None:
    config = config_for(make_campaign, "testkit.chain", 30, {"turns": 4, "db": str(db_path)})
    model = scripted_model(delay=0.001)
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.status == "completed" and summary.cases_closed == 30
    found = verdicts(db_path)
    assert len(found) == 30
    assert {outcome for outcome, _ in found} == {"HELD"}, found[:3]
    assert model.calls == 30 * 4


async def test_asks_of_one_step_run_concurrently(make_campaign, db_path: Path) -> None:
    config = config_for(make_campaign, "testkit.fanout", 1, max_in_flight=8)
    model = scripted_model(delay=0.05)
    await run_campaign(config, db_path, overrides={MODEL: model})
    assert model.calls == 3
    assert model.max_in_flight == 3
    with EventReader(db_path) as log:
        [(_, events)] = list(log.cases(log.latest_campaign()))
    state = fold_case(events)
    assert sorted(t.ask.thread for t in state.turns.values()) == ["a", "b", "c"]
    # Fresh threads: no request carries another thread's history.
    assert all(len(t.sent[0].messages) == 1 for t in state.turns.values())


@pytest.mark.parametrize("limit", [1, 4])
async def test_calls_in_flight_never_exceed_the_model_limit(
    make_campaign, db_path: Path, limit: int
) -> None:
    config = config_for(make_campaign, "testkit.fanout", 20, max_in_flight=limit)
    model = scripted_model(delay=0.005)
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.cases_closed == 20
    assert model.max_in_flight == limit


async def test_a_follow_up_continues_its_thread(make_campaign, db_path: Path) -> None:
    config = config_for(make_campaign, "testkit.chain", 1, {"turns": 3})
    model = scripted_model(answer=lambda m: f"answer {len(m)}")
    await run_campaign(config, db_path, overrides={MODEL: model})
    sent = events_of(db_path, AskSent)
    assert [len(s.messages) for s in sent] == [1, 3, 5]
    assert [m.role for m in sent[2].messages] == ["user", "assistant"] * 2 + ["user"]
    assert sent[2].messages[1].content == "answer 1"


async def test_retryable_errors_are_retried_and_logged(make_campaign, db_path: Path) -> None:
    config = config_for(make_campaign, "testkit.chain", 2, {"turns": 1})
    flaky = [RateLimitedError("429", status=429, retry_after=0.0) for _ in range(2)]
    model = scripted_model(fail_first=flaky)
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.outcomes == {"HELD": 2}
    failed = events_of(db_path, AskFailed)
    assert len(failed) == 4
    assert {(f.error_kind, f.decision, f.retryable, f.status) for f in failed} == {
        ("rate_limited", "retry", True, 429)
    }
    with EventReader(db_path) as log:
        for _, events in log.cases(log.latest_campaign()):
            kinds = [(type(s.event).__name__, getattr(s.event, "attempt", None)) for s in events]
            assert kinds[1:7] == [
                ("AskSent", 1),
                ("AskFailed", 1),
                ("AskSent", 2),
                ("AskFailed", 2),
                ("AskSent", 3),
                ("ReplyReceived", 3),
            ]


async def test_retries_stop_at_max_attempts(make_campaign, db_path: Path) -> None:
    # Transient failures past max_attempts are not a verdict: the case stays open (failed,
    # retryable), and resume sends the turn again with its attempts counted afresh.
    config = config_for(make_campaign, "testkit.chain", 2, {"turns": 1}, limits={"max_attempts": 3})
    model = scripted_model()
    model.failures["case 0 turn 0"] = [RateLimitedError("429", retry_after=0.0)] * 5
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert model.calls == 4  # three attempts, and case 1's one
    assert [f.decision for f in events_of(db_path, AskFailed)] == ["retry", "retry", "suspend"]
    assert summary.outcomes == {"HELD": 1} and summary.retryable == 1
    assert "1 cases failed, retryable" in summary.reason
    assert campaign_exit_code(summary, 2) == ExitCode.UNFINISHED
    # Two more failures, then an answer: three attempts again, not one (the count reset).
    summary = await resume_campaign(db_path, overrides={MODEL: model})
    assert model.calls == 7
    decisions = [f.decision for f in events_of(db_path, AskFailed)]
    assert decisions == ["retry", "retry", "suspend", "retry", "retry"]
    assert summary.cases_closed == 1 and summary.retryable == 0
    assert campaign_exit_code(summary, 1) == ExitCode.COMPLETED


async def test_a_model_that_never_answers_aborts_however_short_the_run(
    make_campaign, db_path: Path
) -> None:
    # Too few calls to reach the outage pauses, and not one answered: an outage (exit 3),
    # not a run with work left (exit 5); resume then completes it.
    config = config_for(make_campaign, "testkit.chain", 2, {"turns": 1}, limits={"max_attempts": 2})
    model = scripted_model(fail_first=[RateLimitedError("503", retry_after=0.0)] * 2)
    with pytest.raises(CampaignAbortedError) as caught:
        await run_campaign(config, db_path, overrides={MODEL: model})
    assert f"{MODEL}: vendor outage: no call was answered" in str(caught.value)
    assert "harness resume" in str(caught.value)
    [finished] = events_of(db_path, CampaignFinished)
    assert finished.status == "aborted"
    summary = await resume_campaign(db_path, overrides={MODEL: scripted_model()})
    assert summary.cases_closed == 2 and campaign_exit_code(summary, 2) == ExitCode.COMPLETED


async def test_non_retryable_errors_are_not_retried(make_campaign, db_path: Path) -> None:
    config = config_for(make_campaign, "testkit.chain", 3, {"turns": 2})
    model = scripted_model(fail_first=[BadRequestError("prompt too long", status=400)])
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert model.calls == 3  # one per case: the first turn fails and the case ends
    failed = events_of(db_path, AskFailed)
    assert [(f.error_kind, f.decision) for f in failed] == [("bad_request", "give_up")] * 3
    assert summary.outcomes == {"INVALID": 3}
    assert all("bad_request" in reason for _, reason in verdicts(db_path))


async def test_authentication_error_aborts_the_campaign(make_campaign, db_path: Path) -> None:
    config = config_for(make_campaign, "testkit.chain", 50, {"turns": 1}, max_in_flight=1)
    model = scripted_model(fail_first=[AuthenticationError("bad key sk-abcdefghijklmnop")] * 100)
    with pytest.raises(CampaignAbortedError) as err:
        await run_campaign(config, db_path, overrides={MODEL: model})
    assert "sk-abcdefghijklmnop" not in str(err.value)
    assert model.calls == 1  # nothing else is sent once authentication failed
    [failed] = events_of(db_path, AskFailed)
    assert (failed.error_kind, failed.decision) == ("authentication", "abort")
    [finished] = events_of(db_path, CampaignFinished)
    assert finished.status == "aborted"
    with connect(db_path) as conn:
        payloads = " ".join(p for (p,) in conn.execute("SELECT payload FROM events"))
    assert "sk-abcdefghijklmnop" not in payloads


async def test_a_model_raising_a_foreign_exception_is_a_recorded_failure(
    make_campaign, db_path: Path
) -> None:
    config = config_for(make_campaign, "testkit.chain", 2, {"turns": 1})
    model = scripted_model(fail_first=[KeyError("choices")])
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.status == "completed" and summary.outcomes == {"INVALID": 2}
    failed = events_of(db_path, AskFailed)
    assert len(failed) == 2
    assert all(f.error_kind == ModelError.kind and "KeyError" in f.message for f in failed)


@pytest.mark.parametrize("relation", ["metaquerier.mr1", "metaquerier.mr2", "metafair.mr8"])
async def test_garbage_answers_give_invalid_verdicts(
    make_campaign, db_path: Path, relation: str
) -> None:
    garbage = itertools.cycle(["", "I refuse.", "maybe?", "nurse, pilot", "[unclosed", "\x00"])
    config = config_for(make_campaign, relation, 12)
    model = scripted_model(answer=lambda m: next(garbage))
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.status == "completed"
    # Garbage is INVALID; "I refuse." is a refusal (REFUSED); never a verdict about bias.
    assert set(summary.outcomes) <= {"INVALID", "REFUSED"}
    assert sum(summary.outcomes.values()) == 12 and summary.outcomes["INVALID"] > 0
    assert all(reason for _, reason in verdicts(db_path))


async def test_a_relation_that_raises_gives_invalid_not_a_crash(
    make_campaign, db_path: Path
) -> None:
    config = config_for(make_campaign, "metaquerier.mr1", 2)
    model = scripted_model(answer=lambda m: "[]")
    with pytest.MonkeyPatch.context() as mp:
        from relations.metaquerier import TermDeletion

        def broken(self: Any, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
            raise ZeroDivisionError("oops")

        mp.setattr(TermDeletion, "step", broken)
        summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.outcomes == {"INVALID": 2}
    assert all("ZeroDivisionError" in reason for _, reason in verdicts(db_path))


def test_a_plan_of_a_million_cases_is_generated_lazily(make_campaign) -> None:
    config = make_campaign(("metaquerier.mr1", 500_000, {}), repeats=2)
    tracemalloc.start()
    try:
        started = time.perf_counter()
        plan = Plan(config)
        assert plan.total_cases == 1_000_000
        cases = plan.cases_for("sim:test")
        for _ in itertools.islice(cases, 2_000):
            pass
        _, after_few = tracemalloc.get_traced_memory()
        for _ in itertools.islice(cases, 20_000):
            pass
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 30
    # Memory does not grow with the cases already produced.
    assert current < 2_000_000, current
    assert peak < after_few + 2_000_000, (after_few, peak)


async def test_a_huge_campaign_stops_cleanly_when_asked(make_campaign, db_path: Path) -> None:
    config = config_for(
        make_campaign, "testkit.chain", 1_000_000, {"turns": 2}, limits={"stop_grace_s": 2}
    )
    model = scripted_model(delay=0.001)
    from harness.running.engine import Engine

    original_run = Engine.run

    async def run_then_stop(self: Engine) -> Any:
        asyncio.get_running_loop().call_later(0.5, self.request_stop, "test stop")
        return await original_run(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "run", run_then_stop)
        started = time.monotonic()
        run = run_campaign(config, db_path, overrides={MODEL: model})
        summary = await asyncio.wait_for(run, timeout=20)
    assert time.monotonic() - started < 10
    assert summary.status == "stopped" and summary.reason == "test stop"
    assert 0 < summary.cases_closed < 1_000_000
    [finished] = events_of(db_path, CampaignFinished)
    assert finished.status == "stopped"
    # No call is left without an outcome: every AskSent has its reply or failure.
    with connect(db_path) as conn:
        unanswered = conn.execute(
            "SELECT count(*) FROM turns WHERE reply IS NULL AND error_kind IS NULL"
        ).fetchone()[0]
    assert unanswered == 0
    assert len(events_of(db_path, ReplyReceived)) >= summary.cases_closed * 2


# --- replies are data, outages are not verdicts (issue 32) ------------------------------


async def test_a_lone_surrogate_is_recorded_once_and_never_sent_again(
    make_campaign, db_path: Path
) -> None:
    # Before: the event encoder raised, the campaign died (exit 1), and every resume sent
    # and paid for the same calls again. Now the text is repaired, the original kept.
    config = config_for(make_campaign, "testkit.chain", 3, {"turns": 2})
    model = scripted_model(answer=lambda m: f"ok \ud800 {m[-1].content}")
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.cases_closed == 3 and model.calls == 6
    replies = [e.reply for e in events_of(db_path, ReplyReceived)]
    assert all(r.text.startswith("ok \ufffd case") for r in replies)
    originals = [r.raw_escaped.encode("ascii").decode("unicode_escape") for r in replies]
    assert sorted(originals) == sorted(
        f"ok \ud800 case {i} turn {t}" for i in range(3) for t in (0, 1)
    )
    again = await resume_campaign(db_path, overrides={MODEL: model})
    assert model.calls == 6 and again.calls == 0


async def test_a_reply_that_cannot_be_recorded_is_a_failure_not_a_crash(
    make_campaign, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A backend whose reply still does not encode (here: the repair switched off) becomes
    # an AskFailed with its reason; the engine goes on; the call is not re-sent in the run.
    # Not a verdict either: the case stays open (failed, retryable), and resume sends it.
    import harness.running.calls as calls_module

    repair = calls_module.recordable_reply
    monkeypatch.setattr(calls_module, "recordable_reply", lambda reply: reply)
    config = config_for(make_campaign, "testkit.chain", 2, {"turns": 1})
    model = scripted_model(answer=lambda m: "\ud800")
    summary = await run_campaign(config, db_path, overrides={MODEL: model})
    assert summary.cases_closed == 0 and summary.outcomes == {} and summary.retryable == 2
    assert model.calls == 2
    failed = events_of(db_path, AskFailed)
    assert [(f.error_kind, f.decision) for f in failed] == [("unrecordable_reply", "suspend")] * 2
    assert all("cannot be recorded" in f.message for f in failed)
    with EventReader(db_path) as log:  # no hole where the reply was refused
        for case_id in {s.case_id for s in log.events(kinds=("CaseOpened",))}:
            seqs = [s.seq for s in log.case_events(log.latest_campaign(), case_id)]
            assert seqs == list(range(1, len(seqs) + 1))
    # The backend fixed: resume sends each open turn once and closes it.
    monkeypatch.setattr(calls_module, "recordable_reply", repair)
    again = await resume_campaign(db_path, overrides={MODEL: model})
    assert again.calls == 2 and model.calls == 4 and again.cases_closed == 2
    assert again.retryable == 0 and sum(again.outcomes.values()) == 2


async def test_suspended_turns_keep_every_other_case_going(make_campaign, db_path: Path) -> None:
    # One case's transient failures outlast max_attempts: it stays open, every other case
    # closes, the summary counts it, and resume finishes it without re-sending answered turns.
    config = config_for(make_campaign, "testkit.chain", 4, {"turns": 2}, limits={"max_attempts": 2})
    model = scripted_model()
    model.failures["case 2 turn 1"] = [RateLimitedError("429", retry_after=0.0)] * 2
    first = await run_campaign(config, db_path, overrides={MODEL: model})
    assert first.cases_closed == 3 and first.retryable == 1 and first.outcomes == {"HELD": 3}
    # Recorded as unfinished (CampaignFinished v2), not completed; the run's own status
    # (how it ended, for the exit code) is still "completed" with a retryable count.
    [finished] = events_of(db_path, CampaignFinished)
    assert first.status == "completed" and finished.status == "unfinished"
    assert "1 cases failed, retryable" in finished.reason
    with EventReader(db_path) as log:
        versions = log.connection.execute(
            "SELECT schema_version FROM events WHERE kind = 'CampaignFinished'"
        ).fetchall()
    assert versions == [(2,)]
    calls_before = model.calls
    second = await resume_campaign(db_path, overrides={MODEL: model})
    assert second.cases_closed == 1 and second.outcomes == {"HELD": 1}
    assert model.calls == calls_before + 1  # only the suspended turn is sent again
    assert [f.status for f in events_of(db_path, CampaignFinished)] == ["unfinished", "completed"]


async def test_resume_after_a_disk_full_stop_counts_every_re_sent_call(
    make_campaign, db_path: Path
) -> None:
    # The log's disk fills mid-campaign: commits fail, the run dies with turns in flight
    # and turns awaiting a retry. Resume must count every logged turn it sends again, not
    # only those in flight (before: some resumes under-counted their re-sent calls).
    from harness.running.engine import Engine
    from harness.running.runner import campaign_started
    from harness.store.fold import fold_case
    from harness.store.writer import EventWriter, PendingEvent
    from harness.vocabulary.errors import StoreError

    config = config_for(
        make_campaign,
        "testkit.chain",
        40,
        {"turns": 2},
        max_in_flight=8,
        limits={"max_attempts": 3},
    )
    state: dict[str, Any] = {}

    def answer(messages: Sequence[Message]) -> str:
        if model.calls >= 30 and "full" not in state:  # the disk is full from now on
            state["full"] = store = state["store"]
            store._commit_sync = lambda group: [StoreError("database or disk is full")] * len(group)
        return "[]"

    model = scripted_model(delay=0.005, answer=answer)
    for i in (1, 4, 6):  # waiting out a long Retry-After when the disk fills
        model.failures[f"case {i} turn 0"] = [RateLimitedError("429", retry_after=60.0)]
    plan = Plan(config)
    with pytest.raises(StoreError):
        async with await EventWriter.open(db_path) as store:
            state["store"] = store
            started = campaign_started(config, plan.total_cases)
            await store.append([PendingEvent("c1", "", 1, started)])
            engine = Engine(store, config, "c1", {MODEL: model}, [], plan=plan)
            await engine.run()
    with EventReader(db_path) as log:
        by_case: dict[str, list[Any]] = {}
        for stored in log.events("c1"):
            if stored.case_id:
                by_case.setdefault(stored.case_id, []).append(stored)
    open_prompts = {
        t.ask.prompt
        for events in by_case.values()
        for t in fold_case(events).open_turns()
        if t.sent
    }
    in_flight = sum(
        1 for events in by_case.values() for t in fold_case(events).open_turns() if t.in_flight
    )
    assert open_prompts and in_flight < len(open_prompts)  # some were awaiting a retry
    again = scripted_model()
    summary = await resume_campaign(db_path, overrides={MODEL: again})
    sent_prompts = [r.prompt for r in again.requests]
    resent = [p for p in sent_prompts if p in open_prompts]
    assert sorted(resent) == sorted(open_prompts)  # each sent again once
    assert summary.resent == len(open_prompts)
    assert summary.resent_in_flight == in_flight
    assert (
        summary.cases_closed + len([1 for events in by_case.values() if fold_case(events).closed])
        == 40
    )
