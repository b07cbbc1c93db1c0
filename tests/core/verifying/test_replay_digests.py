"""Each case's digest chain, written with its events (SQLite and PostgreSQL), makes
`replay --verify` report any edited, deleted or inserted committed event with the first
one that differs, even where re-deriving the case cannot see it; a log without digests
verifies as before and says so."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store import case_digest
from harness.verifying.replay import describe, verify_log

CAMPAIGN = {
    "name": "digests",
    "seed": 9,
    "models": [{"name": "sim:planted", "max_in_flight": 4}],
    "relations": [{"name": "metaquerier.mr1", "cases": 4}],
}


def _run(target: str) -> None:
    asyncio.run(run_campaign(parse_campaign(dict(CAMPAIGN)), target))


class Sql:
    """Ad-hoc SQL on the log, whichever store (an operator's tools, editing it)."""

    def __init__(self, target: str) -> None:
        self.pg = target.startswith("postgresql://")
        self.target = target

    def __call__(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.pg:
            import psycopg

            with psycopg.connect(self.target, autocommit=True) as conn:
                cur = conn.execute(sql.replace("?", "%s"), params)
                return list(cur.fetchall()) if cur.description else []
        with sqlite3.connect(self.target) as conn:
            rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "digests.db")
    return str(request.getfixturevalue("pg_url"))


def _a_closed_case(sql: Sql) -> str:
    return str(
        sql("SELECT min(case_id) FROM events WHERE kind = 'CaseClosed' AND case_id != ''")[0][0]
    )


def _seq_of(sql: Sql, case: str, kind: str, turn: int | None = None) -> int:
    where = "" if turn is None else f" AND turn = {turn}"
    return int(
        sql(f"SELECT seq FROM events WHERE case_id = ? AND kind = ?{where}", (case, kind))[0][0]
    )


def test_an_untouched_log_is_checked_against_every_digest(target: str) -> None:
    _run(target)
    result = verify_log(target)
    assert result.differences == [] and result.cases == 4
    assert result.digested == 4 and result.undigested == 0
    assert "every case checked against its digest" in next(describe(result))


def _edit_reply_metadata(sql: Sql, case: str) -> int:
    # The latency of the follow-up's reply: nothing re-derives it, so only the chain sees it.
    seq = _seq_of(sql, case, "ReplyReceived", 1)
    sql(
        "UPDATE events SET payload = replace(payload, '\"latency_s\":', '\"latency_s\":1')"
        " WHERE case_id = ? AND seq = ?",
        (case, seq),
    )
    return seq


def _delete_the_end(sql: Sql, case: str) -> int:
    # The verdict and CaseClosed: what is left looks like a case stopped after its replies.
    seq = _seq_of(sql, case, "VerdictReached")
    sql("DELETE FROM events WHERE case_id = ? AND seq >= ?", (case, seq))
    return seq


def _delete_the_case(sql: Sql, case: str) -> int:
    sql("DELETE FROM events WHERE case_id = ?", (case,))
    return 0


EDITS: dict[str, tuple[Callable[[Sql, str], int], str]] = {
    "a byte of a reply nothing re-derives": (_edit_reply_metadata, "(ReplyReceived) differs"),
    "the verdict and CaseClosed deleted": (_delete_the_end, "are missing"),
    "every event of the case deleted": (_delete_the_case, "no event of the case is left"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_committed_event_is_reported_with_the_first_that_differs(
    target: str, edit: str
) -> None:
    _run(target)
    sql = Sql(target)
    case = _a_closed_case(sql)
    change, said = EDITS[edit]
    seq = change(sql, case)
    result = verify_log(target)
    assert result.differing_cases == [case], result.differences
    mismatch = result.differences[0]
    assert mismatch.what == "committed events" and said in mismatch.replayed
    if said.endswith("differs"):
        assert f"event #{seq} " in mismatch.replayed
    # The same edit in a log without digests: re-derivation alone does not see it.
    sql("DROP TABLE case_digests")
    before = verify_log(target)
    assert before.differences == [] and before.digested == 0
    assert "written before digests" in next(describe(before))


def test_a_log_written_before_digests_gets_them_for_new_cases_only(tmp_path: Path) -> None:
    # An old log resumed by this code: its cases begun before keep no chain (never a
    # false difference), cases begun now have one.
    db = str(tmp_path / "old.db")
    _run(db)
    sql = Sql(db)
    sql("DROP TABLE case_digests")
    old_case = _a_closed_case(sql)
    _delete_the_end(sql, old_case)  # open again: resume closes it, appending to its events
    sql("DELETE FROM events WHERE case_id > ?", (old_case,))  # later cases: run afresh
    from harness.running.runner import resume_campaign

    summary = asyncio.run(resume_campaign(db))
    assert summary.status == "completed"
    result = verify_log(db)
    assert result.differences == []
    assert result.undigested == 1 and result.digested == 3, (result.digested, result.undigested)
    assert "begun before digests were not" in next(describe(result))


def test_the_chain_is_what_the_module_says() -> None:
    # Links chain over (seq, kind, version, turn, attempt, payload) from the case's start.
    rows = [(1, "CaseOpened", 1, None, None, "{}"), (2, "AskSent", 1, 0, 1, '{"a":1}')]
    links = b""
    previous = case_digest.chain_start("c", "x")
    for row in rows:
        previous = case_digest.link(previous, case_digest.row_digest(*row))
        links += previous
    assert case_digest.verify_chain("c", "x", rows, links, 2) is None
    assert case_digest.verify_chain("c", "y", rows, links, 2) is not None  # another case's
    swapped = [rows[0], (2, "AskSent", 1, 0, 2, '{"a":1}')]
    broken = case_digest.verify_chain("c", "x", swapped, links, 2)
    assert broken is not None and broken.seq == 2
