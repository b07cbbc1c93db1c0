"""Log format 2 (`harness copy --compact`, `import --compact`) carries the same digest chains
as format 1: its writer chains each case over the same event bytes, and a copy (compact or
not, into SQLite or PostgreSQL) carries its source's chains once the rows copied are proved
to make them; so `replay --verify` on a compact copy finds an edited, deleted or reordered
event that re-deriving the case cannot see."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store import case_digest
from harness.store.copy import copy_log
from harness.store.schema import connect
from harness.store.writer import EncodedEvent, EventWriter
from harness.verifying.replay import describe, verify_log
from harness.vocabulary.errors import StoreError

CAMPAIGN = {
    "name": "compact-digests",
    "seed": 11,
    "models": [{"name": "sim:planted", "max_in_flight": 4}],
    "relations": [{"name": "metaquerier.mr1", "cases": 4}],
}


def _run(db: Path) -> None:
    asyncio.run(run_campaign(parse_campaign(dict(CAMPAIGN)), str(db)))


def _sql(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with connect(db) as conn:  # with the SQL function format 2's views use
        rows = conn.execute(sql, params).fetchall()
    conn.close()
    return rows


def _chains(db: Path) -> list[tuple[Any, ...]]:
    return _sql(db, "SELECT campaign, case_id, seq, links FROM case_digests ORDER BY 1, 2")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("compact") / "source.db"
    _run(db)
    return db


def _compact_copy(source: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy.db"
    copy_log(source, copy, compact=True)
    assert _sql(copy, "SELECT value FROM meta WHERE key = 'format'")[0][0].endswith("/2")
    return copy


def test_a_compact_copy_carries_its_source_s_chains_and_verifies_as_it(
    source: Path, tmp_path: Path
) -> None:
    copy = _compact_copy(source, tmp_path)
    assert _chains(copy) == _chains(source) and len(_chains(source)) == 5  # 4 cases + campaign
    result = verify_log(str(copy))
    assert result.differences == [] and result.digested == 4 and result.undigested == 0
    assert "every case checked against its digest" in next(describe(result))
    # A plain copy (format 1) carries them as well.
    plain = tmp_path / "plain.db"
    copy_log(source, plain)
    assert _chains(plain) == _chains(source)


def test_the_compact_writer_chains_exactly_as_the_format_1_writer(tmp_path: Path) -> None:
    rows: list[EncodedEvent] = [
        ("c", "", 1, "CampaignStarted", 1, None, None, '{"x":"a campaign-level event"}'),
        ("c", "k1", 1, "CaseOpened", 1, None, None, '{"case":"k1","text":"' + "q" * 40 + '"}'),
        ("c", "k1", 2, "AskSent", 1, 0, 1, '{"prompt":"' + "p" * 30 + '","seed":123456}'),
        ("c", "k2", 1, "CaseOpened", 1, None, None, '{"case":"k2"}'),
        ("c", "k1", 3, "ReplyReceived", 2, 0, 1, '{"reply":{"text":"\\u00e9 yes"}}'),
    ]

    async def write(db: Path, compact: bool) -> None:
        async with await EventWriter.open(db, compact=compact) as store:
            await store.append_many(rows[:3])
            await store.append_many(rows[3:])

    asyncio.run(write(tmp_path / "f1.db", False))
    asyncio.run(write(tmp_path / "f2.db", True))
    assert _chains(tmp_path / "f1.db") == _chains(tmp_path / "f2.db")
    assert len(_chains(tmp_path / "f2.db")) == 3
    # and the chain is the one the module defines, over the events' bytes
    links = b""
    previous = case_digest.chain_start("c", "k1")
    for _c, case, seq, kind, version, turn, attempt, payload in rows:
        if case == "k1":
            previous = case_digest.link(
                previous, case_digest.row_digest(seq, kind, version, turn, attempt, payload)
            )
            links += previous
    assert ("c", "k1", 3, links) in _chains(tmp_path / "f2.db")


def _closed_case(db: Path) -> str:
    return str(_sql(db, "SELECT min(case_id) FROM events WHERE kind = 'CaseClosed'")[0][0])


def _seq(db: Path, case: str, kind: str, turn: int | None = None) -> int:
    where = "" if turn is None else f" AND turn = {turn}"
    sql = f"SELECT seq FROM events WHERE case_id = ? AND kind = ?{where}"
    return int(_sql(db, sql, (case, kind))[0][0])


def _edit_reply_text(db: Path, case: str) -> tuple[int, str]:
    # One byte of the follow-up's reply text, through the view (its trigger stores the new
    # payload): the chain sees it whatever the relation makes of the new text.
    seq = _seq(db, case, "ReplyReceived", 1)
    sql = "SELECT payload FROM events WHERE case_id = ? AND seq = ?"
    (payload,) = _sql(db, sql, (case, seq))[0]
    at = payload.index('"text":"') + len('"text":"')
    edited = payload[:at] + ("X" if payload[at] != "X" else "Y") + payload[at + 1 :]
    _sql(db, "UPDATE events SET payload = ? WHERE case_id = ? AND seq = ?", (edited, case, seq))
    return seq, f"event #{seq} (ReplyReceived) differs"


def _delete_an_event(db: Path, case: str) -> tuple[int, str]:
    seq = _seq(db, case, "ReplyReceived", 0)
    _sql(db, "DELETE FROM events WHERE case_id = ? AND seq = ?", (case, seq))
    # the event after it is now at the deleted one's position in the chain
    return seq + 1, f"event #{seq + 1} (AskSent) differs"


def _reorder(db: Path, case: str) -> tuple[int, str]:
    # The two turns' AskSent swap places, in the format-2 table itself.
    a, b = _seq(db, case, "AskSent", 0), _seq(db, case, "AskSent", 1)
    key = "(SELECT key FROM cases WHERE name = ?)"
    for old, new in ((a, -1), (b, a), (-1, b)):
        _sql(db, f"UPDATE log SET seq = ? WHERE case_key = {key} AND seq = ?", (new, case, old))
    return a, f"event #{a} (AskSent) differs"


EDITS = {"a byte of a reply's text": _edit_reply_text, "an event deleted": _delete_an_event}
EDITS["two events reordered"] = _reorder


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_tampered_compact_copy_is_reported_with_the_first_event_that_differs(
    source: Path, tmp_path: Path, edit: str
) -> None:
    copy = _compact_copy(source, tmp_path)
    case = _closed_case(copy)
    seq, said = EDITS[edit](copy, case)
    result = verify_log(str(copy))
    assert result.differing_cases == [case], result.differences
    mismatch = result.differences[0]
    assert mismatch.what == "committed events", mismatch
    assert said in mismatch.replayed and f"event #{seq} " in mismatch.replayed, mismatch
    # and a copy of the tampered copy is refused, naming the case and an event that differs
    # (the copy reads in log order: after a reorder, the one that took the committed place),
    # leaving no file
    kind = said.split("(")[1].split(")")[0]
    refused = rf"case {re.escape(case)} of campaign \w+: event #\d+ \({kind}\) differs"
    with pytest.raises(StoreError, match=refused):
        copy_log(copy, tmp_path / "again.db", compact=True)
    assert not (tmp_path / "again.db").exists()


def test_a_copy_of_a_log_without_digests_has_none_and_says_so(source: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    copy_log(source, old)
    _sql(old, "DROP TABLE case_digests")
    copy = _compact_copy(old, tmp_path)
    assert _chains(copy) == []
    result = verify_log(str(copy))
    assert result.differences == [] and result.digested == 0 and result.undigested == 4
    assert "written before digests" in next(describe(result))


def test_a_copy_into_postgresql_carries_the_chains(
    source: Path, tmp_path: Path, pg_url: str
) -> None:
    copy_log(source, pg_url)
    result = verify_log(pg_url)
    assert result.differences == [] and result.digested == 4
    back = tmp_path / "back.db"
    copy_log(pg_url, back, compact=True)
    assert _chains(back) == _chains(source)


_ROW = st.tuples(
    st.sampled_from(["a", "b", "c"]),  # case
    st.sampled_from(["AskSent", "ReplyReceived"]),
    st.text(max_size=30),  # payload
    st.booleans(),  # a commit ends after this row
)


@given(st.lists(_ROW, min_size=1, max_size=25))
@settings(max_examples=60, deadline=None)
def test_one_statement_a_case_chains_as_one_an_event(
    events: list[tuple[str, str, str, bool]],
) -> None:
    # The SQLite writer's params (a case's events of a commit in one statement) give the
    # table the per-event params (as PostgreSQL's writer runs them) give, commit by commit.
    seqs: dict[str, int] = {}
    commits: list[list[EncodedEvent]] = [[]]
    for case, kind, payload, ends in events:
        seqs[case] = seqs.get(case, 0) + 1
        commits[-1].append(("c", case, seqs[case], kind, 1, 0, 1, payload))
        if ends:
            commits.append([])
    tables = []
    for merged in (True, False):
        conn = sqlite3.connect(":memory:")
        conn.execute(case_digest.SQLITE_SCHEMA)
        conn.create_function("harness_chain", 2, case_digest.sqlite_chain, deterministic=True)
        for rows in commits:
            params = case_digest.sqlite_write_params if merged else case_digest.write_params
            starts, extends = params(rows)
            conn.executemany(case_digest.SQLITE_START, starts)
            conn.executemany(case_digest.SQLITE_EXTEND, extends)
        tables.append(conn.execute("SELECT * FROM case_digests ORDER BY case_id").fetchall())
        conn.close()
    assert tables[0] == tables[1]
    assert len(tables[0]) == len(seqs)
