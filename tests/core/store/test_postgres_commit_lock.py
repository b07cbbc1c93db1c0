"""The PostgreSQL writers' commit lock (`COMMIT_LOCK`) serialises every worker's commits, so
it must be held only while the server works, never while it waits for a writer process:
one that is slow between round trips (no CPU free, its event loop busy with other tasks)
would otherwise stall every other worker's commits (issue 15, the throughput proof)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg

from harness.store.open import open_reader, open_writer
from harness.store.postgres_schema import COMMIT_LOCK
from harness.store.writer import PendingEvent
from harness.vocabulary.events import Note

SLOW_S = 0.15  # the writer process's pause after each round trip


async def _lock_held_s(url: str, until: asyncio.Future[Any]) -> float:
    """Seconds the commit lock was seen granted, polling every 5 ms until ``until``."""
    held = 0.0
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as probe:
        while not until.done():
            started = time.monotonic()
            cur = await probe.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND classid = %s AND objid = %s",
                (COMMIT_LOCK >> 32, COMMIT_LOCK & 0xFFFF_FFFF),
            )
            row = await cur.fetchone()
            seen = row is not None and row[0] > 0
            await asyncio.sleep(0.005)
            if seen:
                held += time.monotonic() - started
    return held


async def test_the_commit_lock_is_not_held_while_the_writer_process_is_slow(pg_url: str) -> None:
    async with await open_writer(pg_url) as store:
        await store.append([PendingEvent("c", "", 1, Note(topic="first"))])
        conn = store._conn  # type: ignore[attr-defined]
        wait = conn.wait

        async def slow_wait(gen: Any, *args: Any, **kwargs: Any) -> Any:
            result = await wait(gen, *args, **kwargs)
            await asyncio.sleep(SLOW_S)  # the process gets the CPU back only later
            return result

        conn.wait = slow_wait
        batches = [[PendingEvent("c", f"k{i}", 1, Note(topic="t"))] for i in range(5)]
        appends = asyncio.ensure_future(asyncio.gather(*(store.append(b) for b in batches)))
        held = await _lock_held_s(pg_url, appends)
        ids = await appends
        conn.wait = wait
    assert sorted(i for [i] in ids) == [2, 3, 4, 5, 6]
    # Before: lock, read the last batch, savepoint, insert, release, commit were six round
    # trips under the lock, so it was held for five pauses (>= 0.75 s) per commit.
    assert held < SLOW_S, f"commit lock held {held:.2f} s across the writer's round trips"


async def test_values_reach_the_log_exactly_as_given(pg_url: str) -> None:
    """The fast path renders values as SQL literals itself: model text is data, never SQL."""
    nasty = "it's'); DROP TABLE events; -- %s %(x)s \\ \\x00 é 💥 \"q\" $$ E'\\n'"
    async with await open_writer(pg_url) as store:
        await store.append(
            [
                PendingEvent("c", "k", 1, Note(topic=nasty, data={"n": 1.5e-300, "s": nasty})),
                PendingEvent("c", "k", 2, Note(topic="two")),
            ]
        )
    with open_reader(pg_url) as log:
        events = list(log.events())
    assert [e.event for e in events] == [
        Note(topic=nasty, data={"n": 1.5e-300, "s": nasty}),
        Note(topic="two"),
    ]
    assert [(e.case_id, e.seq) for e in events] == [("k", 1), ("k", 2)]
