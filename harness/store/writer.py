"""Write side of the event log: an append-only SQLite file with one writer.

One writer task owns the only writing connection and commits in groups: every append
waiting when a transaction starts goes into it, each batch inside its own savepoint so a
conflicting batch fails alone. Transactions use ``BEGIN IMMEDIATE`` (a deferred
read-then-write transaction cannot be rescued by ``busy_timeout``), the journal is WAL
and ``synchronous=FULL``, so an append whose future has resolved survives a power cut.

Readers (`harness.store.reader.EventReader`) use their own connections and never block
the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from pathlib import Path
from typing import Any, NamedTuple

import aiosqlite

from harness.store import _log_summary as log_summary
from harness.store import _sqlar as sqlar
from harness.store import case_digest
from harness.store._compact_rows import CompactInserter
from harness.store._compact_schema import (
    CHAIN_EXTEND_2,
    CHAIN_START_2,
    CHAIN_STATEMENTS_2,
    LOG_FORMAT_2,
    PLANNER_STATS,
    SCHEMA_2,
)
from harness.store.fresh_log import FreshLog
from harness.store.schema import (
    BULK_PRAGMAS,
    LOG_FORMAT,
    LOG_FORMATS,
    SCHEMA,
    WRITER_PRAGMAS,
    marker_problem,
    unreadable_log,
)
from harness.vocabulary.errors import (
    ConcurrencyError,
    NotAHarnessLogError,
    StoreClosedError,
    StoreError,
)
from harness.vocabulary.events import Event, encode_event

_TURN_KINDS = frozenset({"AskSent", "ReplyReceived", "AskFailed"})


async def _on_connection_thread(
    conn: aiosqlite.Connection, fn: Callable[..., None], *args: Any
) -> None:
    """Run ``fn(*args)`` on ``conn``'s own thread, the only one that may use its sqlite3
    connection, in one hop: aiosqlite's ``_execute`` (private and unannotated, hence typed
    here) is the one way to hand that thread a whole transaction."""
    execute: Callable[..., Awaitable[None]] = conn._execute
    await execute(fn, *args)


class PendingEvent(NamedTuple):
    """An event about to be appended at a given position of its case's stream.

    A named tuple, not a frozen dataclass: the engine builds two or three a turn, and a
    frozen dataclass's ``__init__`` (one ``object.__setattr__`` a field) cost twice as much."""

    campaign: str
    case_id: str
    seq: int
    event: Event


# An event already encoded, as `EventWriter.append_many` takes it: where it goes (campaign,
# case_id, seq), `encode_event`'s (kind, schema_version, payload) of it, and its turn and
# attempt (set for AskSent, ReplyReceived and AskFailed, else None), in the order
# (campaign, case_id, seq, kind, schema_version, turn, attempt, payload). `encoded_event`
# makes one from a `PendingEvent`. A plain tuple: a bulk writer makes hundreds of thousands.
EncodedEvent = tuple[str, str, int, str, int, int | None, int | None, str]
Row = EncodedEvent  # a stored row without its batch number and timestamp (the writer adds them)


def encoded_event(pending: PendingEvent) -> EncodedEvent:
    """``pending`` encoded as `EventWriter.append_many` takes it (what `append` stores)."""
    kind, version, payload = encode_event(pending.event)
    turned = kind in _TURN_KINDS
    turn = getattr(pending.event, "turn", None) if turned else None
    attempt = getattr(pending.event, "attempt", None) if turned else None
    return (pending.campaign, pending.case_id, pending.seq, kind, version, turn, attempt, payload)


@dataclass
class _Batch:
    rows: Sequence[Row]
    ts: float  # when it was appended: every row's ``ts``
    future: asyncio.Future[list[int]] = field(repr=False)


class EventWriter:
    """Async append side of the log. Use ``async with await EventWriter.open(path)``."""

    def __init__(self, conn: aiosqlite.Connection, path: Path, max_group: int) -> None:
        self._conn = conn
        self.path = path
        self._max_group = max_group
        # Batches waiting for the writer task, in append order (None: close). A deque and one
        # future the idle writer waits on, not an asyncio.Queue: a queue's put and get cost
        # ten Python calls a batch, and a turn appends two or three batches.
        self._pending: deque[_Batch | None] = deque()
        self._wakeup: asyncio.Future[None] | None = None  # set while the writer waits
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self._batch_no = 0
        self.commits = 0  # transactions committed (for benchmarks)
        self.events_written = 0
        # Format 2 (new logs) interns names and texts; a format-1 log keeps its own layout,
        # since nothing rewrites a log.
        self._compact: CompactInserter | None = None
        self._table = "events"
        self._unsummarised = 0  # events appended since the log's summaries last moved
        # A log built whole has one writer: the rows a summary move covers are the ones it
        # appended since the last, which it keeps for that move (`log_summary.HeldRows`).
        self._held: log_summary.HeldRows | None = None
        self._bulk_statements: dict[bytes, str] = {}  # `_insert_bulk`'s, by pattern

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        create: bool = True,
        max_group: int = 512,
        compact: bool = False,
        bulk: bool = False,
    ) -> EventWriter:
        """``compact``: a log created here is written in format 2 (`harness.store._compact_schema`:
        about 5x smaller, slower to write and read); an existing log keeps its own format.
        ``bulk``: commits are not durable one by one (`BULK_PRAGMAS`), only for the private
        file of a log built whole (`harness.store.fresh_log`), which is synced when published."""
        path = Path(path)
        if not create and not path.exists():
            raise StoreError(f"{path} does not exist")
        try:
            conn = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open event log {path}: {exc}") from exc
        try:
            return await cls._prepare(conn, path, max_group, compact, bulk)
        except BaseException:
            await conn.close()  # its thread would otherwise keep the process alive
            raise

    @classmethod
    async def _prepare(
        cls, conn: aiosqlite.Connection, path: Path, max_group: int, compact: bool, bulk: bool
    ) -> EventWriter:
        try:
            for pragma in BULK_PRAGMAS if bulk else WRITER_PRAGMAS:
                await conn.execute(pragma)
            await conn.create_function("sqlar_uncompress", 2, sqlar.uncompress, deterministic=True)
            async with conn.execute("SELECT count(*) FROM sqlite_master") as cur:
                row = await cur.fetchone()
            fresh = row is not None and row[0] == 0
            if fresh:
                # Format 1 stays the default; format 2 is for archives (harness copy
                # --compact, import --compact): docs/architecture.md, "One storage story".
                found, schema = (
                    (LOG_FORMAT_2, SCHEMA_2 + PLANNER_STATS) if compact else (LOG_FORMAT, SCHEMA)
                )
                # executescript commits first, so the transaction lives inside the script.
                await conn.executescript(
                    f"BEGIN IMMEDIATE;\n{schema}\n"
                    f"INSERT INTO meta (key, value) VALUES ('format', '{found}');\nCOMMIT;"
                )
            elif bulk:  # a log read by others keeps durable commits
                raise StoreError(f"{path}: bulk writing is only for a log built whole")
            else:
                async with conn.execute("SELECT value FROM meta WHERE key='format'") as cur:
                    marker = await cur.fetchone()
                if marker is None or marker[0] not in LOG_FORMATS:
                    raise NotAHarnessLogError(marker_problem(path, marker[0] if marker else None))
                found = marker[0]
            table = "log" if found == LOG_FORMAT_2 else "events"
            if table == "events":  # format 1 gets summaries (format 2 has a cost column)
                for statement in log_summary.SCHEMA_STATEMENTS:
                    await conn.execute(statement)
            # Either format gets each case's digest chain (harness.store.case_digest), over
            # the same event bytes, from its first event on: a log written before digests
            # gets them for its new cases.
            for statement in CHAIN_STATEMENTS_2 if table == "log" else (case_digest.SQLITE_SCHEMA,):
                await conn.execute(statement)
            await conn.create_function(
                "harness_chain", 2, case_digest.sqlite_chain, deterministic=True
            )
            # Batches grow with gseq: the last row holds the highest (max(batch) scanned the
            # whole table, a second on a million events before a resume's first call).
            async with conn.execute(f"SELECT batch FROM {table} ORDER BY gseq DESC LIMIT 1") as cur:
                last = await cur.fetchone()
            blocks = False
            if table == "log":
                async with conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = 'blocks'"
                ) as cur:  # compact_schema.has_blocks, on the async connection
                    blocks = await cur.fetchone() is not None
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                raise NotAHarnessLogError(f"{path} is not a harness event log") from exc
            if "readonly" in str(exc):
                raise unreadable_log(path, exc) from exc
            raise StoreError(f"cannot open event log {path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise unreadable_log(path, exc) from exc
        store = cls(conn, path, max_group)
        if table == "log":
            store._compact, store._table = CompactInserter(blocks), "log"
        store._batch_no = int(last[0]) if last else 0
        if bulk and table == "events":
            store._held = log_summary.HeldRows()
        store._writer = asyncio.create_task(store._write_loop(), name="event-store-writer")
        return store

    async def __aenter__(self) -> EventWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def append(self, events: Sequence[PendingEvent]) -> list[int]:
        """Append ``events`` atomically; returns their global sequence numbers once committed.

        Raises `ConcurrencyError` when any (campaign, case, seq) position is already taken;
        then none of the batch is written.
        """
        return await self.append_soon(events)

    def append_soon(self, events: Sequence[PendingEvent]) -> asyncio.Future[list[int]]:
        """`append`, with the batch encoded and queued before this returns: the future
        resolves as `append` returns. A plain function, so the engine's appends (two a
        turn, and the closing batch of each case) cost no coroutine or task of their own."""
        if self._closed:
            raise StoreClosedError("append on a closed event store")
        future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        if not events:
            future.set_result([])
            return future
        now = time.time()
        rows: list[Row] = []
        for p in events:
            kind, version, payload = encode_event(p.event)
            turn = getattr(p.event, "turn", None) if kind in _TURN_KINDS else None
            attempt = getattr(p.event, "attempt", None) if kind in _TURN_KINDS else None
            rows.append((p.campaign, p.case_id, p.seq, kind, version, turn, attempt, payload))
        self._enqueue(_Batch(rows, now, future))
        return future

    async def append_many(self, events: Sequence[EncodedEvent]) -> list[int]:
        """`append` for events already encoded (`EncodedEvent`), the way a bulk writer (an
        importer) hands over many: each payload must be exactly `encode_event`'s, and the
        store's layout is the store's own (a log of format 2 splits the payloads itself).
        The batch is atomic and committed like any other; returns the events' gseqs."""
        if self._closed:
            raise StoreClosedError("append on a closed event store")
        if not events:
            return []
        future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        # The tuples go to the insert as they are (a copy of each cost more than its
        # binding); only the list is copied, so the caller may reuse its own.
        self._enqueue(_Batch(list(events), time.time(), future))
        return await future

    def _enqueue(self, batch: _Batch | None) -> None:
        """Queue ``batch`` for the writer task (unbounded) and wake it if it waits."""
        self._pending.append(batch)
        wakeup, self._wakeup = self._wakeup, None
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    async def _write_loop(self) -> None:
        pending = self._pending
        while True:
            if not pending:
                self._wakeup = asyncio.get_running_loop().create_future()
                await self._wakeup
                continue
            first = pending.popleft()
            if first is None:
                return
            group = [first]
            while pending and len(group) < self._max_group:
                nxt = pending.popleft()
                if nxt is None:
                    await self._commit(group)
                    return
                group.append(nxt)
            await self._commit(group)

    def _numbered(self, batch: _Batch, batch_no: int) -> list[tuple[object, ...]]:
        """The batch's rows in the table's column order (for one-row and format-2 inserts)."""
        return [(*row[:7], batch_no, batch.ts, row[7]) for row in batch.rows]

    _INSERT = (
        "INSERT INTO events (campaign, case_id, seq, kind, schema_version, turn, attempt,"
        " batch, ts, payload) VALUES (?,?,?,?,?,?,?,?,?,?)"
    )
    # The multi-row insert takes each row as appended, then its batch's number and time.
    _INSERT_APPENDED = (
        "INSERT INTO events (campaign, case_id, seq, kind, schema_version, turn, attempt,"
        " payload, batch, ts) VALUES (?,?,?,?,?,?,?,?,?,?)"
    )

    async def _commit(self, group: list[_Batch]) -> None:
        # The whole transaction runs in one call on the connection's thread: every awaited
        # aiosqlite call waits for a turn of the event loop, and with hundreds of cases
        # running, the ten or so awaits of a commit made the writer the bottleneck.
        await _on_connection_thread(
            self._conn, self._commit_then_resolve, asyncio.get_running_loop(), group
        )

    def _commit_then_resolve(self, loop: asyncio.AbstractEventLoop, group: list[_Batch]) -> None:
        """Runs on the connection's thread: commits, then has the loop resolve the batches'
        futures at its next turn. Resolving them from this writer task instead cost every
        waiting case one more turn of a busy loop after its commit (the task resumes one
        turn after the thread finishes, and the cases one turn after that)."""
        results = self._commit_sync(group)
        loop.call_soon_threadsafe(self._resolve, group, results)

    def _resolve(self, group: list[_Batch], results: list[list[int] | BaseException]) -> None:
        self.commits += 1
        for batch, result in zip(group, results, strict=True):
            if batch.future.done():
                continue
            if isinstance(result, BaseException):
                batch.future.set_exception(result)
            else:
                self.events_written += len(result)
                batch.future.set_result(result)

    def _commit_sync(self, group: list[_Batch]) -> list[list[int] | BaseException]:
        """Runs on the aiosqlite thread, which owns the sqlite3 connection."""
        conn: sqlite3.Connection = self._conn._conn
        results: list[list[int] | BaseException] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            # Another writer on the same file may have numbered batches since we last looked.
            # Batches grow with gseq, so the last row holds the highest (an O(log n) lookup).
            top = conn.execute(
                f"SELECT batch FROM {self._table} ORDER BY gseq DESC LIMIT 1"
            ).fetchone()
            self._batch_no = max(self._batch_no, int(top[0]) if top else 0)
            numbers = list(range(self._batch_no + 1, self._batch_no + 1 + len(group)))
            self._batch_no += len(group)
            try:
                # The whole group in one statement; on a conflict fall back to
                # one savepoint per batch so only the offending batch fails.
                if self._compact is not None:
                    self._compact.insert(
                        conn,
                        [
                            r
                            for b, n in zip(group, numbers, strict=True)
                            for r in self._numbered(b, n)
                        ],
                    )
                    row = conn.execute("SELECT last_insert_rowid()").fetchone()
                    last = int(row[0]) if row else 0
                else:
                    insert = self._insert_many if self._held is None else self._insert_bulk
                    last = insert(conn, group, numbers)
                first_id = last - sum(len(b.rows) for b in group) + 1
                offset = 0
                for b in group:
                    results.append(list(range(first_id + offset, first_id + offset + len(b.rows))))
                    offset += len(b.rows)
            except sqlite3.IntegrityError:
                conn.execute("ROLLBACK")
                self._forget()
                conn.execute("BEGIN IMMEDIATE")
                results = [
                    self._insert_one(conn, b, n) for b, n in zip(group, numbers, strict=True)
                ]
            self._chain(conn, group, results)
            if self._compact is None:
                self._move_summaries(conn, group, results)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            self._forget()
            if self._held is not None:
                self._held.moved(None)  # what it holds may not be in the log
            error = StoreError(f"commit to {self.path} failed: {exc}")
            error.__cause__ = exc
            results = [error] * len(group)
        return results

    def _chain(
        self,
        conn: sqlite3.Connection,
        group: list[_Batch],
        results: list[list[int] | BaseException],
    ) -> None:
        """Extend the digest chain of every case the committed batches append to, in their
        transaction (`harness.store.case_digest`)."""
        rows = [
            row
            for b, result in zip(group, results, strict=True)
            if not isinstance(result, BaseException)
            for row in b.rows
        ]
        starts, extends = case_digest.sqlite_write_params(rows)
        compact = self._compact is not None
        if starts:
            conn.executemany(CHAIN_START_2 if compact else case_digest.SQLITE_START, starts)
        if extends:
            conn.executemany(CHAIN_EXTEND_2 if compact else case_digest.SQLITE_EXTEND, extends)

    def _move_summaries(
        self,
        conn: sqlite3.Connection,
        group: list[_Batch],
        results: list[list[int] | BaseException],
    ) -> None:
        # Derived data, moved in the transaction of the events it covers (see
        # `harness.store._log_summary`); every REFRESH_EVERY events, so a commit pays for it
        # rarely and a resume reads at most about that many events past the summary.
        started = [row[0] for b in group for row in b.rows if row[3] == "CampaignStarted"]
        for campaign in started:
            log_summary.start(conn, campaign)
        if self._held is not None:  # the batches written (a conflicting one is not)
            for b, result in zip(group, results, strict=True):
                if not isinstance(result, BaseException):
                    self._held.add(b.rows)
        self._unsummarised += sum(len(b.rows) for b in group)
        if started or self._unsummarised >= log_summary.REFRESH_EVERY:
            if self._held is None:
                log_summary.advance(conn)
            else:
                log_summary.advance(conn, held=self._held)
            self._unsummarised = 0

    async def record_summary(self, campaign: str, summary: log_summary.Summary) -> None:
        """Records the summary a reader computed from every row (`log_summary.read`) for a
        campaign that has none: a log written before summaries pays for the full scans once.
        Format 2 logs have no summaries."""
        if self._compact is not None:
            return

        def write() -> None:
            conn: sqlite3.Connection = self._conn._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                log_summary.record(conn, campaign, summary)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        try:
            await _on_connection_thread(self._conn, write)
        except sqlite3.Error as exc:
            raise StoreError(f"recording a summary in {self.path} failed: {exc}") from exc

    def _forget(self) -> None:
        if self._compact is not None:
            self._compact.forget()

    _ROWS_PER_STATEMENT = 99  # 10 parameters a row, under SQLite's oldest limit of 999

    def _insert_many(
        self, conn: sqlite3.Connection, group: list[_Batch], numbers: list[int]
    ) -> int:
        """Inserts the group's rows; returns the gseq of the last (the last statement's
        ``lastrowid``: no ``SELECT last_insert_rowid()``, one statement less on the commit
        thread, which re-takes the GIL after each)."""
        # Multi-row INSERTs, not executemany: the sqlite3 module releases and re-takes the
        # GIL around every row it steps, and while the event loop is busy each re-take waits
        # for a thread switch; one statement per 99 rows made commits several times faster.
        # The parameters are flattened by C iterators (each row, then its batch's number and
        # time), not by a Python loop over the values or a copy of each row.
        pairs = chain.from_iterable(
            zip(b.rows, repeat((n, b.ts))) for b, n in zip(group, numbers, strict=True)
        )  # (row, (batch, ts)) for every row of the group
        values = list(chain.from_iterable(chain.from_iterable(pairs)))
        per_row = 10
        step = self._ROWS_PER_STATEMENT * per_row
        last = 0
        for i in range(0, len(values), step):
            chunk = values[i : i + step]
            sql = self._INSERT_APPENDED + ",(?,?,?,?,?,?,?,?,?,?)" * (len(chunk) // per_row - 1)
            last = conn.execute(sql, chunk).lastrowid or 0
        return last

    _BULK_ROW = "(?,?,?,?,?,?,?,?,?,?)"
    _BULK_ROW_WITHOUT_TURN = "(?,?,?,?,?,NULL,NULL,?,?,?)"

    def _insert_bulk(
        self, conn: sqlite3.Connection, group: list[_Batch], numbers: list[int]
    ) -> int:
        """`_insert_many` for a log built whole, whose rows are mostly not turns (an import:
        three of an answer's five): a row without turn and attempt is inserted with NULL
        literals, not two bound Nones (the sqlite3 module binds a None through its adapter
        lookup, about 8x an int's cost). The statements' texts, one per pattern of such rows,
        are kept."""
        rows = [(row, n, b.ts) for b, n in zip(group, numbers, strict=True) for row in b.rows]
        statements = self._bulk_statements
        last = 0
        for i in range(0, len(rows), self._ROWS_PER_STATEMENT):
            chunk = rows[i : i + self._ROWS_PER_STATEMENT]
            pattern = bytes([row[5] is None and row[6] is None for row, _, _ in chunk])
            sql = statements.get(pattern)
            if sql is None:
                sql = (
                    self._INSERT_APPENDED.split("VALUES")[0]
                    + "VALUES "
                    + ",".join(
                        self._BULK_ROW_WITHOUT_TURN if bare else self._BULK_ROW for bare in pattern
                    )
                )
                if len(statements) >= 256:  # a copy of an irregular log: keep it bounded
                    statements.clear()
                statements[pattern] = sql
            values: list[object] = []
            extend, append = values.extend, values.append
            for row, n, ts in chunk:
                if row[5] is None and row[6] is None:
                    extend(row[:5])
                    append(row[7])
                else:
                    extend(row)
                append(n)
                append(ts)
            last = conn.execute(sql, values).lastrowid or 0
        return last

    def _insert_one(
        self, conn: sqlite3.Connection, batch: _Batch, batch_no: int
    ) -> list[int] | BaseException:
        conn.execute("SAVEPOINT one_batch")
        ids: list[int] = []
        try:
            for row in self._numbered(batch, batch_no):
                if self._compact is not None:
                    self._compact.insert(conn, [row])
                    ids.append(int(conn.execute("SELECT last_insert_rowid()").fetchone()[0]))
                else:
                    cur = conn.execute(self._INSERT, row)
                    ids.append(int(cur.lastrowid or 0))
        except sqlite3.IntegrityError as exc:
            conn.execute("ROLLBACK TO one_batch")
            self._forget()
            conn.execute("RELEASE one_batch")
            where = ", ".join(f"{r[1] or '<campaign>'}#{r[2]}" for r in batch.rows[:3])
            # One process writes a case's events: a position taken under this one means another
            # process is writing the same log (two `run`/`resume` of one SQLite file).
            err = ConcurrencyError(
                f"another process is writing this log ({self.path}): it appended {where} "
                "first; let it finish (or stop it), then 'harness resume' this log; to share "
                "a campaign between processes, use a PostgreSQL log and 'harness worker'"
            )
            err.__cause__ = exc
            return err
        conn.execute("RELEASE one_batch")
        return ids

    async def next_seq(self, campaign: str, case_id: str) -> int:
        """The next free per-case sequence number (reads committed state)."""
        sql = "SELECT coalesce(max(seq), 0) + 1 FROM events WHERE campaign = ? AND case_id = ?"
        if self._compact is not None:
            sql = (
                "SELECT coalesce(max(e.seq), 0) + 1 FROM log e JOIN cases c ON c.key = e.case_key"
                " JOIN campaigns p ON p.key = c.campaign WHERE p.name = ? AND c.name = ?"
            )
        async with self._conn.execute(sql, (campaign, case_id)) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 1

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            self._enqueue(None)
            await self._writer
        await self._conn.close()


async def write_imported_events(db: str | Path, pending: Sequence[PendingEvent]) -> None:
    """The events of an import, written all or nothing: appended in one transaction to a log
    that exists, else built whole in a private file and published under ``db`` at the end
    (`harness.store.fresh_log.FreshLog`), so an import interrupted or killed leaves no log
    (not even an empty one) under the name."""
    if Path(db).exists():
        async with await EventWriter.open(db) as store:
            await store.append(pending)
        return
    with FreshLog.build(db) as fresh:
        async with await EventWriter.open(fresh.partial, bulk=True) as store:
            await store.append(pending)
        fresh.publish()
