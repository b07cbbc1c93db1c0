"""Write side of a PostgreSQL event log, with the SQLite writer's semantics
(`harness.store.writer.EventWriter`): one writer task per process commits in groups, each
batch atomic and numbered, a taken (campaign, case, seq) position fails its batch alone with
`ConcurrencyError`, and an append returns only once its transaction is committed
(``synchronous_commit`` on, PostgreSQL's default: the commit is on disk).

Many processes may write one database (the workers of a campaign): each commit takes the
advisory lock `COMMIT_LOCK` first, so batch numbers and gseq grow in commit order across all
of them, exactly as in one SQLite file.

Group commit across workers (issue 36): the lock is released with its transaction, and a
durable commit releases it only after its WAL flush, so the workers' commits (and their
flushes, 9-27 ms each on a plain disk) ran one after another. Instead the group's transaction
commits without waiting for its flush (``SET LOCAL synchronous_commit = off``: it is visible,
and the lock free, at once), and in the same message a second, durable transaction writes one
WAL record (``pg_logical_emit_message``) and waits for its flush. WAL is flushed in order, so
that flush covers the group's commit record; the appends resolve only after it, so an append
still returns only once its events are on disk. The workers' flushes now overlap, and
PostgreSQL writes them as one (its own group commit). A crash of the server before the flush
loses the group with no append told it was written; a later commit that was acknowledged
lies later in the WAL, so it never survives without the group it read (its batch numbers).
Where the function cannot run (revoked), each group commits durably under the lock as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.store import case_digest
from harness.store.postgres_driver import psycopg
from harness.store.postgres_schema import COMMIT_LOCK, ensure_schema
from harness.store.postgres_url import PostgresUrl
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import ConcurrencyError, StoreClosedError, StoreError
from harness.vocabulary.events import encode_event

_TURN_KINDS = frozenset({"AskSent", "ReplyReceived", "AskFailed"})


def _encoded(rows: list[tuple[object, ...]]) -> list[Any]:
    """A batch's rows (campaign, case_id, seq, kind, version, turn, attempt, ts, payload)
    as `harness.store.case_digest.write_params` takes them (without the time)."""
    return [(*row[:7], row[8]) for row in rows]


_COLUMNS = "(campaign, case_id, seq, kind, schema_version, turn, attempt, batch, ts, payload)"
_ROW = "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
# A row of the one-message commit: the batch number is relative to the group, counted on
# from the last committed batch by the server (`PgEventWriter._commit_in_one_round_trip`).
_ROW_ON_TOP = b"(%b,%b,%b,%b,%b,%b,%b,%b + current_setting('harness.batch_top')::bigint,%b,%b)"
_ROWS_PER_STATEMENT = 1000  # 10 parameters a row, far under PostgreSQL's 65535

# The durable transaction after an unflushed group commit (module docstring): one WAL record
# that needs a transaction id, so its commit waits for the WAL flush up to it.
_FLUSH = b"BEGIN;SELECT pg_logical_emit_message(true, 'harness', 'flush');COMMIT"

# A worker's leases of the cases a group closes are marked done in the group's own
# transaction (`PgEventWriter.release_leases_on_close`): the case and its lease close
# together, and the release costs no commit (and no WAL flush) of its own (issue 36). Only
# this worker's leases: a case another worker took over meanwhile is left to it (its next
# claim folds the case and sees it closed). The rows are locked in case order first, as the
# claims and the releases of `harness.store.postgres_leases` take them, so a claim batch of
# another worker cannot deadlock with a commit.
_RELEASE_CLOSED = """
WITH wanted AS (
    SELECT l.campaign, l.case_id
      FROM leases AS l
      JOIN unnest(%s::text[], %s::text[]) AS u(campaign, case_id)
        ON l.campaign = u.campaign AND l.case_id = u.case_id
     WHERE l.owner = %s AND NOT l.done
     ORDER BY l.campaign, l.case_id
       FOR UPDATE OF l
)
UPDATE leases SET done = true, owner = NULL, expires_at = clock_timestamp()
  FROM wanted
 WHERE leases.campaign = wanted.campaign AND leases.case_id = wanted.case_id
"""


@dataclass
class _Batch:
    rows: list[tuple[object, ...]]
    future: asyncio.Future[list[int]] = field(repr=False)


async def _can_flush_after_lock(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether this role may run the durable flush transaction (`_FLUSH`); tried once."""
    try:
        await conn.execute(_FLUSH.decode())
    except psycopg.Error:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            await conn.execute("ROLLBACK")
        return False
    return True


async def connect(target: PostgresUrl) -> psycopg.AsyncConnection[Any]:
    """An autocommit connection, with driver errors translated (password scrubbed)."""
    try:
        return await psycopg.AsyncConnection.connect(target.url, autocommit=True)
    except psycopg.Error as exc:
        raise StoreError(f"cannot open event log {target}: {target.scrub(str(exc))}") from exc


class PgEventWriter:
    """Async append side of a PostgreSQL log. Use ``async with await Log.writer()``."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        reads: psycopg.AsyncConnection[Any],
        target: PostgresUrl,
        max_group: int,
        flush_after_lock: bool = False,
    ) -> None:
        self._conn = conn  # owned by the writer task
        self._reads = reads  # next_seq, so reads never wait inside the writer's transaction
        # SQL literals for the one-message commit
        self._literals = psycopg.adapt.Transformer.from_context(conn)
        self.target = target
        self.path = target.shown
        self._max_group = max_group
        # Commit unflushed under the lock, then flush outside it (module docstring).
        self.flush_after_lock = flush_after_lock
        self._queue: asyncio.Queue[_Batch | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self._batch_no = 0
        self.commits = 0
        self.events_written = 0
        self._lease_owner: str | None = None

    def release_leases_on_close(self, owner: str) -> None:
        """From now on, every committed CaseClosed marks the lease ``owner`` holds on its
        case done, in the same transaction (`harness.running.worker`)."""
        self._lease_owner = owner

    def _closed_leases(self, rows: list[tuple[object, ...]]) -> tuple[list[str], list[str]] | None:
        """(campaigns, case ids) of the leases the CaseClosed rows of a commit release."""
        if self._lease_owner is None:
            return None
        closed = [(str(r[0]), str(r[1])) for r in rows if r[3] == "CaseClosed"]
        if not closed:
            return None
        return [c for c, _ in closed], [i for _, i in closed]

    @classmethod
    async def open(
        cls, target: PostgresUrl, *, create: bool = True, max_group: int = 512
    ) -> PgEventWriter:
        conn = await connect(target)
        reads: psycopg.AsyncConnection[Any] | None = None
        try:
            await ensure_schema(conn, target.shown, create=create)
            reads = await connect(target)
            flush_after_lock = await _can_flush_after_lock(conn)
        except psycopg.Error as exc:
            await conn.close()
            raise StoreError(f"cannot open event log {target}: {target.scrub(str(exc))}") from exc
        except BaseException:
            await conn.close()
            raise
        store = cls(conn, reads, target, max_group, flush_after_lock)
        store._writer = asyncio.create_task(store._write_loop(), name="event-store-writer")
        return store

    async def __aenter__(self) -> PgEventWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def append(self, events: Sequence[PendingEvent]) -> list[int]:
        """Append ``events`` atomically; their global sequence numbers once committed.

        Raises `ConcurrencyError` when a (campaign, case, seq) position is already taken;
        then none of the batch is written."""
        return await self.append_soon(events)

    def append_soon(self, events: Sequence[PendingEvent]) -> asyncio.Future[list[int]]:
        """`append`, with the batch encoded and queued before this returns (as
        `EventWriter.append_soon`)."""
        if self._closed:
            raise StoreClosedError("append on a closed event store")
        future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        if not events:
            future.set_result([])
            return future
        now = time.time()
        rows: list[tuple[object, ...]] = []
        for p in events:
            kind, version, payload = encode_event(p.event)
            turn = getattr(p.event, "turn", None) if kind in _TURN_KINDS else None
            attempt = getattr(p.event, "attempt", None) if kind in _TURN_KINDS else None
            rows.append((p.campaign, p.case_id, p.seq, kind, version, turn, attempt, now, payload))
        self._queue.put_nowait(_Batch(rows, future))  # unbounded: put() would not wait
        return future

    async def _write_loop(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            group = [first]
            while len(group) < self._max_group:
                try:
                    nxt = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if nxt is None:
                    await self._commit(group)
                    return
                group.append(nxt)
            await self._commit(group)

    def _numbered(self, batch: _Batch) -> list[tuple[object, ...]]:
        self._batch_no += 1
        return [(*row[:7], self._batch_no, *row[7:]) for row in batch.rows]

    async def _insert(self, rows: list[tuple[object, ...]]) -> list[int]:
        ids: list[int] = []
        for i in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[i : i + _ROWS_PER_STATEMENT]
            sql = f"INSERT INTO events {_COLUMNS} VALUES {','.join([_ROW] * len(chunk))}"
            cur = await self._conn.execute(
                sql + " RETURNING gseq", [v for row in chunk for v in row]
            )
            # Identity values are drawn in VALUES order under the commit lock.
            ids.extend(sorted(int(r[0]) for r in await cur.fetchall()))
        return ids

    async def _commit(self, group: list[_Batch]) -> None:
        results: list[list[int] | BaseException]
        try:
            try:
                flat = await self._commit_in_one_round_trip(group)
            except psycopg.errors.UniqueViolation:
                await self._rollback()
                results = await self._commit_batch_by_batch(group)
            else:
                results, offset = [], 0
                for batch in group:
                    results.append(flat[offset : offset + len(batch.rows)])
                    offset += len(batch.rows)
        except psycopg.Error as exc:
            error = StoreError(f"commit to {self.target} failed: {self.target.scrub(str(exc))}")
            error.__cause__ = exc
            results = [error] * len(group)
            with contextlib.suppress(psycopg.Error):  # the next group starts clean
                await self._rollback()
        self.commits += 1
        for batch, result in zip(group, results, strict=True):
            if batch.future.done():
                continue
            if isinstance(result, BaseException):
                batch.future.set_exception(result)
            else:
                self.events_written += len(result)
                batch.future.set_result(result)

    async def _commit_in_one_round_trip(self, group: list[_Batch]) -> list[int]:
        """Commit the whole group as one message of statements: the commit lock is then
        held only while the server executes them, never across a round trip to this
        process, which may be busy with other tasks while every other worker's commit
        waits for the lock. Batch numbers are counted on from
        the last committed one by the server, after the lock is taken (each statement reads
        a fresh snapshot). Raises UniqueViolation with the transaction left aborted."""
        # Values rendered as literals by psycopg's own adapters (what a client-side binding
        # cursor does), but without its placeholder parsing (bench/RESULTS.md, issue 15).
        literal = self._literals.as_literal
        rows = [
            _ROW_ON_TOP % (*map(literal, row[:7]), str(i).encode(), *map(literal, row[7:]))
            for i, b in enumerate(group, 1)
            for row in b.rows
        ]
        statements = [
            b"BEGIN",
            *([b"SET LOCAL synchronous_commit = off"] if self.flush_after_lock else []),
            b"SELECT pg_advisory_xact_lock(%d)" % COMMIT_LOCK,
            b"SELECT set_config('harness.batch_top', (SELECT coalesce((SELECT batch FROM events"
            b" ORDER BY gseq DESC LIMIT 1), 0))::text, true)",
        ]
        for i in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[i : i + _ROWS_PER_STATEMENT]
            statements.append(
                b"INSERT INTO events %s VALUES %s RETURNING gseq"
                % (_COLUMNS.encode(), b",".join(chunk))
            )
        statements += self._chain_statements([row for b in group for row in b.rows])
        closed = self._closed_leases([row for b in group for row in b.rows])
        if closed is not None:
            params = (*closed, self._lease_owner)
            statements.append(
                _RELEASE_CLOSED.replace("%s", "%b").encode() % tuple(map(literal, params))
            )
        statements.append(b"COMMIT")
        if self.flush_after_lock:
            statements.append(_FLUSH)
        cur = psycopg.AsyncClientCursor(self._conn)  # no parameters: one Query message
        await cur.execute(b";".join(statements))
        ids: list[int] = []
        while True:
            # The events' INSERTs return their gseqs (the digest chain's return nothing).
            if (cur.statusmessage or "").startswith("INSERT") and cur.description is not None:
                # Identity values are drawn in VALUES order under the commit lock.
                ids.extend(sorted(int(r[0]) for r in await cur.fetchall()))
            if not cur.nextset():
                return ids

    def _chain_statements(self, rows: list[tuple[object, ...]]) -> list[bytes]:
        """The statements extending the digest chain of every case ``rows`` append to, as
        literals for the one-message commit (`harness.store.case_digest`; computed in the
        database, so workers taking over each other's cases chain them correctly)."""
        literal = self._literals.as_literal
        starts, extends = case_digest.write_params(_encoded(rows))
        out: list[bytes] = []
        if starts:
            values = b",".join(b"(%b)" % b",".join(map(literal, start)) for start in starts)
            out.append(
                b"INSERT INTO case_digests (campaign, case_id, seq, links) VALUES "
                + values
                + b" ON CONFLICT (campaign, case_id) DO UPDATE SET seq = excluded.seq,"
                b" links = excluded.links"
            )
        for extend in extends:
            out.append(
                case_digest.POSTGRES_EXTEND.replace("%s", "%b").encode()
                % tuple(map(literal, extend))
            )
        return out

    async def _chain(self, rows: list[tuple[object, ...]]) -> None:
        """`_chain_statements` with bound parameters (the batch-by-batch path)."""
        starts, extends = case_digest.write_params(_encoded(rows))
        async with self._conn.cursor() as cur:
            if starts:
                await cur.executemany(case_digest.POSTGRES_START, starts)
            if extends:
                await cur.executemany(case_digest.POSTGRES_EXTEND, extends)

    async def _rollback(self) -> None:
        """End the one-message commit's transaction when a statement failed (BEGIN was ours)."""
        if self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            await self._conn.execute("ROLLBACK")

    async def _commit_batch_by_batch(self, group: list[_Batch]) -> list[list[int] | BaseException]:
        """The slow path, when a batch of the group takes a taken (campaign, case, seq)
        position: each batch in a savepoint of its own, so only the offending ones fail."""
        async with self._conn.transaction():
            await self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (COMMIT_LOCK,))
            cur = await self._conn.execute("SELECT batch FROM events ORDER BY gseq DESC LIMIT 1")
            top = await cur.fetchone()
            self._batch_no = max(self._batch_no, int(top[0]) if top else 0)
            return [await self._insert_one(b) for b in group]

    async def _insert_one(self, batch: _Batch) -> list[int] | BaseException:
        try:
            async with self._conn.transaction():
                ids = await self._insert(self._numbered(batch))
                await self._chain(batch.rows)
                closed = self._closed_leases(batch.rows)
                if closed is not None:
                    await self._conn.execute(_RELEASE_CLOSED, (*closed, self._lease_owner))
                return ids
        except psycopg.errors.UniqueViolation as exc:
            where = ", ".join(f"{r[1] or '<campaign>'}#{r[2]}" for r in batch.rows[:3])
            err = ConcurrencyError(f"sequence position already taken ({where}): {exc}")
            err.__cause__ = exc
            return err

    async def next_seq(self, campaign: str, case_id: str) -> int:
        """The next free per-case sequence number (reads committed state)."""
        try:
            cur = await self._reads.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM events WHERE campaign = %s AND case_id = %s",
                (campaign, case_id),
            )
            row = await cur.fetchone()
        except psycopg.Error as exc:
            raise StoreError(
                f"reading {self.target} failed: {self.target.scrub(str(exc))}"
            ) from exc
        return int(row[0]) if row else 1

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            await self._queue.put(None)
            await self._writer
        await self._conn.close()
        await self._reads.close()
