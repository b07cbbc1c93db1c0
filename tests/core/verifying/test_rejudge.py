"""Re-judging: judge turns are logged like any other, verdicts are appended (old ones stay),
agreement and Cohen's kappa in the report match what the planted truth predicts."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.judge_agreement import cohen_kappa
from harness.running.runner import run_campaign
from harness.store.fold import fold_case
from harness.store.reader import EventReader
from harness.store.writer import EventWriter, PendingEvent
from harness.testing import FakeModel
from harness.verifying.rejudge import judge_spec, rejudge
from harness.vocabulary.events import AskSent, CaseClosed
from harness.vocabulary.model import GenerationParams, Message, request_key
from harness.vocabulary.relation import Outcome
from relations._common.conversation_rubric import ConversationBiasRubric
from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS
from tests.core.verifying.test_replay import sim_campaign


@pytest.fixture
def campaign_db(tmp_path: Path) -> Path:
    db = tmp_path / "c.db"
    asyncio.run(run_campaign(sim_campaign(15), db))
    return db


def test_cohen_kappa_known_values() -> None:
    # 50 items: both yes 20, a yes / b no 5, a no / b yes 10, both no 15 -> kappa 0.4
    pairs = [("Y", "Y")] * 20 + [("Y", "N")] * 5 + [("N", "Y")] * 10 + [("N", "N")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("A", "A"), ("B", "B")]) == pytest.approx(1.0)
    assert cohen_kappa([]) != cohen_kappa([])  # NaN when undefined


def _planted_label(state_turns: list[tuple[str, str]], relation: str) -> str:
    """What the planted truth says about a conversation: (prompt, reply) pairs."""
    if relation == "metafair.mr8":
        tailored = any("especially as someone who is" in reply for _, reply in state_turns)
        return "VIOLATED" if tailored else "HELD"
    gender = re.search(r"definitely (female|male)\?", state_turns[0][0])
    assert gender is not None
    named = set()
    for _, reply in state_turns:
        m = re.search(r"\[([^\]]*)\]", reply)
        named |= {t.strip().lower() for t in (m.group(1).split(",") if m else []) if t.strip()}
    planted = any(gender.group(1) in DEFAULT_ASSOCIATIONS.get(t, {}) for t in named)
    return "VIOLATED" if planted else "HELD"


async def test_sim_judge_agreement_matches_planted_truth(campaign_db: Path) -> None:
    summary = await rejudge(campaign_db, judge_spec("sim:judge"))
    assert summary.judged == 90 and summary.calls == 90 and summary.failures == 0
    expected: dict[str, list[tuple[str, str]]] = {}
    with EventReader(campaign_db) as log:
        campaign = log.latest_campaign()
        for case_id, events in log.cases(campaign):
            state = fold_case(events)
            own = [
                (t.ask.prompt, t.reply.reply.text)
                for _, t in sorted(state.turns.items())
                if t.ask.role == "subject" and t.reply is not None
            ]
            judged = [v for s, v in state.verdicts if s == "judge:sim:judge"]
            assert len(judged) == 1 and state.verdict is not None  # the old verdict stays
            label = _planted_label(own, state.case.relation)
            assert judged[0].outcome.value == label, case_id
            expected.setdefault(state.case.relation, []).append(
                (state.verdict.outcome.value, label)
            )
            judge_turns = [t for t in state.turns.values() if t.ask.role == "judge"]
            assert [t.ask.thread for t in judge_turns] == ["rejudge:sim:judge"]
            assert judge_turns[0].reply is not None
        tables = {t.name: t for t in build_report(log)}
    rows = {
        r[1]: dict(zip(tables["judges"].columns, r, strict=True)) for r in tables["judges"].rows
    }
    for relation, pairs in expected.items():
        agreement = sum(a == b for a, b in pairs) / len(pairs)
        row = rows[relation]
        print(
            f"{relation}: judge agreement {row['agreement']} kappa {row['kappa']} "
            f"(planted truth predicts {agreement:.4f}, {cohen_kappa(pairs):.4f})"
        )
        assert row["cases"] == len(pairs)
        assert row["agreement"] == pytest.approx(agreement, abs=1e-4)
        assert row["kappa"] == pytest.approx(cohen_kappa(pairs), abs=1e-4)
    # MR8's judge follows the tailoring the relation also detects: high agreement.
    assert rows["metafair.mr8"]["agreement"] > 0.8


async def test_rejudge_is_resumable_and_idempotent(campaign_db: Path) -> None:
    first = await rejudge(campaign_db, judge_spec("sim:judge"), limit=10)
    second = await rejudge(campaign_db, judge_spec("sim:judge"))
    third = await rejudge(campaign_db, judge_spec("sim:judge"))
    print(
        f"rejudge in parts: {first.judged} + {second.judged}, then {third.judged} "
        f"(already {third.already})"
    )
    assert (first.judged, second.judged, third.judged) == (10, 80, 0)
    assert second.already == 10 and third.already == 90 and third.calls == 0


async def test_judge_call_in_flight_at_a_crash_is_resent(campaign_db: Path) -> None:
    with EventReader(campaign_db) as log:
        campaign = log.latest_campaign()
        case_id, events = next(log.cases(campaign))
        state = fold_case(events)
    rubric = ConversationBiasRubric()
    task = rubric.task(state.case, state.transcript())
    assert task is not None
    from harness.vocabulary.relation import Ask

    ask = Ask(thread="rejudge:sim:judge", prompt=task.prompt, role="judge", system=task.system)
    messages = [
        Message(role="system", content=task.system),
        Message(role="user", content=task.prompt),
    ]
    params = GenerationParams(temperature=0.0, max_tokens=200, seed=0)
    turn = max(state.turns) + 1
    sent = AskSent(
        turn=turn,
        ask=ask,
        model="sim:judge",
        messages=messages,
        params=params,
        request_key=request_key("sim:judge", messages, params),
    )
    async with await EventWriter.open(campaign_db, create=False) as store:
        await store.append([PendingEvent(campaign, case_id, state.next_seq, sent)])
    summary = await rejudge(campaign_db, judge_spec("sim:judge"))
    assert summary.resent_in_flight == 1
    with EventReader(campaign_db) as log:
        after = fold_case(log.case_events(campaign, case_id))
    judge_turn = after.turns[turn]
    print(f"in-flight judge call re-sent as attempt {judge_turn.sent[-1].attempt}")
    assert [s.attempt for s in judge_turn.sent] == [1, 2]
    assert judge_turn.reply is not None and judge_turn.reply.attempt == 2
    assert max(after.turns) == turn  # no new turn was opened


def test_unparseable_judge_output_is_invalid_with_reason() -> None:
    rubric = ConversationBiasRubric()
    cases = {
        "I think it is biased.": "no JSON object",
        '{"verdict": "MAYBE"}': "is not one of",
        '{"verdict": BIASED}': "invalid JSON",
        "[1, 2]": "no JSON object",
    }
    for text, why in cases.items():
        verdict = rubric.parse(text)
        assert verdict.outcome == Outcome.INVALID
        assert why in verdict.reason, (text, verdict.reason)
    ok = rubric.parse('Sure! ```json\n{"verdict": "unbiased", "severity": "none"}\n```')
    assert ok.outcome == Outcome.HELD


async def test_garbage_judge_yields_invalid_verdicts_not_a_crash(campaign_db: Path) -> None:
    # Unreadable and readable answers in turn.
    answers = itertools.cycle(['{"verdict": "BIASED", "explanation": "x"}', "no idea"])
    judge = FakeModel(lambda messages: next(answers), name="fake:garbage")
    spec = judge_spec("sim:garbage")
    summary = await rejudge(campaign_db, spec, model=judge)
    print(f"garbage judge: {summary.outcomes}")
    assert summary.judged == 90
    assert summary.outcomes is not None
    assert summary.outcomes.get("INVALID", 0) == 45 and summary.outcomes.get("VIOLATED", 0) == 45
    with EventReader(campaign_db) as log:
        closed = sum(
            1 for e in log.events(kinds=("CaseClosed",)) if isinstance(e.event, CaseClosed)
        )
    assert closed == 90  # nothing about the cases themselves changed


def test_rejudge_command(campaign_db: Path) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    result = CliRunner().invoke(main, ["rejudge", str(campaign_db), "--judge", "sim:judge"])
    assert result.exit_code == 0, result.output
    assert "judge:sim:judge: 90 cases judged" in result.output
    assert "Agreement between raters" in result.output


def _judge_attempts(db: Path, kind: str) -> list[tuple[str, int, int]]:
    """(case, turn, attempt) of the judge turns' events of one kind."""
    with EventReader(db) as log:
        judge_turns = {
            (e.case_id, e.event.turn)  # type: ignore[attr-defined]
            for e in log.events(kinds=("AskSent",))
            if e.event.ask.thread == "rejudge:sim:judge"  # type: ignore[attr-defined]
        }
        return [
            (e.case_id, e.event.turn, e.event.attempt)  # type: ignore[attr-defined]
            for e in log.events(kinds=(kind,))
            if (e.case_id, e.event.turn) in judge_turns  # type: ignore[attr-defined]
            and (kind != "AskFailed" or e.event.error_kind == "cancelled")  # type: ignore[attr-defined]
        ]


async def test_a_judge_call_cancelled_at_a_stop_is_recorded_and_resent(campaign_db: Path) -> None:
    # A judge whose calls never return: they are under way when the re-judge is cancelled.
    started = asyncio.Event()

    async def hang(messages: Sequence[Message]) -> str:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    judge = FakeModel(hang, name="sim:judge", on_call=lambda m, p: started.set())
    spec = judge_spec("sim:judge", max_in_flight=3)
    task = asyncio.create_task(rejudge(campaign_db, spec, model=judge))
    await asyncio.wait_for(started.wait(), timeout=30)
    await asyncio.sleep(0.05)  # let every worker's call get under way
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    sent = _judge_attempts(campaign_db, "AskSent")
    cancelled = _judge_attempts(campaign_db, "AskFailed")
    print(f"judge attempts under way at the cancel: {len(sent)}, recorded cancelled: {cancelled}")
    assert 1 <= len(sent) <= 3
    assert sorted(cancelled) == sorted(sent)  # every attempt under way has its outcome
    # A later re-judge re-sends those turns as attempt 2 and judges every case.
    summary = await rejudge(campaign_db, judge_spec("sim:judge"))
    assert summary.judged == 90 and summary.calls == 90
    replies = _judge_attempts(campaign_db, "ReplyReceived")
    assert sorted(r for r in replies if r[2] > 1) == sorted((c, t, a + 1) for c, t, a in sent)


def _judge_requests(db: Path) -> list[AskSent]:
    with EventReader(db) as log:
        return [
            e.event
            for e in log.events(log.latest_campaign(), kinds=("AskSent",))
            if isinstance(e.event, AskSent) and e.event.ask.thread.startswith("rejudge:")
        ]


async def test_a_structured_judge_is_sent_the_verdict_schema_and_judges_alike(
    campaign_db: Path, tmp_path: Path
) -> None:
    """With answer_format structured the judge's request carries the rubric's JSON verdict
    (logged in AskSent); by default nothing is sent, so free judge requests are unchanged.
    The simulated judge gives the same labels either way."""
    import shutil

    free_db = tmp_path / "free.db"
    shutil.copy(campaign_db, free_db)
    free = await rejudge(free_db, judge_spec("sim:judge"))
    structured = await rejudge(campaign_db, judge_spec("sim:judge", answer_format="structured"))
    assert free.outcomes == structured.outcomes and structured.judged == 90

    sent_free = _judge_requests(free_db)
    sent_structured = _judge_requests(campaign_db)
    assert len(sent_structured) == 90
    assert all(a.params.answer_shape is None for a in sent_free)
    schema = sent_structured[0].params.answer_shape
    assert schema is not None and schema.kind == "json"
    assert set(schema.json_schema()["properties"]) == {"verdict", "severity", "explanation"}
    assert all(a.params.answer_shape == schema for a in sent_structured)
    # A verdict that fits the schema is read like a free one.
    rubric = ConversationBiasRubric()
    reply = schema.encode({"verdict": "BIASED", "severity": "high", "explanation": "x"})
    assert rubric.parse(reply).outcome == Outcome.VIOLATED
