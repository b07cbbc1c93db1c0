"""Read side of the event log: synchronous, streaming, for reports, show, replay and resume.

Folding never loads the whole log: `EventReader.events` streams rows in commit order and
`EventReader.cases` groups one case at a time (rows are read ordered by case).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.store import _log_summary as log_summary
from harness.store import _sqlar as sqlar
from harness.store._compact_payloads import COLUMNS, PayloadBuilder, source
from harness.store._compact_schema import has_blocks
from harness.store.schema import READER_PRAGMAS, apply_pragmas, check_log_format, unreadable_log
from harness.vocabulary.errors import EventDecodeError, StoreError
from harness.vocabulary.events import CampaignStarted, Event, decode_event

# What `EventReader.summary` returns: a campaign's closed cases and spend, for resume.
LogSummary = log_summary.Summary


@dataclass(frozen=True)
class StoredEvent:
    gseq: int
    campaign: str
    case_id: str
    seq: int
    ts: float
    event: Event


class EventReader:
    """A read-only view of an event log file."""

    _source = "events"  # where `_COLS` are read from (format 2: the log's pieces)
    _payloads: PayloadBuilder | None = None

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"{self.path} does not exist (give the path of a campaign's .db file)")
        try:
            self._conn = sqlar.connect(f"file:{self.path}?mode=ro", uri=True)
            apply_pragmas(self._conn, READER_PRAGMAS)
        except sqlite3.Error as exc:
            raise unreadable_log(self.path, exc) from exc
        self.log_format = check_log_format(self._conn, self.path)
        self._source = "events"
        self._payloads: PayloadBuilder | None = None
        if self.log_format == 2:  # payloads rebuilt here, not by the view's SQL
            self._source, self._COLS = source(has_blocks(self._conn)), COLUMNS
            self._payloads = PayloadBuilder(self._conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> EventReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    @property
    def file(self) -> Path | None:
        """The SQLite file another process may open to read this log (`ProcessCall`s of
        a report); None for a log in a database server."""
        return self.path

    # The distinct campaign ids by a skip-scan of the (campaign, kind) index: one index seek
    # per campaign. A filter on kind alone scans the whole table (2 s on a million events).
    _CAMPAIGN_IDS = (
        "WITH RECURSIVE ids(id) AS ("
        " SELECT min(campaign) FROM events"
        " UNION ALL SELECT (SELECT min(campaign) FROM events WHERE campaign > id)"
        " FROM ids WHERE id IS NOT NULL)"
        " SELECT id FROM ids WHERE id IS NOT NULL"
    )

    def campaigns(self) -> list[tuple[str, CampaignStarted]]:
        """(campaign id, its CampaignStarted event), oldest first."""
        sql = "SELECT name FROM campaigns" if self.log_format == 2 else self._CAMPAIGN_IDS
        try:
            ids = [row[0] for row in self._conn.execute(sql)]
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc
        found = [stored for cid in ids for stored in self.events(cid, kinds=("CampaignStarted",))]
        found.sort(key=lambda stored: stored.gseq)
        out = []
        for stored in found:
            assert isinstance(stored.event, CampaignStarted)
            out.append((stored.campaign, stored.event))
        return out

    def latest_campaign(self) -> str:
        found = self.campaigns()
        if not found:
            raise StoreError(f"{self.path} holds no campaign")
        return found[-1][0]

    def campaign_id(self, wanted: str | None = None) -> str:
        """The id of campaign ``wanted`` (an id or a unique prefix of one); the latest
        campaign when None. An unknown id is an error listing the campaigns of the log."""
        if wanted is None:
            return self.latest_campaign()
        ids = [cid for cid, _ in self.campaigns()]
        if wanted in ids:
            return wanted
        matches = [cid for cid in ids if cid.startswith(wanted)] if wanted else []
        if len(matches) == 1:
            return matches[0]
        raise StoreError(
            f"{self.path} has no campaign {wanted!r}"
            + (f" ({len(matches)} ids start with it)" if matches else "")
            + f"; its campaigns: {', '.join(ids) or 'none'} (list them: harness campaigns "
            f"{self.path})"
        )

    def _rows(self, sql: str, args: Iterable[object]) -> Iterator[StoredEvent]:
        try:
            cur = self._conn.execute(sql, tuple(args))
            builder = self._payloads
            for gseq, campaign, case_id, seq, kind, version, ts, *rest in cur:
                payload = rest[0] if builder is None else builder.payload(case_id, rest)
                yield StoredEvent(
                    gseq, campaign, case_id, seq, ts, decode_event(kind, version, payload)
                )
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc
        except EventDecodeError as exc:  # which row: the message alone names no place
            where = f"case {case_id}" if case_id else "the campaign's events"
            raise EventDecodeError(f"{self.path}: {where}, event #{seq}: {exc}") from exc

    _COLS = "gseq, campaign, case_id, seq, kind, schema_version, ts, payload"

    def events(
        self,
        campaign: str | None = None,
        *,
        kinds: Iterable[str] | None = None,
        case_id: str | None = None,
    ) -> Iterator[StoredEvent]:
        """Events in commit order, optionally filtered."""
        where, args = [], []
        if campaign is not None:
            where.append("campaign = ?")
            args.append(campaign)
        if case_id is not None:
            where.append("case_id = ?")
            args.append(case_id)
        if kinds is not None:
            kinds = list(kinds)
            where.append(f"kind IN ({','.join('?' * len(kinds))})")
            args.extend(kinds)
        sql = f"SELECT {self._COLS} FROM {self._source}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY gseq"
        return self._rows(sql, args)

    def cases(self, campaign: str) -> Iterator[tuple[str, list[StoredEvent]]]:
        """Each case's events in per-case order, one case at a time."""
        sql = (
            f"SELECT {self._COLS} FROM {self._source} WHERE campaign = ? AND case_id != ''"
            " ORDER BY case_id, seq"
        )
        current: str | None = None
        bucket: list[StoredEvent] = []
        for stored in self._rows(sql, (campaign,)):
            if stored.case_id != current:
                if current is not None:
                    yield current, bucket
                current, bucket = stored.case_id, []
            bucket.append(stored)
        if current is not None:
            yield current, bucket

    def case_ids(self, campaign: str, *, kind: str | None = None) -> Iterator[str]:
        """The ids of the cases of ``campaign`` (with an event of ``kind``), in id order,
        read from the indexes without decoding any event."""
        if kind is None:
            sql = (
                "SELECT DISTINCT case_id FROM events WHERE campaign = ? AND case_id != ''"
                " ORDER BY case_id"
            )
            args: tuple[str, ...] = (campaign,)
        else:
            sql = (
                "SELECT DISTINCT case_id FROM events WHERE campaign = ? AND case_id != ''"
                " AND kind = ? ORDER BY case_id"
            )
            args = (campaign, kind)
        try:
            for (case_id,) in self._conn.execute(sql, args):
                yield case_id
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc

    def opened_case_ids(self, campaign: str) -> list[str]:
        """The ids of the cases of ``campaign`` in the order they were opened (what a
        case's position, as ``harness show`` takes it, counts in)."""
        sql = "SELECT case_id FROM events WHERE campaign = ? AND kind = 'CaseOpened' ORDER BY gseq"
        try:
            return [case_id for (case_id,) in self._conn.execute(sql, (campaign,))]
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc

    def closing_state(self, campaign: str) -> tuple[int, str | None, str | None]:
        """What a worker joining or ending ``campaign`` reads of it: the number of closed
        cases, and the kind and status (a CampaignFinished's) of its last event outside its
        cases."""
        try:
            closed = self._conn.execute(
                "SELECT count(DISTINCT case_id) FROM events"
                " WHERE campaign = ? AND kind = 'CaseClosed'",
                (campaign,),
            ).fetchone()[0]
            last = self._conn.execute(
                "SELECT kind, payload FROM events WHERE campaign = ? AND case_id = ''"
                " ORDER BY seq DESC LIMIT 1",
                (campaign,),
            ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc
        if last is None:
            return int(closed), None, None
        status = json.loads(last[1]).get("status") if last[0] == "CampaignFinished" else None
        return int(closed), str(last[0]), status

    def recorded_spend(self, campaign: str) -> float:
        """USD of the campaign's ReplyReceived events that were paid for (cached answers cost
        nothing), without decoding the events."""
        if self.log_format == 1:
            return self.summary(campaign).usd
        sql = (  # the cost column, read from its partial index
            "SELECT e.cost_usd FROM log e JOIN campaigns p ON p.key = e.campaign"
            " WHERE p.name = ? AND e.cost_usd IS NOT NULL ORDER BY e.cost_usd"
        )
        total = 0.0
        try:
            for (cost,) in self._conn.execute(sql, (campaign,)):
                if cost:
                    total += float(cost)
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc
        return total

    def summary(self, campaign: str) -> LogSummary:
        """The campaign's case ids, closed cases and paid spend, from the log's recorded
        summary and the events after it (`harness.store._log_summary`), or from every row."""
        if self.log_format == 2:
            closed = set(self.case_ids(campaign, kind="CaseClosed"))
            unclosed = set(self.case_ids(campaign)) - closed
            return log_summary.Summary(0, self.recorded_spend(campaign), closed, unclosed, True)
        # A PostgreSQL log (format 1's layout) has no summary tables.
        native = isinstance(self._conn, sqlite3.Connection)
        try:
            if not native:
                return log_summary.read(self._conn, campaign, recorded=False)
            self._conn.execute("BEGIN")  # one snapshot for the summary and its tail
            try:
                return log_summary.read(self._conn, campaign)
            finally:
                self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc

    def case_events(self, campaign: str, case_id: str) -> list[StoredEvent]:
        sql = (
            f"SELECT {self._COLS} FROM {self._source} WHERE campaign = ? AND case_id = ?"
            " ORDER BY seq"
        )
        return list(self._rows(sql, (campaign, case_id)))

    def integrity_ok(self) -> bool:
        row = self._conn.execute("PRAGMA integrity_check").fetchone()
        return bool(row) and row[0] == "ok"


__all__ = ["EventReader", "StoredEvent", "apply_pragmas", "check_log_format"]
