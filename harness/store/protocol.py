"""What the rest of the harness may rely on from an event log, whichever store holds it:
`EventSink` is the append side (the engine, runs, resumes, rejudge), `EventLog` the read
side (reports, show, replay, export, resume). SQLite (`harness.store.writer`,
`harness.store.reader`) and PostgreSQL (`harness.store.postgres_writer`,
`harness.store.postgres_reader`) implement both; `harness.store.open` picks one from a path
or a ``postgresql://`` URL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, Self

from harness.store.reader import StoredEvent
from harness.store.writer import PendingEvent
from harness.vocabulary.events import CampaignStarted


class EventSink(Protocol):
    """Append side: atomic batches at given per-case positions, group-committed."""

    commits: int
    events_written: int

    async def append(self, events: Sequence[PendingEvent]) -> list[int]: ...

    def append_soon(self, events: Sequence[PendingEvent]) -> asyncio.Future[list[int]]:
        """`append` queued at the call (no coroutine): the future resolves as it returns."""
        ...

    async def next_seq(self, campaign: str, case_id: str) -> int: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...


class SqlCursor(Protocol):
    def __iter__(self) -> Iterator[Any]: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class SqlConnection(Protocol):
    """The SELECTs of report sections, written in SQLite's SQL (``?`` parameters)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...


class EventLog(Protocol):
    """Read side: events in commit order, cases one at a time, and SQL over the views."""

    @property
    def connection(self) -> Any: ...

    def close(self) -> None: ...

    def campaigns(self) -> list[tuple[str, CampaignStarted]]: ...

    def latest_campaign(self) -> str: ...

    def campaign_id(self, wanted: str | None = None) -> str: ...

    def events(
        self,
        campaign: str | None = None,
        *,
        kinds: Iterable[str] | None = None,
        case_id: str | None = None,
    ) -> Iterator[StoredEvent]: ...

    def cases(self, campaign: str) -> Iterator[tuple[str, list[StoredEvent]]]: ...

    def case_events(self, campaign: str, case_id: str) -> list[StoredEvent]: ...

    def integrity_ok(self) -> bool: ...
