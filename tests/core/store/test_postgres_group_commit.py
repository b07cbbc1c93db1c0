"""The PostgreSQL writer's group commit across workers (issue 36): a group's transaction
takes the commit lock and commits without waiting for its WAL flush, and a second, durable
transaction waits for the flush after the lock is free. So one worker's slow flush never holds
every other worker's commits back, and an append still returns only once durable.

A slow flush is made on a server of the test's own: a synchronous standby that never comes
(``synchronous_standby_names``) makes every durable commit wait, at the point where a flush
waits, until the setting is cleared; a commit made without waiting for its flush does not wait
for it either."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from harness.store.open import open_writer
from harness.store.writer import PendingEvent
from harness.vocabulary.events import Note


@pytest.fixture(scope="module")
def own_server() -> Iterator[Any]:
    """A throwaway server whose durable commits this module may stall (not the session's)."""
    from tests.postgres_server import server_or_skip

    with server_or_skip() as server:
        yield server


def _standby(server: Any, names: str) -> None:
    server.admin(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
    server.admin("SELECT pg_reload_conf()")
    time.sleep(1.0)  # every backend (and the checkpointer, which tells them) has reloaded


async def _visible(url: str, case_id: str, within_s: float) -> bool:
    """Whether an event of ``case_id`` is committed (seen by another session) within the time."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for _ in range(int(within_s / 0.05)):
            cur = await conn.execute("SELECT count(*) FROM events WHERE case_id = %s", (case_id,))
            row = await cur.fetchone()
            if row is not None and row[0] > 0:
                return True
            await asyncio.sleep(0.05)
    return False


async def test_a_stalled_flush_holds_neither_the_lock_nor_an_early_reply(own_server: Any) -> None:
    url = own_server.url(own_server.create_database())
    a = await open_writer(url)
    b = await open_writer(url)
    try:
        assert a.flush_after_lock and b.flush_after_lock  # type: ignore[attr-defined]
        _standby(own_server, "never_comes")
        try:
            first = asyncio.ensure_future(a.append([PendingEvent("c", "a1", 1, Note(topic="t"))]))
            # Before: a's own commit waited for the flush (its lock held): never visible.
            assert await _visible(url, "a1", 5.0), "a's commit waited for its flush"
            # a's commit is done and its lock free while its flush waits: b commits too.
            second = asyncio.ensure_future(b.append([PendingEvent("c", "b1", 1, Note(topic="t"))]))
            assert await _visible(url, "b1", 5.0), "b's commit waited for a's flush"
            await asyncio.sleep(0.3)
            # Neither append returned: their events are not durable yet.
            assert not first.done() and not second.done()
        finally:
            _standby(own_server, "")
        ids_a, ids_b = await asyncio.wait_for(asyncio.gather(first, second), 10.0)
        assert ids_a == [1] and ids_b == [2]  # gseq and batches in commit order
    finally:
        await a.close()
        await b.close()
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT case_id, batch FROM events ORDER BY gseq").fetchall()
    assert rows == [("a1", 1), ("b1", 2)]


async def test_a_role_that_may_not_write_the_flush_record_commits_durably_under_the_lock(
    own_server: Any,
) -> None:
    name = own_server.create_database()
    own_server.admin("CREATE ROLE plain_writer LOGIN")
    own_server.admin(f"ALTER DATABASE {name} OWNER TO plain_writer")
    with psycopg.connect(own_server.url(name), autocommit=True) as conn:  # this database's
        conn.execute(
            "REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM PUBLIC"
        )
    url = own_server.url(name, user="plain_writer")
    async with await open_writer(url) as store:
        assert not store.flush_after_lock  # type: ignore[attr-defined]
        ids = await store.append([PendingEvent("c", "k", 1, Note(topic="t"))])
        _standby(own_server, "never_comes")
        try:
            # Durable under the lock: the commit itself waits, so nothing is visible yet.
            late = asyncio.ensure_future(
                store.append([PendingEvent("c", "k2", 1, Note(topic="t"))])
            )
            assert not await _visible(own_server.url(name), "k2", 0.5)
            assert not late.done()
        finally:
            _standby(own_server, "")
        assert await asyncio.wait_for(late, 10.0) == [2]
    assert ids == [1]
