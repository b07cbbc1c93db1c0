"""`SideTable`: a family's own tables kept in a SQLite log file beside the events, opened
through `harness.store.log.Log.side_table`.

Some records belong with a campaign yet are not facts about a conversation: BADF's sentence
embeddings are a cache of a pure function of (embedder, text), and as JSON event payloads
they would triple in size. A family keeps such rows in tables of its own in the log file (one
file holds a campaign), declared by a schema of ``CREATE ... IF NOT EXISTS`` statements and a
format marker in the log's ``meta`` table. The tables are created by the first write, so logs
written before them load unchanged and read as holding no rows. The events are never touched:
a side table is written in its own transactions, with the log's own connection settings and
format check, and every sqlite3 error becomes a `StoreError` here.

Only SQLite logs hold side tables (`Log.side_table` refuses a database with a `ConfigError`):
nothing the PostgreSQL store runs needs one yet.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from harness.store.schema import READER_PRAGMAS, WRITER_PRAGMAS, apply_pragmas, check_log_format
from harness.vocabulary.errors import StoreError


class SideTable:
    """The tables ``schema`` creates in the log file ``path``, marked in ``meta`` as
    ``format_key = format``; ``name`` (e.g. "embeddings") is what messages call them."""

    def __init__(self, path: Path, name: str, *, schema: str, format_key: str, format: str):
        self.path = path
        self.name = name
        self.schema = schema
        self.format_key = format_key
        self.format = format

    def _connect(self, *, write: bool) -> sqlite3.Connection:
        if not self.path.exists():
            raise StoreError(
                f"{self.path} does not exist ({self.name} are recorded in a campaign's log)"
            )
        try:
            if write:
                conn = sqlite3.connect(self.path, isolation_level=None)
                apply_pragmas(conn, WRITER_PRAGMAS)
            else:
                conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
                apply_pragmas(conn, READER_PRAGMAS)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path} for {self.name}: {exc}") from exc
        try:
            check_log_format(conn, self.path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _present(self, conn: sqlite3.Connection) -> bool:
        """Whether the tables are there, in a format this harness reads."""
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (self.format_key,)).fetchone()
        if row is None:
            return False  # a log written before the tables, or none recorded yet
        if row[0] != self.format:
            raise StoreError(
                f"{self.path} records {self.name} as {row[0]!r}; this harness reads "
                f"{self.format!r} (upgrade the harness to read it)"
            )
        return True

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection | None]:
        """A read-only connection to the log with the tables, or None when it has none."""
        with contextlib.closing(self._connect(write=False)) as conn:
            try:
                yield conn if self._present(conn) else None
            except sqlite3.Error as exc:
                raise StoreError(f"reading {self.name} from {self.path} failed: {exc}") from exc

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A connection in one transaction (BEGIN IMMEDIATE) with the tables created:
        committed when the block ends, rolled back when it raises."""
        with contextlib.closing(self._connect(write=True)) as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
                self._create(conn)
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"recording {self.name} in {self.path} failed: {exc}") from exc
                raise

    def _create(self, conn: sqlite3.Connection) -> None:
        # Statement by statement: executescript would commit the open transaction first.
        statement = ""
        for line in self.schema.splitlines(keepends=True):
            statement += line
            if sqlite3.complete_statement(statement):
                conn.execute(statement)
                statement = ""
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (self.format_key, self.format)
        )
