"""Open an event log by what the user typed: a SQLite file path, or a ``postgresql://``
connection string (`harness.store.postgres_url`). The PostgreSQL modules (and psycopg) are
imported only when a URL asks for them."""

from __future__ import annotations

from pathlib import Path

from harness.store.postgres_url import is_postgres_url, shown_target
from harness.store.protocol import EventSink
from harness.store.reader import EventReader
from harness.store.writer import EventWriter

__all__ = ["is_postgres_url", "log_exists", "open_reader", "open_writer", "shown_target"]


def open_reader(target: str | Path) -> EventReader:
    """A read-only view of the log at ``target`` (use it as a context manager)."""
    if is_postgres_url(target):
        from harness.store.postgres_reader import PgEventReader

        return PgEventReader(str(target))
    return EventReader(target)


async def open_writer(
    target: str | Path, *, create: bool = True, max_group: int = 512, compact: bool = False
) -> EventSink:
    """The append side of the log at ``target``; ``create``: make a new log if none is there;
    ``compact``: a new SQLite log is written in format 2 (PostgreSQL has one layout)."""
    if is_postgres_url(target):
        from harness.store.postgres_writer import PgEventWriter

        return await PgEventWriter.open(str(target), create=create, max_group=max_group)
    return await EventWriter.open(target, create=create, max_group=max_group, compact=compact)


def log_exists(target: str | Path) -> bool:
    """Whether ``target`` names something to read: a database always may (opening it says
    whether it holds a log), a file must exist."""
    return is_postgres_url(target) or Path(target).exists()
