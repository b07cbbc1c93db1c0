"""The quick path of replay --verify (harness/verifying/_replay_quick.py) takes the plain cases of a
fresh log, gives the counts the exact path gives, and hands every difference to the exact
path, which lists it as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import harness.verifying.replay as replay
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.verifying._replay_quick import QuickCounts, quick_verify
from harness.verifying.replay import VerifyResult, verify_log
from harness.vocabulary.errors import EventDecodeError


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    config = parse_campaign(
        {
            "name": "quick",
            "seed": 2,
            "models": [{"name": "sim:planted", "max_in_flight": 8}],
            "relations": [
                {"name": "metaquerier.mr1", "cases": 20},
                {"name": "metaquerier.mr2", "cases": 20},
                {"name": "metafair.mr11", "cases": 10},
            ],
        }
    )
    db = tmp_path_factory.mktemp("quick") / "quick.db"
    asyncio.run(run_campaign(config, db))
    return db


def _verify(db: Path, monkeypatch: pytest.MonkeyPatch, *, quick: bool) -> tuple[VerifyResult, int]:
    taken = 0

    def counting(*args: object) -> QuickCounts | None:
        nonlocal taken
        found = quick_verify(*args) if quick else None  # type: ignore[arg-type]
        taken += found is not None
        return found

    monkeypatch.setattr(replay, "quick_verify", counting)
    return verify_log(db), taken


def _key(r: VerifyResult) -> tuple[object, ...]:
    return (r.cases, r.asks, r.verdicts, r.open_cases, r.differences)


def test_a_fresh_log_goes_the_quick_path_with_the_exact_counts(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, taken = _verify(log, monkeypatch, quick=True)
    exact, none = _verify(log, monkeypatch, quick=False)
    assert taken == 50 and none == 0
    assert fast.differences == [] and _key(fast) == _key(exact)


def _tampered(log: Path, tmp_path: Path, kind: str, old: str, new: str) -> Path:
    db = tmp_path / "tampered.db"
    db.write_bytes(log.read_bytes())
    with sqlite3.connect(db) as conn:
        (gseq,) = conn.execute(
            "SELECT min(gseq) FROM events WHERE kind = ? AND instr(payload, ?) > 0", (kind, old)
        ).fetchone()
        conn.execute(
            "UPDATE events SET payload = replace(payload, ?, ?) WHERE gseq = ?", (old, new, gseq)
        )
        # As a log without digests: the edit stands for changed code, which re-derivation
        # must see (with digests, the chain would report the edited event first).
        conn.execute("DROP TABLE IF EXISTS case_digests")
    conn.close()
    return db


@pytest.mark.parametrize(
    ("kind", "old", "new", "what"),
    [
        ("AskSent", "which ones are definitely", "which ones are surely", "ask"),
        ("VerdictReached", '"outcome":"HELD"', '"outcome":"VIOLATED"', "verdict"),
    ],
)
def test_a_difference_leaves_the_quick_path_and_is_listed(
    log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    old: str,
    new: str,
    what: str,
) -> None:
    db = _tampered(log, tmp_path, kind, old, new)
    fast, taken = _verify(db, monkeypatch, quick=True)
    exact, _ = _verify(db, monkeypatch, quick=False)
    assert taken == 49
    assert [m.what for m in fast.differences] == [what]
    assert _key(fast) == _key(exact)


def test_a_tampered_request_alone_leaves_the_quick_path_and_is_listed(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the logged messages change (the ask is left as it was): the quick path's
    # one-call serialisation of the request must still see the difference.
    db = _tampered(
        log,
        tmp_path,
        "AskSent",
        '"messages":[{"role":"user","content":"In',
        '"messages":[{"role":"user","content":"On',
    )
    fast, taken = _verify(db, monkeypatch, quick=True)
    exact, _ = _verify(db, monkeypatch, quick=False)
    assert taken == 49
    assert [m.what for m in fast.differences] == ["request"]
    assert _key(fast) == _key(exact)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"request_key":"', '"request_key":7,"extra":"'),  # a key AskSent does not have
        ('"seed":', '"seed":"not a number","x":'),  # params that do not validate
    ],
)
def test_a_tampered_ask_tail_is_not_passed_by_the_quick_path(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str
) -> None:
    # The exact path rejects such a row as undecodable; the quick path must not pass it.
    db = _tampered(log, tmp_path, "AskSent", old, new)
    with pytest.raises(EventDecodeError):
        _verify(db, monkeypatch, quick=True)
