"""`replay --verify` notices deletions and reordering: a closed case whose events no longer
fold into its recorded outcome (a reply or the verdict deleted, sequence numbers swapped) is
a difference (exit 1), never "still open" and never a read error (exit 2). Checked with the
digest chains (which see it first) and without them (a log written before digests: the
fold and the order of events see it alone)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.verifying.replay import verify_log


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = parse_campaign(
        {
            "name": "deletions",
            "seed": 3,
            "models": [{"name": "sim:planted", "max_in_flight": 4}],
            "relations": [{"name": "metaquerier.mr1", "cases": 6}],
        }
    )
    db = tmp_path_factory.mktemp("deletions") / "deletions.db"
    asyncio.run(run_campaign(config, db))
    return db


def _victim(conn: sqlite3.Connection) -> str:
    """A closed case with a follow-up turn (two relation turns)."""
    row = conn.execute(
        "SELECT case_id FROM events WHERE kind = 'ReplyReceived' AND turn = 1 "
        "ORDER BY case_id LIMIT 1"
    ).fetchone()
    assert row is not None
    return str(row[0])


def _seq(conn: sqlite3.Connection, case: str, where: str) -> int:
    row = conn.execute(
        f"SELECT seq FROM events WHERE case_id = ? AND {where} ORDER BY seq LIMIT 1", (case,)
    ).fetchone()
    assert row is not None, where
    return int(row[0])


def _swap(conn: sqlite3.Connection, case: str, a: str, b: str) -> None:
    first, second = _seq(conn, case, a), _seq(conn, case, b)
    update = "UPDATE events SET seq = ? WHERE case_id = ? AND seq = ?"
    conn.execute(update, (-1, case, first))
    conn.execute(update, (first, case, second))
    conn.execute(update, (second, case, -1))


def _delete(where: str) -> Callable[[sqlite3.Connection, str], None]:
    def delete(conn: sqlite3.Connection, case: str) -> None:
        assert conn.execute(f"DELETE FROM events WHERE case_id = ? AND {where}", (case,)).rowcount

    return delete


def _swapping(a: str, b: str) -> Callable[[sqlite3.Connection, str], None]:
    return lambda conn, case: _swap(conn, case, a, b)


ATTACKS = {
    "follow-up reply deleted": _delete("kind = 'ReplyReceived' AND turn = 1"),
    "first reply deleted": _delete("kind = 'ReplyReceived' AND turn = 0"),
    "verdict deleted": _delete("kind = 'VerdictReached'"),
    "CaseOpened deleted": _delete("kind = 'CaseOpened'"),
    "follow-up ask and its reply deleted": _delete("turn = 1"),
    "follow-up asked before the reply it depends on": _swapping(
        "kind = 'ReplyReceived' AND turn = 0", "kind = 'AskSent' AND turn = 1"
    ),
    "reply before its ask": _swapping(
        "kind = 'AskSent' AND turn = 1", "kind = 'ReplyReceived' AND turn = 1"
    ),
    "verdict after CaseClosed": _swapping("kind = 'VerdictReached'", "kind = 'CaseClosed'"),
    "CaseOpened not first": _swapping("kind = 'CaseOpened'", "kind = 'AskSent' AND turn = 0"),
    "verdict before the last reply": _swapping(
        "kind = 'ReplyReceived' AND turn = 1", "kind = 'VerdictReached'"
    ),
}


def test_the_untouched_log_verifies(log: Path) -> None:
    result = verify_log(log)
    assert result.differences == [] and result.open_cases == 0 and result.cases == 6
    assert CliRunner().invoke(main, ["replay", str(log), "--verify"]).exit_code == 0


@pytest.mark.parametrize("digests", ["with digests", "without digests"])
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_closed_case_that_no_longer_folds_is_a_difference(
    log: Path, tmp_path: Path, attack: str, digests: str
) -> None:
    db = tmp_path / "tampered.db"
    db.write_bytes(log.read_bytes())
    with sqlite3.connect(db) as conn:
        case = _victim(conn)
        ATTACKS[attack](conn, case)
        if digests == "without digests":
            conn.execute("DROP TABLE case_digests")
    conn.close()
    result = verify_log(db)
    assert result.differing_cases == [case], (attack, result.differences)
    assert result.open_cases == 0, attack  # not counted "still open"
    out = CliRunner().invoke(main, ["replay", str(db), "--verify"])
    assert out.exit_code == 1, (attack, out.output)
    assert f"{case}:" in out.output
    expected = "committed events" if digests == "with digests" else None
    whats = {m.what for m in result.differences}
    assert (expected in whats) if expected else ("committed events" not in whats), whats
