"""Rows of log format 2 (`harness.store._compact_schema`): a payload split into its shape and
texts, and events inserted with their campaign, case, kind and texts interned as integer
keys. Used by the SQLite writer of a format-2 log and by `harness copy --compact`.

Keys are found again through the tables (``texts_by_hash``, the UNIQUE names), so two
writers of one file agree; the caches here only save lookups, are bounded (memory does not
grow with the campaign) and are dropped whenever a transaction is rolled back, since keys
handed out inside it are then gone.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from harness.store._compact_schema import CASE_MARKER, INLINE, SLOTS, inline_marker, slot_marker
from harness.store._compact_texts import TextStore

MIN_TEXT = 16  # characters of a string value worth a texts row (its key costs 1-4 bytes)
# Values that differ from one event to the next (a seed, an index, an id) are cut out too and
# stored in the row itself, so that the rest of the payload, its shape, is shared: numbers of
# this many characters or more, and strings under an identifier's key (question_id,
# request_key), which are as unique as numbers: a texts row would only add its key and hash.
MIN_INLINE_NUMBER = 2
MAX_INLINE_STRING = 80
_CACHE_LIMIT = 50_000  # entries per cache, then it starts afresh
_SPLIT_CACHED = 400  # characters: longer payloads rarely repeat
# The tokens worth cutting out, found in one pass of the regex engine: everything else (short
# plain strings, keys, short numbers, punctuation) is skipped inside the engine by the lazy,
# atomic first part, so the scan never starts inside a string. Groups: 1 the body of a string
# value (kept if long enough), 2 the string value of an identifier's key, 3 a number of 3+
# characters. ``\Z`` ends the last match at the end of the payload (no rescans). Strings are
# matched with unrolled loops, several times faster than an alternation per character.
_BODY = r'[^"\\]*+(?:\\.[^"\\]*+)*+'
_ID = r'"(?:[^"\\]*_)?(?:id|key|seed|hash)":'
_TOKEN = re.compile(
    rf"""
    (?> [^"\d-]++ | -(?!\d) | -?\d{{1,{MIN_INLINE_NUMBER - 1}}}+(?![\d.eE+-])
      | "[^"\\]{{0,{MIN_TEXT - 1}}}+"(?!:)
      | (?!{_ID})"{_BODY}": )*?
    (?: "({_BODY})"(?!:)
      | {_ID}(?:("{_BODY}")|(?=[^"]))
      | (-?\d[\d.eE+-]{{{MIN_INLINE_NUMBER - 1},}}+)
      | \Z )
    """,
    re.VERBOSE,
)
_COLUMNS = (
    "gseq, campaign, case_key, seq, kind, schema_version, turn, attempt, batch, ts, cost_usd,"
    f" shape, {', '.join(f't{slot}' for slot in range(SLOTS))},"
    f" {', '.join(f'i{slot}' for slot in range(INLINE))}"
)
_ROW_WIDTH = 12 + SLOTS + INLINE
_ROW_MARKS = "(" + ",".join("?" * _ROW_WIDTH) + ")"


@dataclass(frozen=True)
class SplitPayload:
    """A payload as format 2 stores it: its shape, the escaped string bodies cut out into
    texts, and the JSON tokens cut out to be stored inline."""

    shape: str
    texts: tuple[str, ...]
    inline: tuple[str, ...] = ()


def _plain_json_string(value: str) -> bool:
    return json.dumps(value, ensure_ascii=False) == f'"{value}"'


# Candidates of a scan: texts (-length, start, end, body), inline tokens (is string,
# -length, start, end, token) and case-id cuts (start, end, marker).
Found = list[tuple[int, int, int, str]]
Short = list[tuple[int, int, int, int, str]]
Cuts = list[tuple[int, int, str]]


def case_body(case_id: str) -> str | None:
    """The case id as it appears inside a JSON string, if it can be cut out as a value."""
    return case_id if case_id and _plain_json_string(case_id) else None


def scan(payload: str, case: str | None) -> tuple[Found, Short, Cuts]:
    """The candidates `split_payload` chooses from, found in one pass of `_TOKEN`."""
    found: Found = []
    short: Short = []
    cuts: Cuts = []
    for match in _TOKEN.finditer(payload):
        body, token, number = match.groups()
        if number is not None:
            short.append((0, -len(number), *match.span(3), number))
            continue
        if token is not None:
            start, end = match.span(2)
            body = token[1:-1]
            if body != case and len(body) <= MAX_INLINE_STRING:
                short.append((1, -len(token), start, end, token))
                continue
        elif body is not None and len(body) >= MIN_TEXT:
            start, end = match.start(1) - 1, match.end(1) + 1
        else:
            continue
        if body == case:
            cuts.append((start, end, CASE_MARKER))
        else:
            found.append((-len(body), start, end, body))
    return found, short, cuts


def assemble(payload: str, found: Found, short: Short, cuts: Cuts) -> SplitPayload:
    """The split of ``payload`` given its candidates: the `SLOTS` longest texts, the `INLINE`
    first tokens (numbers, then the longest), every case-id cut."""
    if not found and not cuts and not short:
        return SplitPayload(payload, ())
    found = sorted(found)[:SLOTS]
    short = sorted(short)[:INLINE]
    texts = tuple(body for *_, body in found)
    inline = tuple(token for *_, token in short)
    cuts = [
        *cuts,
        *((start, end, slot_marker(slot)) for slot, (_, start, end, _b) in enumerate(found)),
        *((start, end, inline_marker(slot)) for slot, (_s, _l, start, end, _t) in enumerate(short)),
    ]
    cuts.sort()
    pieces: list[str] = []
    last = 0
    for start, end, marker in cuts:
        pieces.append(payload[last:start])
        pieces.append(marker)
        last = end
    pieces.append(payload[last:])
    return SplitPayload("".join(pieces), texts, inline)


def split_payload(payload: str, case_id: str) -> SplitPayload:
    """Cut out of ``payload`` the `SLOTS` longest string values of at least `MIN_TEXT`
    characters, the case id where it is a value, and `INLINE` shorter varying tokens
    (numbers first); ``shape`` with them put back at their markers is ``payload``, exactly."""
    if "\x01" in payload:  # never in encoded JSON; keep such a payload whole
        return SplitPayload(payload, ())
    return assemble(payload, *scan(payload, case_body(case_id)))


_INTEGER = re.compile(r"-?[1-9][0-9]{0,18}")
_HEX = re.compile(r'"(?:[0-9a-f]{2})+"')


def inline_value(token: str) -> str | int | bytes:
    """How an inline token is stored in a log with blocks: a canonical integer as an INTEGER
    (a 19-digit seed in 8 bytes), a quoted lowercase-hex string (a request key) as the BLOB
    of its bytes; the views and `harness.store._compact_payloads` write them back exactly."""
    if _INTEGER.fullmatch(token) and -(2**63) <= int(token) < 2**63:
        return int(token)
    if _HEX.fullmatch(token):
        return bytes.fromhex(token[1:-1])
    return token


def reply_cost(kind: str, payload: str) -> float | None:
    """What a ReplyReceived cost when it was paid for (not a cached answer), else None."""
    if kind != "ReplyReceived" or '"cost_usd":null' in payload:
        return None
    try:
        data = json.loads(payload)
        reply = data.get("reply") or {}
        cost = reply.get("cost_usd")
        if data.get("cached") or not isinstance(cost, int | float):
            return None
        return float(cost)
    except (ValueError, AttributeError):
        return None


class CompactInserter:
    """Inserts format-1-shaped rows (campaign, case_id, seq, kind, schema_version, turn,
    attempt, batch, ts, payload), optionally with their gseq, into a format-2 log. Runs on
    the thread that owns ``conn``, inside the caller's transaction."""

    def __init__(self, blocks: bool = True) -> None:
        """``blocks``: the log has the current layout (`compact_schema.has_blocks`)."""
        self._texts = TextStore(blocks)
        self._names: dict[tuple[str, str, str], int] = {}
        # Short payloads repeat word for word (a "No." reply, a CaseClosed): split once.
        self._splits: dict[str, SplitPayload] = {}
        self._batches: dict[int, float] = {}  # batch -> its stored ts

    def forget(self) -> None:
        """Drop the caches: call after a rollback (keys handed out in it no longer exist)."""
        self._texts.forget()
        self._names.clear()
        self._batches.clear()

    def _cached(self, cache: dict[object, int], key: object, value: int) -> int:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = value
        return value

    def _row_ts(self, conn: sqlite3.Connection, batch: object, ts: object) -> object:
        """The ts a row stores: NULL when its batch's (recorded with the batch's first row)."""
        if not self._texts.blocks or not isinstance(batch, int):
            return ts
        known = self._batches.get(batch)
        if known is None:
            conn.execute("INSERT OR IGNORE INTO batches (batch, ts) VALUES (?, ?)", (batch, ts))
            row = conn.execute("SELECT ts FROM batches WHERE batch = ?", (batch,)).fetchone()
            if len(self._batches) >= _CACHE_LIMIT:
                self._batches.clear()
            known = self._batches[batch] = row[0]
        return None if known == ts else ts

    def _name(self, conn: sqlite3.Connection, table: str, name: str, campaign: int = 0) -> int:
        key = (table, name, str(campaign))
        found = self._names.get(key)
        if found is not None:
            return found
        args: tuple[object, ...]
        if table == "cases":
            where, args = "campaign = ? AND name = ?", (campaign, name)
            insert = "INSERT OR IGNORE INTO cases (campaign, name) VALUES (?, ?)"
        else:
            where, args = "name = ?", (name,)
            insert = f"INSERT OR IGNORE INTO {table} (name) VALUES (?)"
        # A new name (every case of an import) is one statement; a known one (another
        # writer's, or one the bounded cache let go) returns nothing and is looked up.
        rows = conn.execute(f"{insert} RETURNING key", args).fetchall()  # stepped to the end
        row = rows[0] if rows else None
        if row is None:
            row = conn.execute(f"SELECT key FROM {table} WHERE {where}", args).fetchone()
        return self._cached(self._names, key, int(row[0]))  # type: ignore[arg-type]

    def row(
        self, conn: sqlite3.Connection, row: Sequence[object], gseq: int | None = None
    ) -> tuple[object, ...]:
        """The ``log`` row for one format-1-shaped row."""
        campaign, case_id, seq, kind, version, turn, attempt, batch, ts, payload = row
        assert isinstance(campaign, str) and isinstance(case_id, str) and isinstance(kind, str)
        text = payload if isinstance(payload, str) else bytes(payload).decode()  # type: ignore[call-overload]
        campaign_key = self._name(conn, "campaigns", campaign)
        case_key = self._name(conn, "cases", case_id, campaign_key)
        kind_key = self._name(conn, "kinds", kind)
        split: SplitPayload | None = None
        if len(text) <= _SPLIT_CACHED:
            split = self._splits.get(text)
        if split is None or (case_id and case_id in text):
            split = split_payload(text, case_id)
            if len(text) <= _SPLIT_CACHED and not (case_id and case_id in text):
                if len(self._splits) >= _CACHE_LIMIT:
                    self._splits.clear()
                self._splits[text] = split
        slots: list[int | None] = [self._texts.key(conn, t) for t in split.texts]
        slots += [None] * (SLOTS - len(slots))
        tokens: tuple[object, ...] = split.inline
        if self._texts.blocks:
            tokens = tuple(inline_value(token) for token in split.inline)
        inline: list[object] = [*tokens, *[None] * (INLINE - len(tokens))]
        # A shape is stored as is: every row reads one, and the views read a TEXT without a
        # Python call (in a block, +1.1 MB saved on the GPT-4o-mini import, the full scan
        # of the ``events`` view took ~2x the CPU: 2026-11-27, bench/RESULTS.md).
        shape = self._texts.key(conn, split.shape, packed=False)
        cost = reply_cost(kind, text)
        ts = self._row_ts(conn, batch, ts)
        return (gseq, campaign_key, case_key, seq, kind_key, version, turn, attempt, batch, ts,
                cost, shape, *slots, *inline)  # fmt: skip

    _PER_STATEMENT = 999 // _ROW_WIDTH

    def insert(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[Sequence[object]],
        gseqs: Sequence[int | None] | None = None,
    ) -> None:
        """Insert ``rows`` (multi-row statements; see `harness.store.writer` for why)."""
        self._texts.begin(conn)
        built = [
            self.row(conn, row, gseqs[i] if gseqs is not None else None)
            for i, row in enumerate(rows)
        ]
        step = self._PER_STATEMENT
        for i in range(0, len(built), step):
            chunk = built[i : i + step]
            sql = f"INSERT INTO log ({_COLUMNS}) VALUES " + ",".join([_ROW_MARKS] * len(chunk))
            conn.execute(sql, [value for r in chunk for value in r])
        self._texts.flush(conn)
