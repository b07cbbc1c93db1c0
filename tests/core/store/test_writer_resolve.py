"""The SQLite writer resolves an append's future from the commit thread's callback, one turn
of the loop after the commit: the rows must already be committed (visible to another
connection) whenever a future resolves, for every batch of a group."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.events import Note


async def test_rows_are_committed_when_their_future_resolves(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    seen: dict[str, int] = {}

    def check(case_id: str, future: asyncio.Future[list[int]]) -> None:
        with sqlite3.connect(db) as other:  # another connection sees committed rows only
            (n,) = other.execute(
                "SELECT count(*) FROM events WHERE case_id = ?", (case_id,)
            ).fetchone()
        seen[case_id] = n

    async with await EventWriter.open(db) as store:
        futures = []
        for i in range(300):
            case_id = f"case{i}"
            future = store.append_soon(
                [PendingEvent("c", case_id, s, Note(topic="t")) for s in (1, 2)]
            )
            future.add_done_callback(lambda f, c=case_id: check(c, f))
            futures.append(future)
            if i % 50 == 0:
                await asyncio.sleep(0)  # let groups of different sizes form
        results = await asyncio.gather(*futures)
        assert store.commits >= 1 and store.events_written == 600
    assert seen == {f"case{i}": 2 for i in range(300)}
    assert all(b - a == 1 for a, b in results)
