"""Summaries of a format-1 log up to a point of it, so a resume finds its closed cases and
its spend without scanning every case's index entries or decoding every reply's payload.

A format-1 log keeps a reply's cost inside its JSON payload and knows a case's state only
from its rows: the spend meant reading every ReplyReceived payload (2.9 s on a million
events) and the case ids two scans of a million index entries (1.7 s). For each campaign,
``summary_marks`` holds ``through_gseq`` and the paid spend of its events with
``gseq <= through_gseq``; ``summary_cases`` holds every case id with an event in that range
and whether one of them is its CaseClosed. These are facts about events that are never
rewritten (``gseq`` is AUTOINCREMENT: a later commit never gets a lower number), so a
summary stays true however stale: a reader adds the events after ``through_gseq`` (the
"tail", a rowid range) to it.

Derived and rebuildable: the tables hold nothing the events do not; without them (a log
written before them, or rows deleted) a reader scans and sums everything again. The writer
starts a campaign's summary in the transaction that commits its CampaignStarted and moves
every summary forward, in the transaction of the events it covers, every `REFRESH_EVERY`
events; a resume of a log without a summary records the one it computed (`record`). A
summary and the events it covers commit together or not at all, and a writer of older code
that appends without moving it only lengthens the tail.

A writer that alone writes its file (a new log built whole, `harness.store.fresh_log`) knows
every row a move covers: it appended them. It hands them to `advance` as `HeldRows`, which
moves a campaign's summary from them instead of reading them back (the reading was a quarter
of a bulk import's writer thread besides its inserts); a campaign whose covered rows it does
not all hold, or whose replies may have a cost, is moved by the SQL as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS summary_marks (
    campaign      TEXT    PRIMARY KEY,
    through_gseq  INTEGER NOT NULL,  -- the summary covers the campaign's events up to here
    usd           REAL    NOT NULL   -- paid (not cached) ReplyReceived cost_usd, summed
);
CREATE TABLE IF NOT EXISTS summary_cases (
    campaign      TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    closed        INTEGER NOT NULL,  -- 1: the case's CaseClosed is in the covered range
    PRIMARY KEY (campaign, case_id)
) WITHOUT ROWID;
"""

# One statement each (a driver's execute runs one).
SCHEMA_STATEMENTS = tuple(f"{sql.strip()};" for sql in SCHEMA.split(";") if sql.strip())

REFRESH_EVERY = 2_000  # events appended between two moves of the summaries


@dataclass
class Summary:
    """What a campaign's events up to ``through_gseq`` say: its closed cases, the cases with
    events but no CaseClosed, its paid spend. ``found``: read from a recorded summary (else
    computed from every row)."""

    through_gseq: int
    usd: float = 0.0
    closed: set[str] = field(default_factory=set)
    unclosed: set[str] = field(default_factory=set)
    found: bool = False

    @property
    def case_ids(self) -> set[str]:
        return self.closed | self.unclosed

    def add_cases(self, rows: Iterable[tuple[str, Any]]) -> None:
        """Adds (case_id, closed) rows."""
        rows = list(rows)
        self.closed.update(case_id for case_id, closed in rows if closed)
        self.unclosed.update(case_id for case_id, closed in rows if not closed)
        self.unclosed -= self.closed

    def add_rows(self, rows: Iterable[tuple[str, str, Any, Any]]) -> None:
        """Adds (case_id, kind, cost_usd, cached) rows of the campaign's events."""
        for case_id, kind, cost, cached in rows:
            if not case_id:
                continue
            if kind == "CaseClosed":
                self.closed.add(case_id)
                self.unclosed.discard(case_id)
            elif case_id not in self.closed:
                self.unclosed.add(case_id)
            if kind == "ReplyReceived" and cost and not cached:
                self.usd += float(cost)


# Rows of one campaign in a gseq range. ``+campaign`` keeps the planner on the rowid range
# (the campaign's index would walk all of its events); payloads are read for replies only.
_RANGE = (
    "SELECT case_id, kind,"
    " CASE kind WHEN 'ReplyReceived' THEN json_extract(payload, '$.reply.cost_usd') END,"
    " CASE kind WHEN 'ReplyReceived' THEN json_extract(payload, '$.cached') END"
    " FROM events WHERE +campaign = ? AND gseq > ? AND gseq <= ?"
)
_ALL_CASES = (
    "SELECT case_id, max(CASE WHEN kind = 'CaseClosed' THEN 1 ELSE 0 END) FROM events"
    " WHERE campaign = ? AND case_id != '' GROUP BY case_id"
)
_ALL_SPEND = (
    "SELECT json_extract(payload, '$.reply.cost_usd'), json_extract(payload, '$.cached')"
    " FROM events WHERE campaign = ? AND kind = 'ReplyReceived' AND case_id != ''"
    " AND gseq <= ?"
)


# `advance`'s halves: what `Summary.add_rows` and `_store` do with a range's rows, in SQL.
_MOVE_CASES = (
    "INSERT INTO summary_cases (campaign, case_id, closed)"
    " SELECT ?, case_id, max(kind = 'CaseClosed') FROM events"
    " WHERE +campaign = ? AND gseq > ? AND gseq <= ? AND case_id != '' GROUP BY case_id"
    " ON CONFLICT (campaign, case_id) DO UPDATE SET closed = max(closed, excluded.closed)"
)
_RANGE_SPEND = (
    "SELECT json_extract(payload, '$.reply.cost_usd'), json_extract(payload, '$.cached')"
    " FROM events WHERE +campaign = ? AND gseq > ? AND gseq <= ? AND kind = 'ReplyReceived'"
    " AND case_id != ''"
)


def _mark(conn: Any, campaign: str) -> tuple[int, float] | None:
    try:
        row = conn.execute(
            "SELECT through_gseq, usd FROM summary_marks WHERE campaign = ?", (campaign,)
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None  # a log written before summaries existed
    return (int(row[0]), float(row[1])) if row else None


def read(conn: Any, campaign: str, *, recorded: bool = True) -> Summary:
    """``campaign``'s summary up to the log's last row: the recorded one plus its tail, or
    (none recorded, or ``recorded=False``: a PostgreSQL log, which has no summary tables)
    computed from the indexes and every reply's payload. Run inside a read transaction, so
    the recorded part and the tail are of one snapshot."""
    (top,) = conn.execute("SELECT coalesce(max(gseq), 0) FROM events").fetchone()
    top = int(top)
    mark = _mark(conn, campaign) if recorded else None
    if mark is None:
        summary = Summary(top)
        summary.add_cases(conn.execute(_ALL_CASES, (campaign,)).fetchall())
        for cost, cached in conn.execute(_ALL_SPEND, (campaign, top)):
            if cost and not cached:
                summary.usd += float(cost)
        return summary
    through, usd = mark
    summary = Summary(max(top, through), usd, found=True)
    summary.add_cases(
        conn.execute(
            "SELECT case_id, closed FROM summary_cases WHERE campaign = ?", (campaign,)
        ).fetchall()
    )
    summary.add_rows(conn.execute(_RANGE, (campaign, through, top)))
    return summary


def _store(conn: sqlite3.Connection, campaign: str, summary: Summary) -> None:
    conn.executemany(
        "INSERT INTO summary_cases (campaign, case_id, closed) VALUES (?, ?, ?)"
        " ON CONFLICT (campaign, case_id) DO UPDATE SET closed = max(closed, excluded.closed)",
        [(campaign, cid, 1) for cid in summary.closed]
        + [(campaign, cid, 0) for cid in summary.unclosed],
    )
    _store_mark(conn, campaign, summary.through_gseq, summary.usd)


def _store_mark(conn: sqlite3.Connection, campaign: str, through: int, usd: float) -> None:
    conn.execute(
        "INSERT INTO summary_marks (campaign, through_gseq, usd) VALUES (?, ?, ?)"
        " ON CONFLICT (campaign) DO UPDATE SET through_gseq = excluded.through_gseq,"
        " usd = excluded.usd",
        (campaign, through, usd),
    )


# A reply payload whose every "cost_usd" key is followed by null: its
# json_extract('$.reply.cost_usd') is NULL, whatever the JSON around it. (Inside a JSON
# string a quote is escaped, so the text '"cost_usd":null' there is never found; a key
# spelled with escapes holds a backslash-u, and such a payload is left to the SQL.)
_NULL_COST = '"cost_usd":null'


def _cost_is_null(payload: str) -> bool:
    """Whether the reply payload's (or payloads', joined) costs are all null: every
    occurrence of cost_usd is in a null key (each such key holds one)."""
    return payload.count("cost_usd") == payload.count(_NULL_COST) and "\\u" not in payload


class HeldRows:
    """The rows a sole writer appended since the summaries last moved, by campaign: each
    case id with whether its CaseClosed is among them, and whether every reply's cost is
    known to be none. `advance` moves a summary from them when they are all the rows its
    move covers: the writer holds every row of its file (a new log built whole) since
    ``since``, the top of the last move, or for a campaign first seen since then, all of
    its rows. ``since`` None: unknown (a commit failed), the next move reads everything."""

    def __init__(self) -> None:
        self.since: int | None = 0  # a new, empty file: every row is held
        self.cases: dict[str, dict[str, int]] = {}  # campaign -> case id -> closed (0/1)
        self.costly: set[str] = set()  # campaigns with a reply whose cost may not be none
        self.seen_before: set[str] = set()  # campaigns with rows before ``since``

    def add(self, rows: Sequence[Sequence[Any]]) -> None:
        """Adds appended rows (campaign, case_id, seq, kind, schema_version, turn, attempt,
        payload), as committed."""
        # C-level passes over the rows (maps, comprehensions, dict and str methods): one
        # Python loop a row cost twice the SQL this replaces.
        campaigns = set(map(itemgetter(0), rows))
        if len(campaigns) == 1:
            self._add(campaigns.pop(), rows)
            return
        for campaign in sorted(campaigns):
            self._add(campaign, [row for row in rows if row[0] == campaign])

    def _add(self, campaign: str, rows: Sequence[Sequence[Any]]) -> None:
        cases = dict.fromkeys(map(itemgetter(1), rows), 0)
        earlier = self.cases.get(campaign)
        if earlier:
            cases.update(earlier)  # its closings stay
        cases.update(dict.fromkeys([r[1] for r in rows if r[3] == "CaseClosed"], 1))
        cases.pop("", None)  # campaign-level events: no case
        self.cases[campaign] = cases
        # A campaign-level reply is checked too: more often the SQL, never a wrong sum.
        replies = [r[7] for r in rows if r[3] == "ReplyReceived"]
        if replies and not _cost_is_null("\n".join(replies)):  # "\n" is in no pattern
            self.costly.add(campaign)

    def covers(self, campaign: str, through: int) -> bool:
        """Whether these rows are all of ``campaign``'s rows after ``through``."""
        if self.since is None:
            return False
        if through == self.since:
            return True
        return through == 0 and campaign not in self.seen_before

    def moved(self, top: int | None) -> None:
        """The summaries now cover every row up to ``top`` (None: unknown, a commit failed)."""
        self.seen_before.update(self.cases)
        self.cases.clear()
        self.costly.clear()
        self.since = top


_MOVE_HELD = (
    "INSERT INTO summary_cases (campaign, case_id, closed) VALUES {}"
    " ON CONFLICT (campaign, case_id) DO UPDATE SET closed = max(closed, excluded.closed)"
)
_HELD_PER_STATEMENT = 333  # 3 parameters a row, under SQLite's oldest limit of 999


def _move_held(conn: sqlite3.Connection, campaign: str, cases: dict[str, int]) -> None:
    """`_MOVE_CASES` of a range whose case ids and closings are known."""
    values = [v for case_id, closed in cases.items() for v in (campaign, case_id, closed)]
    step = 3 * _HELD_PER_STATEMENT
    for i in range(0, len(values), step):
        chunk = values[i : i + step]
        conn.execute(_MOVE_HELD.format(",".join(["(?,?,?)"] * (len(chunk) // 3))), chunk)


def start(conn: sqlite3.Connection, campaign: str) -> None:
    """A summary covering nothing yet, for a campaign whose CampaignStarted is being
    committed (`advance` in the same transaction adds the campaign's rows)."""
    conn.execute(
        "INSERT OR IGNORE INTO summary_marks (campaign, through_gseq, usd) VALUES (?, 0, 0.0)",
        (campaign,),
    )


def advance(conn: sqlite3.Connection, top: int | None = None, held: HeldRows | None = None) -> None:
    """Moves every campaign's summary to ``top`` (default: the log's last row), inside the
    caller's write transaction; from ``held`` where it holds all the rows a move covers."""
    if top is None:
        (top,) = conn.execute("SELECT coalesce(max(gseq), 0) FROM events").fetchone()
    marks = conn.execute(
        "SELECT campaign, through_gseq, usd FROM summary_marks WHERE through_gseq < ?", (top,)
    ).fetchall()
    for campaign, through, usd in marks:
        if held is not None and held.covers(campaign, through) and campaign not in held.costly:
            # The same rows as the SQL's, and no reply with a cost: the spend stays.
            _move_held(conn, campaign, held.cases.get(campaign, {}))
            _store_mark(conn, campaign, int(top), float(usd))
            continue
        # The cases in one statement (an executemany of ~1,000 upserts cost more than the
        # events' own inserts of a commit); the spend in Python, summed in gseq order from
        # the recorded one, as `Summary.add_rows` sums it, so the float is the same.
        conn.execute(_MOVE_CASES, (campaign, campaign, through, top))
        spend = float(usd)
        for cost, cached in conn.execute(_RANGE_SPEND, (campaign, through, top)):
            if cost and not cached:
                spend += float(cost)
        _store_mark(conn, campaign, int(top), spend)
    if held is not None:
        held.moved(int(top))


def record(conn: sqlite3.Connection, campaign: str, summary: Summary) -> None:
    """Records a summary a reader computed from every row, for a campaign that has none
    (a log written before summaries); an existing one is kept (it is as true)."""
    if _mark(conn, campaign) is None:
        _store(conn, campaign, summary)
