"""Open an event log by what the user typed, a SQLite file path or a ``postgresql://`` URL,
or by a `harness.store.log.Log`: the short forms of ``Log.at(target).reader()`` and its
kin, for code that opens one thing once. The PostgreSQL modules (and psycopg) are imported
only when a URL asks for them."""

from __future__ import annotations

from harness.store.log import Log, LogLike
from harness.store.protocol import EventSink
from harness.store.reader import EventReader
from harness.store.target import shown_target

__all__ = ["log_exists", "open_reader", "open_writer", "shown_target"]


def open_reader(target: LogLike) -> EventReader:
    """A read-only view of the log at ``target`` (use it as a context manager)."""
    return Log.at(target).reader()


async def open_writer(
    target: LogLike, *, create: bool = True, max_group: int = 512, compact: bool = False
) -> EventSink:
    """The append side of the log at ``target``; ``create``: make a new log if none is there;
    ``compact``: a new SQLite log is written in format 2 (PostgreSQL has one layout)."""
    return await Log.at(target).writer(create=create, max_group=max_group, compact=compact)


def log_exists(target: LogLike) -> bool:
    """Whether ``target`` names something to read: a database always may (opening it says
    whether it holds a log), a file must exist."""
    return Log.at(target).exists()
