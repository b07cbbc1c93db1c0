"""Read side of a PostgreSQL event log: `EventReader`'s methods over a PostgreSQL database.

Like a SQLite reader, each query sees the log as committed when it starts (READ COMMITTED),
so a long-lived reader sees what workers append. Rows stream through server-side cursors,
so folding a campaign never loads the whole log; the read-only transaction that holds them
ends whenever no cursor is open, so a reader never sits idle inside a transaction.

Report sections query the log with SQLite's SQL (``?`` parameters, ``json_extract``); the
connection this reader hands out takes that SQL (`SqliteDialectConnection`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from harness.store.postgres_driver import psycopg
from harness.store.postgres_schema import check_log_format
from harness.store.postgres_url import PostgresUrl
from harness.store.reader import EventReader
from harness.vocabulary.errors import NotAHarnessLogError, StoreError

_names = itertools.count(1)


def sqlite_to_pyformat(sql: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (and literal ``%`` doubled), outside quotes."""
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            if ch == quote:
                quote = None
            out.append("%%" if ch == "%" else ch)
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        else:
            out.append("%%" if ch == "%" else ch)
    return "".join(out)


class _StreamingCursor:
    """A server-side cursor with the sqlite3 cursor calls the readers use."""

    def __init__(self, cursor: Any, owner: SqliteDialectConnection) -> None:
        self._cursor = cursor
        self._owner = owner
        self._target = owner.target
        self._open = True

    def close(self) -> None:
        if self._open:
            self._open = False
            self._owner.cursor_closed(self._cursor)

    def _fail(self, exc: psycopg.Error) -> StoreError:
        return StoreError(f"reading {self._target} failed: {self._target.scrub(str(exc))}")

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        try:
            yield from self._cursor
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        finally:
            self.close()

    def fetchone(self) -> tuple[Any, ...] | None:
        """The first row; the cursor is done after it (the readers ask one row of a query)."""
        try:
            row: tuple[Any, ...] | None = self._cursor.fetchone()
            return row
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        finally:
            self.close()

    def fetchall(self) -> list[tuple[Any, ...]]:
        try:
            return list(self._cursor.fetchall())
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        finally:
            self.close()


class SqliteDialectConnection:
    """``execute(sql, params)`` as `sqlite3.Connection` has it, for SELECTs written for the
    SQLite log: placeholders are translated, ``json_extract``/``json_valid`` are SQL
    functions of the PostgreSQL layout, and errors become `StoreError`."""

    def __init__(self, conn: psycopg.Connection[Any], target: PostgresUrl) -> None:
        self._conn = conn
        self.target = target
        self._open = 0

    def execute(self, sql: str, params: Sequence[object] = ()) -> _StreamingCursor:
        cursor = self._conn.cursor(name=f"harness_read_{next(_names)}")
        cursor.itersize = 2000
        self._open += 1
        try:
            cursor.execute(sqlite_to_pyformat(sql), tuple(params))
        except psycopg.Error as exc:
            self.cursor_closed(cursor)
            raise StoreError(
                f"reading {self.target} failed: {self.target.scrub(str(exc))}"
            ) from exc
        return _StreamingCursor(cursor, self)

    def cursor_closed(self, cursor: Any) -> None:
        self._open -= 1
        try:
            cursor.close()
            if self._open == 0:
                self._conn.rollback()  # read-only: ends the transaction, frees its snapshot
        except psycopg.Error:
            pass  # a failed transaction is rolled back by the next query's error anyway


def connect_reader(target: PostgresUrl) -> psycopg.Connection[Any]:
    try:
        conn = psycopg.connect(target.url)
    except psycopg.Error as exc:
        raise StoreError(f"cannot open event log {target}: {target.scrub(str(exc))}") from exc
    conn.read_only = True
    return conn


class PgEventReader(EventReader):
    """A read-only view of an event log in a PostgreSQL database."""

    log_format = 1  # PostgreSQL keeps format 1's layout (see harness.store.postgres_schema)

    def __init__(self, target: PostgresUrl) -> None:
        self.target = target
        self.path = self.target.shown  # type: ignore[assignment]  # named in messages
        self._pg = connect_reader(self.target)
        self._conn = SqliteDialectConnection(self._pg, self.target)  # type: ignore[assignment]
        try:
            check_log_format(self._pg, self.target.shown)
        except psycopg.Error as exc:
            self._pg.close()
            raise NotAHarnessLogError(
                f"{self.target} cannot be read as a log: {self.target.scrub(str(exc))}"
            ) from exc
        except BaseException:
            self._pg.close()
            raise

    def close(self) -> None:
        self._pg.close()

    @property
    def file(self) -> None:
        return None

    def integrity_ok(self) -> bool:
        """Every payload is JSON (PostgreSQL checks its own pages; this checks the rows)."""
        row = self.connection.execute(
            "SELECT count(*) FROM events WHERE NOT json_valid(payload) OR seq < 1"
        ).fetchone()
        return row is not None and row[0] == 0
