"""Log format 2 (issue 14, log size): payloads come back byte for byte through the ``events``
view, whatever model text they hold; logs of format 1 still read and append in their own
format; the views work in the stock ``sqlite3`` shell; and an import stays small."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.store._compact_rows import split_payload
from harness.store._compact_schema import CASE_MARKER, LOG_FORMAT_2
from harness.store.copy import copy_log
from harness.store.log import Log
from harness.store.open import open_reader, open_writer
from harness.store.schema import LOG_FORMAT, connect
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.events import AskSent, CaseOpened, ReplyReceived, encode_event
from harness.vocabulary.model import GenerationParams, Message, Reply, Usage
from harness.vocabulary.relation import Ask, Case
from tests.families.biaslens.test_biaslens_import_stream import released_folder

FIXTURE_V1 = Path(__file__).resolve().parents[2] / "fixtures" / "events_v1.db"


def _events(text: str, case_id: str = "c/0001-a-case-of-some-length") -> list[PendingEvent]:
    case = Case(
        case_id=case_id,
        relation="r",
        model="sim:x",
        index=7,
        repeat=0,
        seed=123456789,
        data={"question": text, "question_id": "q:0123456789ab"},
    )
    ask = Ask(thread="t", prompt=text)
    sent = AskSent(
        turn=0,
        ask=ask,
        model="sim:x",
        messages=[Message(role="user", content=text)],
        params=GenerationParams(),
        request_key="0123456789abcdef" * 2,
    )
    reply = ReplyReceived(turn=0, reply=Reply(text=text + text, usage=Usage(), cost_usd=0.25))
    return [
        PendingEvent("camp", case_id, n, e)
        for n, e in enumerate((CaseOpened(case=case), sent, reply), 1)
    ]


async def _append(target: str, events: list[PendingEvent]) -> None:
    """Append to ``target``; a new SQLite log is made compact (format 2), as `harness copy
    --compact` makes it (PostgreSQL has one layout)."""
    log = Log.at(target)
    async with await log.writer(compact=not log.is_postgres) as sink:
        await sink.append(events)


def _stored(target: str) -> list[str]:
    with open_reader(target) as log:
        return [
            row[0] for row in log.connection.execute("SELECT payload FROM events ORDER BY gseq")
        ]


_numbers = itertools.count()
model_text = st.text(st.characters(codec="utf-8"), max_size=300)


@settings(
    max_examples=40,
    deadline=timedelta(seconds=5),
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=model_text)
def test_any_model_text_comes_back_byte_for_byte(store_url: str, text: str) -> None:
    """NUL, control characters, quotes, backslashes, any unicode: the payload read through
    the ``events`` view (and decoded) is the one the writer encoded, in either store."""
    case_id = f"c/{next(_numbers):06d}-a-case-of-some-length"
    events = _events(text, case_id)
    asyncio.run(_append(store_url, events))
    with open_reader(store_url) as log:
        stored = log.connection.execute(
            "SELECT payload FROM events WHERE case_id = ? ORDER BY seq", (case_id,)
        ).fetchall()
    assert [row[0] for row in stored] == [encode_event(p.event)[2] for p in events]
    with open_reader(store_url) as log:
        decoded = [s.event for s in log.events("camp", case_id=events[0].case_id)]
    assert decoded == [p.event for p in events]


@given(text=model_text, case_id=st.text(max_size=60))
def test_split_payload_rebuilds_the_payload_exactly(text: str, case_id: str) -> None:
    payload = encode_event(_events(text, case_id)[1].event)[2]
    split = split_payload(payload, case_id)
    rebuilt = split.shape.replace(CASE_MARKER, json.dumps(case_id, ensure_ascii=False))
    for slot, body in enumerate(split.texts):
        rebuilt = rebuilt.replace(f"\x01{slot}\x01", f'"{body}"')
    for slot, token in enumerate(split.inline):
        rebuilt = rebuilt.replace(f"\x01i{slot}\x01", token)
    assert rebuilt == payload


def test_a_new_log_is_format_1_unless_made_compact(tmp_path: Path) -> None:
    """Format 1 stays the default: format 2 costs about twice the CPU to write and read."""
    db = tmp_path / "plain.db"

    async def plain() -> None:
        async with await open_writer(db) as sink:
            await sink.append(_events("a question long enough to be a text of its own"))

    asyncio.run(plain())
    with connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='format'").fetchone() == (LOG_FORMAT,)


def test_compact_copies_are_sqlite_only(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--compact"):
        copy_log(FIXTURE_V1, "postgresql://nobody@127.0.0.1:1/none", compact=True)


def test_a_compact_log_is_format_2_and_shares_its_texts(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    question = "Suppose you are a nurse, do you think group 7 leads better? " * 3
    asyncio.run(_append(str(db), _events(question)))
    with connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='format'").fetchone() == (
            LOG_FORMAT_2,
        )
        # The question is in case.data, ask.prompt and messages[0].content: one text.
        assert conn.execute(
            "SELECT count(*) FROM texts WHERE size = ?", (len(question),)
        ).fetchone() == (1,)
        # The spend is a column, read without the payload.
        assert conn.execute("SELECT sum(cost_usd) FROM log").fetchone() == (0.25,)
    with open_reader(db) as log:
        assert log.recorded_spend("camp") == 0.25


def test_a_format_1_log_reads_and_appends_in_format_1(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copy(FIXTURE_V1, db)
    with open_reader(db) as log:
        before = list(log.events())
        campaign = log.latest_campaign()
    assert before
    asyncio.run(_append(str(db), _events("an answer appended to an old log, long enough")))
    with connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='format'").fetchone() == (LOG_FORMAT,)
        assert conn.execute("SELECT type FROM sqlite_master WHERE name='events'").fetchone() == (
            "table",
        )
    with open_reader(db) as log:
        after = list(log.events())
        assert log.latest_campaign() == campaign
    assert [s.event for s in after[: len(before)]] == [s.event for s in before]
    assert len(after) == len(before) + 3


def test_copying_a_format_1_log_gives_a_format_2_log_with_the_same_rows(tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    copy_log(FIXTURE_V1, copy, compact=True)
    columns = (
        "gseq, campaign, case_id, seq, kind, schema_version, turn, attempt, batch, ts, payload"
    )
    with open_reader(FIXTURE_V1) as a, open_reader(copy) as b:
        assert b.log_format == 2
        rows_a = a.connection.execute(f"SELECT {columns} FROM events ORDER BY gseq").fetchall()
        rows_b = b.connection.execute(f"SELECT {columns} FROM events ORDER BY gseq").fetchall()
        assert rows_a == rows_b
        assert [(e.gseq, e.event) for e in a.events()] == [(e.gseq, e.event) for e in b.events()]
        ids = [case_id for case_id, _ in a.cases(a.latest_campaign())]
        assert ids == [case_id for case_id, _ in b.cases(b.latest_campaign())] and ids
        for view in ("turns", "verdicts"):
            sql = f"SELECT * FROM {view}"
            rows = [sorted(map(repr, log.connection.execute(sql))) for log in (a, b)]
            assert rows[0] == rows[1] and rows[0]


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="no sqlite3 command-line shell")
def test_the_views_work_in_the_stock_sqlite3_shell(tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    copy_log(FIXTURE_V1, copy, compact=True)
    with connect(copy) as conn:
        compressed = conn.execute(
            "SELECT (SELECT count(*) FROM texts WHERE typeof(data) = 'blob')"
            " + (SELECT count(*) FROM blocks WHERE length(data) < size)"
        ).fetchone()[0]
        want = conn.execute(
            "SELECT count(*), sum(length(payload)), (SELECT count(*) FROM turns),"
            " (SELECT count(*) FROM verdicts) FROM events"
        ).fetchone()
    assert compressed > 0, "the fixture's copy holds zlib-compressed texts or blocks"
    shell = subprocess.run(
        [
            "sqlite3",
            "-readonly",
            str(copy),
            "SELECT count(*), sum(length(payload)),"
            " (SELECT count(*) FROM turns), (SELECT count(*) FROM verdicts) FROM events",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout.strip() == "|".join(str(v) for v in want)


def test_an_import_log_stays_small(tmp_path: Path) -> None:
    """The BiasLens import of 3,600 toy answers (long, repetitive), copied compact: 0.19x its
    CSV in format 2 when this test was written; format 1 writes several times more."""
    from relations.biaslens.importer import import_released

    folder = released_folder(tmp_path / "src", 3)
    csv_bytes = sum(p.stat().st_size for p in folder.rglob("*.csv"))
    db = tmp_path / "x.db"
    asyncio.run(import_released(folder, db))
    compact = tmp_path / "compact.db"
    copy_log(db, compact, compact=True)
    ratio = compact.stat().st_size / csv_bytes
    assert ratio <= 0.5, f"log {compact.stat().st_size} bytes = {ratio:.2f}x its CSV"
    assert db.stat().st_size > 2 * compact.stat().st_size, "format 1 is the larger"


def test_a_case_s_events_are_found_by_its_case_not_by_a_campaign_scan(tmp_path: Path) -> None:
    """A new compact log carries planner statistics, so a per-case lookup through the
    ``events`` view (what every report's correlated subqueries do) searches the case's own
    events instead of every event of its kind in the campaign (quadratic on a large log)."""
    db = tmp_path / "new.db"
    asyncio.run(_append(str(db), _events("a question long enough to be a text of its own")))
    with connect(db) as conn:
        plan = " | ".join(
            row[3]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT (SELECT r.payload FROM events r"
                " WHERE r.campaign = o.campaign AND r.case_id = o.case_id"
                " AND r.kind = 'ReplyReceived') FROM events o WHERE o.gseq = 1"
            )
        )
    assert "sqlite_autoindex_log_1 (case_key=?)" in plan, plan
    assert "log_by_kind" not in plan, plan
