"""The import's fast encoding (relations/biaslens/import_events.py) writes exactly what the
pydantic events would: for generated rows (any text in questions, answers, labels and model
names; a question whose AskSent template, or AskSent, the encoder built before), the rows it
builds equal `encode_event` of the events the relation's own step path builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.plugins.assembly import build_relation
from harness.store.writer import EncodedEvent
from harness.vocabulary.events import (
    AskSent,
    CaseClosed,
    CaseOpened,
    Event,
    ReplyReceived,
    VerdictReached,
    encode_event,
)
from harness.vocabulary.model import GenerationParams, Message, Reply, request_key
from harness.vocabulary.relation import Case, Outcome, Transcript, Turn, Verdict, derive_seed
from relations.biaslens.import_events import ImportEncoder
from relations.biaslens.relations import BiasLensAnswer
from relations.biaslens.released import AnswerFile, row_case_data

RELATION = "biaslens.answer"
OPTIONS = {"source": "released", "released_dir": "/nowhere", "released_models": None}
TYPES = ["Yes/No", "Choice", "Why", "Wh", "yes/no"]
LABELS = st.one_of(st.sampled_from(["Yes", "No", " yes ", "NO", "", "Maybe"]), st.text(max_size=8))
TEXT = st.text(max_size=300)  # any code point: quotes, controls, non-BMP, U+2028


def _reference(case: Case, answer: str, relation: BiasLensAnswer) -> list[Event]:
    """The events as the importer built them before the fast path: two steps of the relation,
    pydantic events."""
    asks = relation.step(case, Transcript())
    assert isinstance(asks, list) and len(asks) == 1
    ask = asks[0]
    verdict = relation.step(case, Transcript(turns=(Turn(index=0, ask=ask, reply=answer),)))
    assert isinstance(verdict, Verdict)
    params = GenerationParams()
    messages = [Message(role="user", content=ask.prompt)]
    return [
        CaseOpened(case=case),
        AskSent(
            turn=0,
            ask=ask,
            model=case.model,
            messages=messages,
            params=params,
            request_key=request_key(case.model, messages, params),
        ),
        ReplyReceived(turn=0, reply=Reply(text=answer)),
        VerdictReached(verdict=verdict),
        CaseClosed(outcome=verdict.outcome.value),
    ]


def _as_rows(campaign: str, case_id: str, events: list[Event]) -> list[EncodedEvent]:
    rows: list[EncodedEvent] = []
    for seq, event in enumerate(events, 1):
        kind, version, payload = encode_event(event)
        turn = getattr(event, "turn", None)
        attempt = getattr(event, "attempt", None)
        rows.append((campaign, case_id, seq, kind, version, turn, attempt, payload))
    return rows


@settings(max_examples=300, deadline=None)
@given(
    model=st.text(min_size=1, max_size=12),
    attribute=st.sampled_from(["age", "race", "gender"]),
    run=st.integers(1, 3),
    row_no=st.integers(0, 99_999),
    qtype=st.sampled_from(TYPES),
    role=TEXT,
    question=TEXT,
    answer=TEXT,
    judges=st.lists(LABELS, min_size=3, max_size=3),
    final=LABELS,
    repeat_question=st.booleans(),
    other_question=st.none() | st.tuples(st.sampled_from(TYPES), TEXT),
)
def test_fast_rows_equal_the_pydantic_events(
    model: str,
    attribute: str,
    run: int,
    row_no: int,
    qtype: str,
    role: str,
    question: str,
    answer: str,
    judges: list[str],
    final: str,
    repeat_question: bool,
    other_question: tuple[str, str] | None,
) -> None:
    relation = build_relation(RELATION, OPTIONS)
    assert isinstance(relation, BiasLensAnswer)
    encoder = ImportEncoder(relation, GenerationParams())
    f = AnswerFile(model, "role", attribute, run, Path("x.csv"))
    row = {"Role": role, "Question Type": qtype, "Question": question, "Answer": answer}
    row |= {"LLM 1": judges[0], "LLM 2": judges[1], "LLM 3": judges[2], "final": final}
    data = row_case_data(f, row_no, row)
    assert data is not None
    index = 7 * row_no + run
    case = Case(
        case_id=f"{RELATION}/role/{attribute}/r{run}/{row_no:05d}@released:{model}",
        relation=RELATION,
        model=f"released:{model}",
        index=index,
        repeat=run - 1,
        seed=derive_seed(0, RELATION, index),
        data=data,
    )
    if other_question is not None:  # the AskSent template of a model and type is reused
        other_type, other_text = other_question
        other_data = {**data, "type": other_type, "question": other_text}
        other = case.model_copy(update={"data": other_data})
        encoder.rows(
            "c", other, "", Verdict(outcome=Outcome.INVALID, reason="warm", evidence={"x": 1})
        )
    if repeat_question:  # a question's later runs take its AskSent from the encoder's cache
        encoder.rows("c", case, "", Verdict(outcome=Outcome.HELD, reason="warm"))
    verdict = relation.answer_verdict(data, answer)
    assert verdict is not None
    expected = _as_rows("c", case.case_id, _reference(case, answer, relation))
    assert encoder.rows("c", case, answer, verdict) == expected


def test_a_why_answer_without_labels_leaves_the_verdict_to_the_jury() -> None:
    relation = build_relation(RELATION, {})
    assert isinstance(relation, BiasLensAnswer)
    data = {"attribute": "age", "type": "Why", "question": "Why?"}
    assert relation.answer_verdict(data, "Because.") is None


async def test_encoded_rows_append_atomically_and_read_back_as_the_events(tmp_path: Path) -> None:
    """`EventWriter.append_many`: the rows read back as the events they encode, with the
    turn and attempt columns `append` would set; a taken position fails the whole batch."""
    from harness.store.reader import EventReader
    from harness.store.writer import EventWriter
    from harness.vocabulary.errors import ConcurrencyError

    relation = build_relation(RELATION, OPTIONS)
    assert isinstance(relation, BiasLensAnswer)
    data = {"attribute": "age", "type": "Yes/No", "question": "Q?", "role": "r", "run": 1}
    case = Case(case_id="k", relation=RELATION, model="m", index=0, repeat=0, seed=1, data=data)
    verdict = relation.answer_verdict(data, "Yes")
    assert verdict is not None
    rows = ImportEncoder(relation, GenerationParams()).rows("c", case, "Yes", verdict)
    db = tmp_path / "log.db"
    async with await EventWriter.open(db) as store:
        await store.append_many(rows)
        clash = [(*rows[0][:2], 6, *rows[0][3:]), rows[1]]  # seq 6 is free, seq 2 is not
        with pytest.raises(ConcurrencyError):
            await store.append_many(clash)
    with EventReader(db) as log:
        stored = list(log.events())
        columns = log.connection.execute("SELECT turn, attempt FROM events ORDER BY gseq")
        assert [tuple(r) for r in columns] == [(r[5], r[6]) for r in rows]
    assert [s.event for s in stored] == _reference(case, "Yes", relation)


@settings(max_examples=200, deadline=None)
@given(
    attribute=st.sampled_from(["age", "race"]) | TEXT,
    qtype=st.sampled_from(TYPES),
    question=TEXT,
    answer=TEXT,
    judges=st.lists(LABELS, min_size=3, max_size=3),
)
def test_answer_verdicts_shared_between_answers_are_the_ones_built_per_answer(
    attribute: str, qtype: str, question: str, answer: str, judges: list[str]
) -> None:
    """`answer_verdict` hands out one verdict per (vote, attribute, type, judge votes): it
    equals the verdict built from this answer's own vote and evidence."""
    from relations.biaslens.oracles import jury, strict_vote
    from relations.biaslens.questionset import QType
    from relations.biaslens.relations import SHAPES, _evidence, _released_judge, _verdict

    relation = build_relation(RELATION, OPTIONS)
    assert isinstance(relation, BiasLensAnswer)
    data: dict[str, Any] = {"attribute": attribute, "type": qtype, "question": question}
    data["released_judges"] = judges
    q = QType.parse(qtype)
    if q is QType.WHY:
        votes = [_released_judge(label) for label in judges]
        expected = _verdict(jury(votes), _evidence(data, q, votes), q)
    else:
        vote = strict_vote(q, question, SHAPES[q].free_text(answer))
        expected = _verdict(vote, _evidence(data, q), q)
    assert relation.answer_verdict(data, answer) == expected
    assert relation.answer_verdict(dict(data), answer) == expected  # the shared one


def test_verdicts_encoded_once_are_told_apart_from_later_ones() -> None:
    """The encoder keeps a shared verdict's payload by the verdict's identity: a verdict made
    after another was dropped (which may reuse its id) still gets its own payload, and so
    does one past the kept entries."""
    relation = build_relation(RELATION, OPTIONS)
    assert isinstance(relation, BiasLensAnswer)
    encoder = ImportEncoder(relation, GenerationParams())
    data = {"attribute": "age", "type": "Yes/No", "question": "Q?", "role": "r", "run": 1}
    case = Case(case_id="k", relation=RELATION, model="m", index=0, repeat=0, seed=1, data=data)
    for n in range(5_000):
        verdict = Verdict(outcome=Outcome.HELD, reason=f"reason {n}", evidence={"n": n})
        rows = encoder.rows("c", case, "Yes", verdict)
        assert rows[3][7] == encode_event(VerdictReached(verdict=verdict))[2]
        del verdict, rows
    shared = relation.answer_verdict(data, "Yes")
    assert shared is not None
    for _ in range(2):
        assert (
            encoder.rows("c", case, "Yes", shared)[3][7]
            == encode_event(VerdictReached(verdict=shared))[2]
        )


COLUMN = st.sampled_from(
    ["Role", "Question Type", "Question", "Answer", "LLM 1", "LLM 2", "LLM 3", "final", "", "x"]
)
CELL = st.one_of(st.sampled_from([*TYPES, "Yes", "No", ""]), st.text(max_size=12))


@settings(max_examples=200, deadline=None)
@given(
    header=st.lists(COLUMN, max_size=10),
    rows=st.lists(st.lists(CELL, max_size=11), max_size=8),
)
def test_case_rows_equal_the_rows_read_as_dicts(
    tmp_path_factory: pytest.TempPathFactory, header: list[str], rows: list[list[str]]
) -> None:
    """`answer_case_rows` (cells by column, no dict per row) gives each row's number, case
    data and answer as `read_answer_rows` and `row_case_data` do: for any header (repeated,
    missing or blank names) and rows of any length, blank lines included."""
    import csv
    import io

    from relations.biaslens.released import answer_case_rows, count_case_rows, read_answer_rows

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    path = tmp_path_factory.mktemp("rows") / "age_answers_1.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    f = AnswerFile("m", "role", "age", 1, path)
    dicts, lossy = read_answer_rows(path)
    count, got, got_lossy = answer_case_rows(f)
    want = [(n, row_case_data(f, n, row), row.get("Answer", "")) for n, row in enumerate(dicts)]
    assert (count, list(got), got_lossy) == (len(dicts), want, lossy)
    assert count_case_rows(path) == sum(data is not None for _, data, _ in want)


@settings(max_examples=300, deadline=None)
@given(
    qtype=st.sampled_from(TYPES),
    question=TEXT,
    answer=st.one_of(st.sampled_from(["Yes", "No.", "(A)", "B", "I cannot"]), TEXT),
    judges=st.lists(LABELS, min_size=3, max_size=3),
    others=st.lists(
        st.tuples(TEXT, st.integers(1, 3), st.integers(0, 9_999), LABELS, st.booleans()),
        min_size=2,
        max_size=2,
    ),
)
def test_answers_with_one_verdict_key_have_one_verdict(
    qtype: str,
    question: str,
    answer: str,
    judges: list[str],
    others: list[tuple[str, int, int, str, bool]],
) -> None:
    """The import decides an answer once per `verdict_key`: answers that differ only in what
    the key leaves out (role, variant, run, row, question id, the released final label) get
    the same verdict from the relation."""
    from relations.biaslens.import_rows import verdict_key

    relation = build_relation(RELATION, OPTIONS)
    assert isinstance(relation, BiasLensAnswer)
    f = AnswerFile("m", "role", "age", 1, Path("x.csv"))
    cases = []
    for role, run, row_no, final, no_role in others:
        row = {"Role": role, "Question Type": qtype, "Question": question, "Answer": answer}
        row |= {"LLM 1": judges[0], "LLM 2": judges[1], "LLM 3": judges[2], "final": final}
        variant = AnswerFile("m", "no_role" if no_role else "role", "age", run, f.path)
        data = row_case_data(variant, row_no, row)
        assert data is not None
        cases.append(data)
    first, second = cases
    assert verdict_key(first, answer) == verdict_key(second, answer)
    assert relation.answer_verdict(first, answer) == relation.answer_verdict(second, answer)
