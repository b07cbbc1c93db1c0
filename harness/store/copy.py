"""Copy an event log between stores (SQLite file <-> PostgreSQL database, either way): every
row as it is (gseq, batch, timestamps and payload bytes), so reports of the copy are
byte-identical to the source's, and every case's digest chain (`harness.store.case_digest`),
checked against the rows copied first: the chains cover the events' canonical bytes, which
either format stores exactly, so a copy (compact or not) verifies as its source, and a
source edited since its events were committed is refused, naming the first case that differs.

The destination must be new (a file that does not exist, or a database without events):
nothing overwrites or merges into a log. Rows stream in chunks and land in one transaction
(a file is built whole in a private file, `harness.store.fresh_log`), so a copy that fails
leaves no half log behind."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.store import _sqlar as sqlar
from harness.store import case_digest
from harness.store._compact_rows import CompactInserter
from harness.store._compact_schema import has_blocks
from harness.store.fresh_log import FreshLog
from harness.store.log import Log, LogLike
from harness.store.postgres_url import PostgresUrl
from harness.store.schema import BULK_PRAGMAS, apply_pragmas
from harness.store.writer import EventWriter
from harness.vocabulary.errors import ConfigError, StoreError

COLUMNS = "gseq, campaign, case_id, seq, kind, schema_version, turn, attempt, batch, ts, payload"
_CHUNK = 500


class _Source:
    """The source's rows in log order, each checked against the source's digest chains as
    it passes (`case_digest.ChainCheck`): the copy gets those chains once all are proved."""

    def __init__(self, source: Log) -> None:
        self.source = source
        self.check = case_digest.ChainCheck(iter(()))

    def rows(self) -> Iterator[tuple[Any, ...]]:
        with self.source.reader() as log:
            conn = log.connection
            if isinstance(conn, sqlite3.Connection) and not conn.in_transaction:
                conn.execute("BEGIN")  # the chains and the rows from one snapshot
            self.check = case_digest.ChainCheck(case_digest.all_chains(conn))
            feed = self.check.feed
            for row in conn.execute(f"SELECT {COLUMNS} FROM events ORDER BY gseq"):
                payload = row[10]
                if not isinstance(payload, str):
                    payload = bytes(payload).decode()
                feed(row[1], row[2], row[3], row[4], row[5], row[6], row[7], payload)
                yield row

    def chains(self) -> list[tuple[str, str, int, bytes]]:
        """The source's chains, once every row has passed; a chain its events no longer
        make (the source was edited since it was committed) stops the copy."""
        broken = self.check.first_break()
        if broken is not None:
            campaign, case_id, what = broken[0], broken[1], broken[2].what
            raise StoreError(
                f"{self.source} was changed after it was written: case {case_id or '<campaign>'}"
                f" of campaign {campaign}: {what}; 'harness replay --verify' shows every "
                "difference; nothing was copied"
            )
        return self.check.rows()


def _chunks(rows: Iterator[tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    chunk: list[tuple[Any, ...]] = []
    for row in rows:
        chunk.append(tuple(row))
        if len(chunk) == _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


async def _create(target: Log) -> None:
    """Lay out an empty PostgreSQL log at ``target`` (the writer creates the tables)."""
    async with await target.writer():
        pass


async def _create_file(partial: Path, compact: bool) -> None:
    """Lay out an empty log in the private file of a log built whole (`FreshLog`)."""
    async with await EventWriter.open(partial, compact=compact, bulk=True):
        pass


def _into_sqlite(path: Path, source: _Source, compact: bool) -> int:
    """Into a new log's private file, gseq kept, with the source's digest chains;
    ``compact``: format 2 (names and texts interned)."""
    n = 0
    rows = source.rows()
    insert = f"INSERT INTO events ({COLUMNS}) VALUES ({','.join('?' * 11)})"
    with contextlib.closing(sqlar.connect(str(path), isolation_level=None)) as conn:
        apply_pragmas(conn, BULK_PRAGMAS)
        inserter = CompactInserter(has_blocks(conn)) if compact else None
        conn.execute("BEGIN IMMEDIATE")
        try:
            for chunk in _chunks(rows):
                if inserter is None:
                    conn.executemany(insert, chunk)
                else:
                    inserter.insert(conn, [row[1:] for row in chunk], [row[0] for row in chunk])
                n += len(chunk)
            conn.executemany(
                "INSERT INTO case_digests (campaign, case_id, seq, links) VALUES (?, ?, ?, ?)",
                source.chains(),
            )
            if inserter is not None:
                conn.execute("ANALYZE")  # the copy's own statistics (compact_schema.PLANNER_STATS)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return n


def _into_postgres(target: PostgresUrl, source: _Source) -> int:
    from harness.store.postgres_driver import psycopg

    n = 0
    rows = source.rows()
    try:
        with psycopg.connect(target.url) as conn, conn.cursor() as cur:
            for chunk in _chunks(rows):
                cur.executemany(
                    f"INSERT INTO events ({COLUMNS}) VALUES ({','.join(['%s'] * 11)})", chunk
                )
                n += len(chunk)
            cur.executemany(
                "INSERT INTO case_digests (campaign, case_id, seq, links) VALUES (%s, %s, %s, %s)",
                source.chains(),
            )
            # New appends continue after the copied rows.
            cur.execute(
                "SELECT setval(pg_get_serial_sequence('events', 'gseq'),"
                " (SELECT coalesce(max(gseq), 0) + 1 FROM events), false)"
            )
    except psycopg.Error as exc:
        raise StoreError(f"copy into {target} failed: {target.scrub(str(exc))}") from exc
    return n


def _count(target: Log) -> int:
    with target.reader() as log:
        row = log.connection.execute("SELECT count(*) FROM events").fetchone()
    return int(row[0]) if row else 0


def copy_log(source: LogLike, destination: LogLike, *, compact: bool = False) -> int:
    """Copy every event of ``source`` into the new log ``destination``; the number copied.
    ``compact``: write the new SQLite log in format 2 (`harness.store._compact_schema`)."""
    source = Log.at(source, field="SRC")
    destination = Log.at(destination, field="DST")
    total = _count(source)  # also checks that the source is a log
    if destination.path is None:
        if compact:
            raise ConfigError(
                "--compact writes log format 2, which only SQLite logs have",
                field="--compact",
                fix="copy into a .db file, or drop --compact for a PostgreSQL destination",
            )
        asyncio.run(_create(destination))
        if _count(destination):
            raise ConfigError(
                f"{destination} already holds events; a copy never merges logs",
                field="DST",
                fix="give an empty database (CREATE DATABASE ...)",
            )
        copied = _into_postgres(destination.postgres("DST"), _Source(source))
    else:
        path = destination.path
        if path.exists():
            raise ConfigError(f"{path} exists", field="DST", fix="give the name of a new file")
        # Built in a private file and published whole: a failed or killed copy leaves no
        # log under the name, and no commit waits for the disk until the end.
        with FreshLog.build(path) as fresh:
            asyncio.run(_create_file(fresh.partial, compact))
            copied = _into_sqlite(fresh.partial, _Source(source), compact)
            fresh.publish()
    if copied != total or _count(destination) != total:
        raise StoreError(f"copy incomplete: {copied} of {total} events")
    return copied
