"""A digest chained over each case's events, written with them, so that an edited, deleted,
inserted or reordered committed event is found, and the first one that differs named.

What for: `harness replay --verify` re-derives asks and verdicts from the events as they are
now; an edit that leaves them derivable (a reply changed without changing its parse, a
deleted trailing turn of an open case) would pass. The chain records what was committed.

How: each event's *link* is ``sha256(link of the case's event before || sha256(row))``,
its first 16 bytes, where ``row`` is the event's position and content (`row_bytes`: seq,
kind, schema version, turn, attempt, payload; not the commit's batch or time) and the link
before the first event is `chain_start` of (campaign, case). Table ``case_digests`` holds,
per case, the seq of its last event and the concatenation of every link in seq order; the
writer extends it in the transaction that appends the events, by SQL computed in the
database (SQLite: the ``harness_chain`` function registered on the writer's connection;
PostgreSQL: ``sha256``), so several writers of one log chain each case correctly without
any cache. A case whose first event was written before digests existed gets none: its
events verify as before (`verify_chain` answers None) and replay says how many such cases
it saw. The chain is no signature: whoever can rewrite the log can rewrite the table too;
it catches edits made by hand, by tools and by bugs, not by an adversary who knows it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from hashlib import sha256
from typing import Any

LINK_BYTES = 16
DIGEST_BYTES = 32  # a row_digest (sha256)

SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS case_digests (campaign TEXT NOT NULL, case_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL, links BLOB NOT NULL, PRIMARY KEY (campaign, case_id)) WITHOUT ROWID"
)
POSTGRES_SCHEMA = (
    'CREATE TABLE IF NOT EXISTS case_digests (campaign TEXT COLLATE "C" NOT NULL,'
    ' case_id TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, links BYTEA NOT NULL,'
    " PRIMARY KEY (campaign, case_id))"
)

# The first event of a case starts its row; every later one extends it, if it has one (a
# case begun before digests has none, and gets none). ``harness_chain(links, digests)``
# appends a `link` a digest from the last of ``links`` (SQLite's ``||`` would make the blob
# text); PostgreSQL's statement appends one, from one digest.
# A case's first event (seq 1) starts its chain afresh: the event's own insert proved no
# event #1 of the case is in the log, so a row left by events deleted since is stale.
SQLITE_START = (
    "INSERT INTO case_digests (campaign, case_id, seq, links) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (campaign, case_id) DO UPDATE SET seq = excluded.seq, links = excluded.links"
)
SQLITE_EXTEND = (
    "UPDATE case_digests SET seq = ?, links = harness_chain(links, ?)"
    " WHERE campaign = ? AND case_id = ?"
)
POSTGRES_START = SQLITE_START.replace("?", "%s")
POSTGRES_EXTEND = (
    "UPDATE case_digests SET seq = %s, links = links || substring(sha256(substring(links"
    " FROM octet_length(links) - 15) || %s) FROM 1 FOR 16) WHERE campaign = %s AND case_id = %s"
)


def row_bytes(
    seq: int, kind: str, version: int, turn: int | None, attempt: int | None, payload: str
) -> bytes:
    """What a link covers of one event: its position and content, unambiguously joined."""
    head = f"{seq}\x1f{kind}\x1f{version}\x1f{'' if turn is None else turn}\x1f"
    head += f"{'' if attempt is None else attempt}\x1f"
    # surrogatepass: a payload the encoder let through is still digested, never a crash.
    return head.encode() + payload.encode("utf-8", "surrogatepass")


def row_digest(
    seq: int, kind: str, version: int, turn: int | None, attempt: int | None, payload: str
) -> bytes:
    """sha256 of `row_bytes`, fed in two parts (no copy of the payload joined to its head)."""
    head = f"{seq}\x1f{kind}\x1f{version}\x1f{'' if turn is None else turn}\x1f"
    head += f"{'' if attempt is None else attempt}\x1f"
    digest = hashlib.sha256(head.encode())
    digest.update(payload.encode("utf-8", "surrogatepass"))
    return digest.digest()


def chain_start(campaign: str, case_id: str) -> bytes:
    """The link before a case's first event: binds the chain to the case it belongs to."""
    return hashlib.sha256(f"harness-case\x1f{campaign}\x1f{case_id}".encode()).digest()[:LINK_BYTES]


def link(previous: bytes, digest: bytes) -> bytes:
    """The next link from the last one and the event's `row_digest`."""
    return hashlib.sha256(previous + digest).digest()[:LINK_BYTES]


def sqlite_chain(links: bytes, digests: bytes) -> bytes:
    """``harness_chain``, the SQL function of the SQLite writer's connection: ``links`` with
    one link appended for each `row_digest` in ``digests`` (their concatenation, in seq
    order: one UPDATE extends a case by all its events of a commit)."""
    links = bytes(links)
    digests = bytes(digests)
    previous = links[-LINK_BYTES:]
    added = []
    for at in range(0, len(digests), DIGEST_BYTES):
        previous = link(previous, digests[at : at + DIGEST_BYTES])
        added.append(previous)
    return links + b"".join(added)


def write_params(
    rows: Sequence[tuple[str, str, int, str, int, int | None, int | None, str]],
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The parameters of `SQLITE_START` / `SQLITE_EXTEND` (and the PostgreSQL ones) for
    appended rows (campaign, case_id, seq, kind, version, turn, attempt, payload), in the
    order they must run: all starts, then every extension in append order (a case's events
    arrive in seq order; its start, seq 1, comes first)."""
    starts: list[tuple[object, ...]] = []
    extends: list[tuple[object, ...]] = []
    for campaign, case_id, seq, kind, version, turn, attempt, payload in rows:
        digest = row_digest(seq, kind, version, turn, attempt, payload)
        if seq == 1:
            starts.append((campaign, case_id, 1, link(chain_start(campaign, case_id), digest)))
        else:
            extends.append((seq, digest, campaign, case_id))
    return starts, extends


def sqlite_write_params(
    rows: Sequence[tuple[str, str, int, str, int, int | None, int | None, str]],
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """`write_params` with one statement per case, not per event, for the SQLite writer: a
    case started in these rows gets its whole chain in its `SQLITE_START` row (computed
    here: nothing before it), and a case extended gets one `SQLITE_EXTEND` whose
    ``harness_chain`` appends a link per digest (the database holds the link before them,
    so several writers still chain a case correctly without any cache). The chains are
    those of `write_params`, event for event."""
    started: dict[tuple[str, str], list[object]] = {}  # -> [seq, links]
    extended: dict[tuple[str, str], list[object]] = {}  # -> [seq, digests]
    for campaign, case_id, seq, kind, version, turn, attempt, payload in rows:
        digest = row_digest(seq, kind, version, turn, attempt, payload)
        key = (campaign, case_id)
        if seq == 1:
            started[key] = [1, link(chain_start(campaign, case_id), digest)]
            extended.pop(key, None)  # a case started afresh (see SQLITE_START)
        elif key in started:
            entry = started[key]
            links = entry[1]
            assert isinstance(links, bytes)
            entry[0], entry[1] = seq, links + link(links[-LINK_BYTES:], digest)
        elif key in extended:
            entry = extended[key]
            digests = entry[1]
            assert isinstance(digests, bytes)
            entry[0], entry[1] = seq, digests + digest
        else:
            extended[key] = [seq, digest]
    starts: list[tuple[object, ...]] = [
        (c, case, seq, links) for (c, case), (seq, links) in started.items()
    ]
    extends: list[tuple[object, ...]] = [
        (seq, digests, c, case) for (c, case), (seq, digests) in extended.items()
    ]
    return starts, extends


@dataclass(frozen=True)
class ChainBreak:
    """Where a case's events stop matching its recorded chain."""

    seq: int | None  # the first event that differs (None: an event is missing at the end)
    what: str


def verify_chain(
    campaign: str,
    case_id: str,
    rows: Sequence[tuple[int, str, int, int | None, int | None, str]],
    recorded: bytes,
    last_seq: int,
) -> ChainBreak | None:
    """Recompute the chain of ``rows`` (seq, kind, version, turn, attempt, payload; in seq
    order) and compare it with the ``recorded`` links; the first difference, or None."""
    previous = chain_start(campaign, case_id)
    count = len(recorded) // LINK_BYTES
    for i, (seq, kind, version, turn, attempt, payload) in enumerate(rows):
        if i >= count:
            return ChainBreak(seq, f"event #{seq} ({kind}) was not in the case when committed")
        previous = link(previous, row_digest(seq, kind, version, turn, attempt, payload))
        if previous != recorded[i * LINK_BYTES : (i + 1) * LINK_BYTES]:
            return ChainBreak(
                seq,
                f"event #{seq} ({kind}) differs from the one committed at position {i + 1}",
            )
    if len(rows) < count:
        after = f" after #{rows[-1][0]}" if rows else ""
        return ChainBreak(
            None,
            f"{count - len(rows)} committed event(s){after} are missing (the last committed "
            f"was #{last_seq})",
        )
    return None


def has_chains(connection: Any) -> bool:
    """Whether the log ``connection`` reads (SQLite's, or a PostgreSQL reader's) has the
    digest table: a log written before digests has none."""
    if isinstance(connection, sqlite3.Connection):
        # a table, or in log format 2 a view (`harness.store._compact_schema`)
        sql = "SELECT 1 FROM sqlite_master WHERE name = 'case_digests'"
    else:
        sql = "SELECT 1 WHERE to_regclass('case_digests') IS NOT NULL"
    return connection.execute(sql).fetchone() is not None


def recorded_chains(
    connection: Any, campaign: str, first: str | None = None, end: str | None = None
) -> Iterator[tuple[str, int, bytes]]:
    """(case_id, last seq, links) of every digested case of ``campaign`` whose id is in
    [first, end), in case id order (the order `harness.verifying` reads the cases in)."""
    where, args = "campaign = ? AND case_id != ''", [campaign]
    if first is not None:
        where, args = where + " AND case_id >= ?", [*args, first]
    if end is not None:
        where, args = where + " AND case_id < ?", [*args, end]
    sql = f"SELECT case_id, seq, links FROM case_digests WHERE {where} ORDER BY case_id"
    for case_id, seq, links in connection.execute(sql, tuple(args)):
        yield str(case_id), int(seq), bytes(links)


def all_chains(connection: Any) -> Iterator[tuple[str, str, int, bytes]]:
    """(campaign, case_id, last seq, links) of every digested case of the log, or nothing
    for a log without digests."""
    if not has_chains(connection):
        return
    sql = "SELECT campaign, case_id, seq, links FROM case_digests"
    for campaign, case_id, seq, links in connection.execute(sql):
        yield str(campaign), str(case_id), int(seq), bytes(links)


class ChainCheck:
    """Every recorded chain of a log checked against its events as they stream past in log
    order (`harness.store.copy`): a copy carries the chains of its source, once they are
    proved to be those of the events copied, so the copy verifies exactly as the source."""

    def __init__(self, recorded: Iterator[tuple[str, str, int, bytes]]) -> None:
        self.recorded = {(c, case): (seq, links) for c, case, seq, links in recorded}
        # (campaign, case) -> (events seen, the last link, its recorded links), for the
        # chained cases not found broken
        self._state: dict[tuple[str, str], tuple[int, bytes, bytes]] = {}
        self.breaks: dict[tuple[str, str], ChainBreak] = {}

    def feed(
        self,
        campaign: str,
        case_id: str,
        seq: int,
        kind: str,
        version: int,
        turn: int | None,
        attempt: int | None,
        payload: str,
    ) -> None:
        """One event, in log order (a case's events come in seq order). `row_digest` and
        `link` written out: this runs for every row a copy reads."""
        key = (campaign, case_id)
        state = self._state.get(key)
        if state is None:
            chain = self.recorded.get(key)
            if chain is None or key in self.breaks:
                return
            state = (0, chain_start(campaign, case_id), chain[1])
        count, previous, links = state
        if count >= len(links) // LINK_BYTES:
            self._broken(key, seq, f"event #{seq} ({kind}) was not in the case when committed")
            return
        head = f"{seq}\x1f{kind}\x1f{version}\x1f{'' if turn is None else turn}\x1f"
        digest = sha256(f"{head}{'' if attempt is None else attempt}\x1f".encode())
        digest.update(payload.encode("utf-8", "surrogatepass"))
        previous = sha256(previous + digest.digest()).digest()[:LINK_BYTES]
        if previous != links[count * LINK_BYTES : (count + 1) * LINK_BYTES]:
            self._broken(
                key,
                seq,
                f"event #{seq} ({kind}) differs from the one committed at position {count + 1}",
            )
            return
        self._state[key] = (count + 1, previous, links)

    def _broken(self, key: tuple[str, str], seq: int, what: str) -> None:
        self.breaks[key] = ChainBreak(seq, what)
        self._state.pop(key, None)

    def first_break(self) -> tuple[str, str, ChainBreak] | None:
        """After the last event: the first case (in campaign, case id order) whose events
        do not make its recorded chain, or None when every chain is proved."""
        for key, (last_seq, links) in self.recorded.items():
            if key in self.breaks:
                continue
            count = self._state.get(key, (0, b"", b""))[0]
            if count < len(links) // LINK_BYTES:
                what = (
                    f"{len(links) // LINK_BYTES - count} committed event(s) are missing (the "
                    f"last committed was #{last_seq})"
                )
                self.breaks[key] = ChainBreak(None, what)
        if not self.breaks:
            return None
        key = min(self.breaks)
        return key[0], key[1], self.breaks[key]

    def rows(self) -> list[tuple[str, str, int, bytes]]:
        """The recorded chains, as rows of ``case_digests`` for the copy."""
        return [(c, case, seq, links) for (c, case), (seq, links) in self.recorded.items()]
