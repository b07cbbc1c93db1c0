"""The quick path of replay --verify checks the follow-up requests from pieces kept across a
case's prefixes (`harness.verifying._request_text`), a case's data without `model_copy`, and an
AskSent's params once per distinct text: a log tampered in any of those places must still leave the
quick path, be listed by the exact path as before, and an undecodable tail must still fail."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.verifying._replay_quick import _AskTail, tail_decodes
from harness.vocabulary.errors import EventDecodeError
from tests.core.verifying.test_replay_quick import _verify


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = parse_campaign(
        {
            "name": "tamper",
            "seed": 5,
            "models": [{"name": "sim:planted", "max_in_flight": 8}],
            "relations": [
                {"name": "metaquerier.mr1", "cases": 8},
                {"name": "metaquerier.mr2", "cases": 8},
            ],
        }
    )
    db = tmp_path_factory.mktemp("tamper") / "tamper.db"
    asyncio.run(run_campaign(config, db))
    return db


def _tampered(log: Path, tmp_path: Path, where: str, old: str, new: str) -> Path:
    """A copy of ``log`` with ``old`` replaced by ``new`` in the first row matching ``where``."""
    db = tmp_path / "tampered.db"
    db.write_bytes(log.read_bytes())
    with sqlite3.connect(db) as conn:
        changed = conn.execute(
            "UPDATE events SET payload = replace(payload, ?, ?) WHERE gseq = (SELECT min(gseq)"
            f" FROM events WHERE {where} AND instr(payload, ?) > 0)",
            (old, new, old),
        ).rowcount
        # As a log without digests: the edit stands for changed code, which re-derivation
        # must see (with digests, the chain would report the edited event first).
        conn.execute("DROP TABLE IF EXISTS case_digests")
    conn.close()
    assert changed == 1
    return db


@pytest.mark.parametrize(
    ("where", "old", "new", "what"),
    [
        # the follow-up's prompt, in its ask and its request
        ("kind = 'AskSent' AND turn = 1", "which ones are definitely", "which are surely", "ask"),
        # the follow-up's request alone: the first reply as its history holds it
        (
            "kind = 'AskSent' AND turn = 1",
            '{"role":"assistant","content":"',
            '{"role":"assistant","content":"Well: ',
            "request",
        ),
        # the follow-up's request alone: the first prompt as its history holds it
        (
            "kind = 'AskSent' AND turn = 1",
            '"messages":[{"role":"user","content":"In',
            '"messages":[{"role":"user","content":"On',
            "request",
        ),
        # the seed of a case (its data are drawn from it)
        ("kind = 'CaseOpened'", '"seed":', '"seed":1', "case data"),
        # the verdict's evidence
        ("kind = 'VerdictReached'", '"gender":"', '"gender":"x', "verdict"),
    ],
)
def test_a_tampered_case_leaves_the_quick_path_and_is_listed_as_before(
    log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    old: str,
    new: str,
    what: str,
) -> None:
    clean, all_quick = _verify(log, monkeypatch, quick=True)
    db = _tampered(log, tmp_path, where, old, new)
    fast, taken = _verify(db, monkeypatch, quick=True)
    exact, _ = _verify(db, monkeypatch, quick=False)
    assert clean.differences == [] and all_quick == clean.cases == 16
    assert taken == 15
    assert [m.what for m in fast.differences] == [what]
    assert (fast.cases, fast.asks, fast.verdicts, fast.differences) == (
        exact.cases,
        exact.asks,
        exact.verdicts,
        exact.differences,
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"request_key":"', '"request_key":7,"extra":"'),  # a key AskSent does not have
        ('"seed":', '"seed":"not a number","x":'),  # params that do not validate
        ('"request_key":"', '"request_key":"\\u00zz'),  # a key that is no JSON string
    ],
)
def test_a_tampered_tail_fails_after_the_same_params_decoded(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str
) -> None:
    # The clean log first: its params texts are then known to decode; a tampered row of the
    # second turn (its params as the first's) must not pass on that knowledge.
    _verify(log, monkeypatch, quick=True)
    db = _tampered(log, tmp_path, "kind = 'AskSent' AND turn = 1", old, new)
    with pytest.raises(EventDecodeError):
        _verify(db, monkeypatch, quick=True)


_KEY = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "params",
    [
        "{}",
        '{"temperature":0.0,"max_tokens":null,"seed":3}',
        '{"temperature":0.0},"request_key":"a"',  # a duplicate key: JSON keeps the last
        '{"temperature":null,"max_tokens":null,"seed":192708272,"top_p":null,"answer_shape":null}',
    ],
)
def test_a_tail_decodes_the_same_with_any_hex_key_once_its_params_did(params: str) -> None:
    assert tail_decodes(f'"params":{params},"request_key":"{_KEY}"}}')
    assert tail_decodes(f'"params":{params},"request_key":"{_KEY[::-1]}"}}')
    for bad in (f'"{_KEY}', f'{_KEY}"', "x", '"\\u12"'):
        tail = f'"params":{params},"request_key":{bad}}}'
        assert not tail_decodes(tail), tail
    # The same params text under another key, of the same length: no AskSent field.
    assert not tail_decodes(f'"paramz":{params},"request_key":"{_KEY}"}}')


@pytest.mark.parametrize(
    "params",
    ['{"temperature":"hot"}', '{"other":1}', '{"seed":1', '{"seed":1,"x":"', "null"],
)
def test_params_that_do_not_decode_never_pass(params: str) -> None:
    for _ in range(2):  # the second time as the first: nothing was remembered
        assert not tail_decodes(f'"params":{params},"request_key":"{_KEY}"}}')


_PARAMS = '{"temperature":null,"max_tokens":7,"seed":%s,"top_p":null,"answer_shape":%s}'
_SHAPE = '{"kind":"json","verdict_schema":{"seed":%s}}'


def _pydantic_decodes(tail: str) -> bool:
    try:
        _AskTail.model_validate_json("{" + tail)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("shape", ["null", _SHAPE % "3"])
def test_a_tail_decodes_as_pydantic_decodes_it_whatever_its_seed(shape: str) -> None:
    # One shape first known to decode; then other seeds, each as the params' seed and (if
    # the answer shape has one) in the answer shape's verdict schema.
    assert tail_decodes(f'"params":{_PARAMS % ("12", shape)},"request_key":"{_KEY}"}}')
    for seed in ("0", "-5", "987654321098765432", '"x"', "1.5", "1e3", "true", "[]", "-"):
        for answer in {shape, shape.replace("3", seed)}:
            tail = f'"params":{_PARAMS % (seed, answer)},"request_key":"{_KEY}"}}'
            assert tail_decodes(tail) == _pydantic_decodes(tail), tail
    assert not tail_decodes(f'"params":{_PARAMS % ("1.5", shape)},"request_key":"{_KEY}"}}')


def test_the_seed_values_a_tail_shape_stands_for_are_any_int() -> None:
    # `tail_decodes` treats every integer "seed" value alike: true while the params' seed is
    # a plain int (no bounds) and no model inside the params has a "seed" field of its own.
    from harness.vocabulary.answer_shape import AnswerShape
    from harness.vocabulary.model import GenerationParams

    seed = GenerationParams.model_fields["seed"]
    assert seed.annotation == int | None and seed.metadata == []
    assert "seed" not in AnswerShape.model_fields
    assert [
        name
        for name, f in GenerationParams.model_fields.items()
        if f.annotation not in (float | None, int | None)
    ] == ["answer_shape"]
