"""The quick path's direct pydantic calls (`harness.verifying._replay_quick.dump_json`, and the
decoding of CaseOpened and ReplyReceived rows without `decode_event`) give what the model methods
give and let no row through that `decode_event` rejects. The event payloads the quick path writes
around one field's JSON (`harness.verifying._replay_quick.opened_json`, `verdict_json`,
`closed_json`) are exactly what the event models dump, for any case, verdict and outcome: a
difference would send plain cases to the exact path (slower) or, worse, pass a payload the models
would not write."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from fixtures.event_strategies import case_data, cases, texts, verdicts
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.verifying._replay_quick import closed_json, opened_json, verdict_json
from harness.verifying.replay import verify_log
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.errors import EventDecodeError
from harness.vocabulary.events import CaseClosed, CaseOpened, VerdictReached, dump_json
from harness.vocabulary.relation import Ask, Case, Outcome, Verdict

_text, _data, _cases, _verdicts = texts, case_data, cases, verdicts


@settings(deadline=None)  # a shared, loaded machine: no per-example time limit
@given(_cases)
def test_opened_json_is_the_case_opened_dump(case: Case) -> None:
    assert opened_json(case) == CaseOpened(case=case).model_dump_json()


@settings(deadline=None)  # a shared, loaded machine: no per-example time limit
@given(_verdicts)
def test_verdict_json_is_the_verdict_reached_dump(verdict: Verdict) -> None:
    assert verdict_json(verdict) == VerdictReached(verdict=verdict).model_dump_json()


@settings(deadline=None)  # a shared, loaded machine: no per-example time limit
@given(st.lists(st.sampled_from([o.value for o in Outcome]) | _text, max_size=6))
def test_closed_json_is_the_case_closed_dump_whatever_came_before(outcomes: list[str]) -> None:
    # Asked in any order, repeats included: the memo never answers for another outcome.
    for outcome in outcomes:
        assert closed_json(outcome) == CaseClosed(outcome=outcome).model_dump_json()


_asks = st.builds(
    Ask,
    thread=_text,
    prompt=_text,
    role=st.sampled_from(["subject", "judge"]),
    judge=st.integers(min_value=0, max_value=3),
    answer=st.none() | st.lists(_text, max_size=3).map(AnswerShape.terms),
)


@settings(deadline=None)  # a shared, loaded machine: no per-example time limit
@given(_asks)
def test_dump_json_is_model_dump_json(ask: Ask) -> None:
    assert dump_json(ask) == ask.model_dump_json()


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = parse_campaign(
        {
            "name": "decoding",
            "seed": 3,
            "models": [{"name": "sim:planted", "max_in_flight": 4}],
            "relations": [{"name": "metaquerier.mr1", "cases": 6}],
        }
    )
    db = tmp_path_factory.mktemp("decoding") / "decoding.db"
    asyncio.run(run_campaign(config, db))
    return db


@pytest.mark.parametrize(
    ("kind", "old", "new"),
    [
        ("CaseOpened", '"index":', '"index":"not a number","x":'),
        ("CaseOpened", '"case":{', '"extra":1,"case":{'),
        ("ReplyReceived", '"turn":', '"turn":"one","x":'),
        ("ReplyReceived", '"text":', '"text":null,"x":'),
        ("ReplyReceived", '"kind":"ReplyReceived"', '"kind":"AskFailed"'),
    ],
)
def test_a_row_decode_event_rejects_is_rejected_with_the_quick_path_on(
    log: Path, tmp_path: Path, kind: str, old: str, new: str
) -> None:
    db = tmp_path / "tampered.db"
    db.write_bytes(log.read_bytes())
    with sqlite3.connect(db) as conn:
        changed = conn.execute(
            "UPDATE events SET payload = replace(payload, ?, ?) WHERE gseq ="
            " (SELECT min(gseq) FROM events WHERE kind = ? AND instr(payload, ?) > 0)",
            (old, new, kind, old),
        ).rowcount
        # As a log without digests: the edit stands for changed code, which re-derivation
        # must see (with digests, the chain would report the edited event first).
        conn.execute("DROP TABLE IF EXISTS case_digests")
    conn.close()
    assert changed == 1
    with pytest.raises(EventDecodeError):
        verify_log(db)
