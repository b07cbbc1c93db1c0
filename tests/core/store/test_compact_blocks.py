"""Log format 2's current layout (issue 14, log size <= 1.5x the CSV): a commit's texts
packed in zlib blocks, a batch's timestamp stored once, integer and hex tokens stored
typed, no (campaign, kind) index; a format-2 log written before that layout
(tests/fixtures/events_v2_before_blocks.db, `harness copy --compact` of events_v1.db at
008794e) still reads, and appends in its own layout."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from harness.store import _compact_texts as compact_texts
from harness.store import _sqlar as sqlar
from harness.store.open import open_reader, open_writer
from harness.store.writer import PendingEvent
from harness.vocabulary.events import CaseOpened, ReplyReceived, encode_event
from harness.vocabulary.model import Reply
from harness.vocabulary.relation import Case

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BEFORE_BLOCKS = FIXTURES / "events_v2_before_blocks.db"
FIXTURE_V1 = FIXTURES / "events_v1.db"


def _answers(n: int, tag: str, words: str = "") -> list[PendingEvent]:
    """Cases ``c/<tag>/<i>``; their texts differ by ``words`` (the tag unless given)."""
    words = words or tag
    events: list[PendingEvent] = []
    for i in range(n):
        case_id = f"c/{tag}/{i:05d}"
        case = Case(case_id=case_id, relation="r", model="m", index=i, repeat=0,
                    seed=10**17 + i, data={"question": f"question {words}{i} " * 9})  # fmt: skip
        reply = Reply(
            text=f"answer {words}{i}, in words that recur from one answer to the next " * 4
        )
        events.append(PendingEvent("camp", case_id, 1, CaseOpened(case=case)))
        events.append(PendingEvent("camp", case_id, 2, ReplyReceived(turn=0, reply=reply)))
    return events


async def _append(db: Path, *batches: list[PendingEvent]) -> None:
    async with await open_writer(str(db), compact=True) as sink:
        for batch in batches:
            await sink.append(batch)


def _payloads(db: Path) -> list[str]:
    with open_reader(db) as log:
        sql = "SELECT payload FROM events WHERE kind != 'CampaignStarted' ORDER BY gseq"
        return [row[0] for row in log.connection.execute(sql)]


def test_a_commit_s_texts_are_packed_in_blocks_and_come_back_exactly(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    first, second = _answers(60, "a"), _answers(60, "b")
    asyncio.run(_append(db, first))
    again = _answers(2, "e", words="a")  # the texts of the first two cases, in other cases
    asyncio.run(_append(db, second, again))  # a second writer: texts found again
    want = [encode_event(p.event)[2] for p in first + second]
    assert _payloads(db)[: len(want)] == want
    with sqlar.connect(db) as conn:
        blocks, packed = conn.execute(
            "SELECT (SELECT count(*) FROM blocks), count(*) FROM texts WHERE block IS NOT NULL"
        ).fetchone()
        assert blocks >= 2 and packed >= 120, (blocks, packed)
        # the first case's question and answer, appended again, are the same texts
        keys = [
            conn.execute(
                "SELECT t0 FROM log JOIN cases c ON c.key = log.case_key"
                " WHERE c.name = ? ORDER BY seq",
                (name,),
            ).fetchall()
            for name in ("c/a/00000", "c/e/00000")
        ]
        assert keys[0] == keys[1] and len(set(keys[0])) == 2
        # a batch's timestamp is stored once; the view gives every row its batch's
        assert conn.execute("SELECT count(ts) FROM log").fetchone() == (0,)
        stamps = conn.execute("SELECT count(DISTINCT ts), count(ts) FROM events").fetchone()
        assert stamps[0] == conn.execute("SELECT count(*) FROM batches").fetchone()[0]
        assert stamps[1] == len(want) + 4
        # a seed is an INTEGER in the row; no (campaign, kind) index
        assert conn.execute("SELECT count(*) FROM log WHERE typeof(i0) = 'integer'").fetchone()[0]
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "log_by_kind" not in names
    with open_reader(db) as log:
        events = [s.event for s in log.events("camp")]
    assert events[: len(want)] == [p.event for p in first + second]


def test_texts_of_one_hash_are_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compact_texts, "text_hash", lambda text, size=8: 7)
    db = tmp_path / "collide.db"
    events = _answers(40, "c")
    again = _answers(2, "e", words="c")
    asyncio.run(_append(db, events[:40]))
    asyncio.run(_append(db, events[40:], again))
    assert _payloads(db) == [encode_event(p.event)[2] for p in events + again]


def test_a_log_written_before_blocks_reads_and_appends_in_its_own_layout(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copy(BEFORE_BLOCKS, db)
    with open_reader(FIXTURE_V1) as a, open_reader(db) as b:
        assert b.log_format == 2
        assert [(e.gseq, e.event) for e in a.events()] == [(e.gseq, e.event) for e in b.events()]
        for view in ("events", "turns", "verdicts"):
            rows = [sorted(map(repr, log.connection.execute(f"SELECT * FROM {view}")))
                    for log in (a, b)]  # fmt: skip
            assert rows[0] == rows[1] and rows[0]
    added = _answers(30, "d")
    asyncio.run(_append(db, added))
    with open_reader(db) as log:
        new = [s.event for s in log.events("camp")]
    assert new == [p.event for p in added]
    assert _payloads(db)[-60:] == [encode_event(p.event)[2] for p in added]
    with sqlar.connect(db) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "blocks" not in names and "log_by_kind" in names
        assert conn.execute("SELECT count(*) FROM log WHERE ts IS NULL").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM log WHERE typeof(i0) = 'blob'").fetchone() == (0,)
