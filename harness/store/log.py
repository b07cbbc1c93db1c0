"""`Log`: one event log, opened from its target (`harness.store.target`), and everything the
harness opens on it: its reader and writer, a PostgreSQL campaign's case leases (whose
connection the runners' registry shares), the connection that shared budgets and spend use,
verdict counts, and the side tables a family keeps beside the events.

A `Log` holds no connection: it is a parsed location with methods, cheap to make, to pass
along and to pickle (a forked verify, a second process counting verdicts). Code that is
given a log as text calls `Log.at`, which parses it (refusing what looks like a connection
string of another form); code given a `Log` uses it as it is.

Which features need PostgreSQL is decided in one place, `Log.postgres`: case leases,
workers and the budgets and spending ceiling workers share. On a SQLite log it raises a
`ConfigError` naming the feature. The shared budgets and spend live in the running room
(they subclass the models' budgets, and the store may import neither room); they take the
`PostgresUrl` that `Log.postgres` returns and open their own connections, as the leases do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from harness.store.postgres_url import PostgresUrl
from harness.store.reader import EventReader
from harness.store.target import URL_FORM, LogTarget, parse_target
from harness.store.writer import EventWriter
from harness.vocabulary.errors import ConfigError, NotAHarnessLogError

if TYPE_CHECKING:
    from harness.store.postgres_leases import CaseLeases
    from harness.store.protocol import EventSink
    from harness.store.side_tables import SideTable
    from harness.store.verdict_counts import VerdictCounts


@dataclass(frozen=True)
class Log:
    """An event log: a SQLite file (``path``) or a PostgreSQL database (``url``)."""

    target: LogTarget

    @classmethod
    def at(cls, where: LogLike, *, field: str = "log") -> Log:
        """The log at ``where``: a `Log` as it is, else parsed (``field`` names the
        option or key it came from in a refusal)."""
        if isinstance(where, Log):
            return where
        if isinstance(where, LogTarget):
            return cls(where)
        return cls(parse_target(where, field=field))

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None for a database."""
        return self.target.path

    @property
    def is_postgres(self) -> bool:
        """Whether the log is a PostgreSQL database (several processes may write it)."""
        return self.target.url is not None

    @property
    def shown(self) -> str:
        """How to name the log in output: never with a password."""
        return self.target.shown

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"Log({self.shown!r})"

    def postgres(self, feature: str, *, field: str | None = None) -> PostgresUrl:
        """The database of a feature only PostgreSQL has (``feature`` names it: "--workers",
        "case leases", "shared budgets"...); on a SQLite log, the one refusal of them all
        (``field``: where the log was given, named in it; default ``--db``, or the feature
        itself when it is an option)."""
        if self.target.url is None:
            raise ConfigError(
                f"{feature} needs a PostgreSQL log (several processes share a campaign "
                f"through the database); {self.shown} is a SQLite file",
                field=field or (feature if feature.startswith("-") else "--db"),
                fix=f"give a {URL_FORM} URL (copy a SQLite log there with 'harness copy')",
            )
        return self.target.url

    def file(self, feature: str, *, field: str = "DB") -> Path:
        """The SQLite file of a feature only a file log has (``feature`` names it); on a
        database, a `ConfigError` naming ``field``, where the log was given."""
        if self.target.path is None:
            raise ConfigError(
                f"{feature} works on a SQLite log file; {self.shown} is a PostgreSQL database",
                field=field,
                fix="copy the log into a file with 'harness copy URL FILE.db' and give the file",
            )
        return self.target.path

    def exists(self) -> bool:
        """Whether there is something to read: a database always may be (opening it says
        whether it holds a log), a file must exist."""
        return self.target.path is None or self.target.path.exists()

    def holds_events(self) -> bool:
        """Whether the log exists and is not empty: a new file, an empty file and an empty
        database hold none (a foreign database is refused when it is opened to write)."""
        if self.target.path is not None:
            return self.target.path.exists() and self.target.path.stat().st_size > 0
        try:
            self.reader().close()
        except NotAHarnessLogError:
            return False
        return True

    def reader(self) -> EventReader:
        """A read-only view of the log (use it as a context manager)."""
        if self.target.url is not None:
            # Imported here: psycopg costs a second of every command's start.
            from harness.store.postgres_reader import PgEventReader

            return PgEventReader(self.target.url)
        assert self.target.path is not None  # one of the two is set (LogTarget)
        return EventReader(self.target.path)

    async def writer(
        self, *, create: bool = True, max_group: int = 512, compact: bool = False
    ) -> EventSink:
        """The append side; ``create``: make a new log if none is there; ``compact``: a new
        SQLite log is written in format 2 (PostgreSQL has one layout)."""
        if self.target.url is not None:
            from harness.store.postgres_writer import PgEventWriter

            return await PgEventWriter.open(self.target.url, create=create, max_group=max_group)
        assert self.target.path is not None
        return await EventWriter.open(
            self.target.path, create=create, max_group=max_group, compact=compact
        )

    async def leases(
        self, campaign: str, *, ttl_s: float = 30.0, had_events: set[str] | None = None
    ) -> CaseLeases:
        """This process's case leases on ``campaign`` (PostgreSQL only); the runners'
        registry shares their connection (`CaseLeases.runners`)."""
        from harness.store.postgres_leases import CaseLeases

        url = self.postgres("case leases")
        return await CaseLeases.open(url, campaign, ttl_s=ttl_s, had_events=had_events)

    def verdict_counts(self, campaign: str) -> VerdictCounts:
        """The counts of the campaign's latest relation verdicts (`verdict_counts`)."""
        from harness.store.verdict_counts import count_verdicts

        with self.reader() as log:
            return count_verdicts(log.connection, campaign)

    def relation_outcomes(self, campaign: str) -> Counter[str]:
        """Every relation verdict of the campaign by outcome (repeats and re-decisions
        included): the closing summary of a run shared by workers."""
        from harness.store.verdict_counts import relation_outcomes

        with self.reader() as log:
            return relation_outcomes(log.connection, campaign)

    def side_table(self, name: str, *, schema: str, format_key: str, format: str) -> SideTable:
        """A family's own tables in the log file beside the events, created by ``schema`` and
        marked ``format_key = format`` in ``meta`` (SQLite only: `harness.store.side_tables`)."""
        from harness.store.side_tables import SideTable

        path = self.file(f"{name} kept in the log")
        return SideTable(path, name, schema=schema, format_key=format_key, format=format)


LogLike: TypeAlias = Log | LogTarget | str | Path
"""What a function that reads or writes a log accepts: a `Log`, or its location as text."""
