"""The event log's SQLite layout: the format marker, tables, indexes, views and the
connection settings, shared by the writer and the readers."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.store import _sqlar
from harness.store._compact_schema import LOG_FORMAT_2
from harness.vocabulary.errors import NotAHarnessLogError

LOG_FORMAT = "bias-harness-event-log/1"  # this module's layout, the default for new logs
# Every format this harness reads: format 1 (this module) and format 2
# (`harness.store._compact_schema`, what `harness copy --compact` writes).
LOG_FORMATS = (LOG_FORMAT, LOG_FORMAT_2)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    gseq            INTEGER PRIMARY KEY AUTOINCREMENT,  -- global order of commits
    campaign        TEXT    NOT NULL,
    case_id         TEXT    NOT NULL,                   -- '' for campaign-level events
    seq             INTEGER NOT NULL,                   -- per-case sequence, from 1
    kind            TEXT    NOT NULL,
    schema_version  INTEGER NOT NULL,
    turn            INTEGER,                            -- set on AskSent/ReplyReceived/AskFailed
    attempt         INTEGER,
    batch           INTEGER NOT NULL,                   -- events appended atomically together
    ts              REAL    NOT NULL,
    payload         TEXT    NOT NULL,
    UNIQUE (campaign, case_id, seq)
);
CREATE INDEX IF NOT EXISTS events_by_kind ON events (campaign, kind);
-- No (campaign, case_id, turn, attempt) index: a case holds a handful of events, so the turns
-- view finds a turn's reply through this one as fast, and that index was 11 % of a log.
-- Lets the views find a case's CaseOpened without statistics (else a quadratic join).
CREATE INDEX IF NOT EXISTS events_by_case_kind ON events (campaign, case_id, kind);

-- One row per attempt at a turn, with its outcome. Query with the sqlite3 shell.
CREATE VIEW IF NOT EXISTS turns AS
SELECT s.campaign,
       s.case_id,
       s.turn,
       s.attempt,
       json_extract(s.payload, '$.model')       AS model,
       json_extract(s.payload, '$.ask.thread')  AS thread,
       json_extract(s.payload, '$.ask.role')    AS role,
       json_extract(s.payload, '$.ask.prompt')  AS prompt,
       json_extract(s.payload, '$.request_key') AS request_key,
       json_extract(r.payload, '$.reply.text')  AS reply,
       json_extract(r.payload, '$.reply.usage.input_tokens')  AS input_tokens,
       json_extract(r.payload, '$.reply.usage.output_tokens') AS output_tokens,
       json_extract(r.payload, '$.reply.latency_s')           AS latency_s,
       json_extract(r.payload, '$.reply.finish_reason')       AS finish_reason,
       json_extract(f.payload, '$.error_kind')  AS error_kind,
       json_extract(f.payload, '$.decision')    AS decision,
       s.ts AS sent_at
FROM events s
LEFT JOIN events r ON r.campaign = s.campaign AND r.case_id = s.case_id
      AND r.turn = s.turn AND r.attempt = s.attempt AND r.kind = 'ReplyReceived'
LEFT JOIN events f ON f.campaign = s.campaign AND f.case_id = s.case_id
      AND f.turn = s.turn AND f.attempt = s.attempt AND f.kind = 'AskFailed'
WHERE s.kind = 'AskSent';

-- One row per verdict (the relation's own, and any later judge's).
CREATE VIEW IF NOT EXISTS verdicts AS
SELECT v.campaign,
       v.case_id,
       json_extract(o.payload, '$.case.relation') AS relation,
       json_extract(o.payload, '$.case.model')    AS model,
       json_extract(o.payload, '$.case.repeat')   AS repeat,
       json_extract(v.payload, '$.verdict.outcome') AS outcome,
       json_extract(v.payload, '$.verdict.reason')  AS reason,
       json_extract(v.payload, '$.verdict.evidence') AS evidence,
       json_extract(v.payload, '$.source')          AS source,
       v.ts AS decided_at
FROM events v
JOIN events o ON o.campaign = v.campaign AND o.case_id = v.case_id AND o.kind = 'CaseOpened'
WHERE v.kind = 'VerdictReached';
"""

# The connection settings of the log, in one place: the writer's (WAL, durable commits) and
# the readers' (`harness.store.reader.EventReader`, read-only: they only wait out a busy writer).
WRITER_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA busy_timeout=10000",
)
READER_PRAGMAS = ("PRAGMA busy_timeout=10000",)
# A log built whole in a private file (`harness.store.fresh_log`): a journal only for ROLLBACK
# (a batch that fails alone), kept in memory, and commits that do not wait for the disk;
# durability comes once, when the finished file is published.
BULK_PRAGMAS = (
    "PRAGMA journal_mode=MEMORY",
    "PRAGMA synchronous=OFF",
    "PRAGMA busy_timeout=10000",
)


def apply_pragmas(conn: sqlite3.Connection, pragmas: Sequence[str] = WRITER_PRAGMAS) -> None:
    for pragma in pragmas:
        conn.execute(pragma)


def check_log_format(conn: sqlite3.Connection, path: Path) -> int:
    """The format number (1 or 2) of the log ``conn`` reads; `NotAHarnessLogError` else."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise unreadable_log(path, exc) from exc
    if row is None or row[0] not in LOG_FORMATS:
        raise NotAHarnessLogError(marker_problem(path, row[0] if row else None))
    return LOG_FORMATS.index(row[0]) + 1


_SQLITE_HEADER = b"SQLite format 3\x00"
_MARKER_PREFIX = LOG_FORMAT.rsplit("/", 1)[0] + "/"


def marker_problem(shown: object, marker: str | None) -> str:
    """Why a log with this format ``marker`` (None: none) cannot be read, in words that say
    what to do: a newer harness's log is not "not a log"."""
    if marker is not None and marker.startswith(_MARKER_PREFIX):
        number = marker[len(_MARKER_PREFIX) :]
        known = ", ".join(f.rsplit("/", 1)[1] for f in LOG_FORMATS)
        if number.isdigit() and int(number) > len(LOG_FORMATS):
            return (
                f"{shown} was written by a newer bias-harness (log format {number}; this one "
                f"reads formats {known}): upgrade bias-harness to read it"
            )
        return f"{shown} holds an unknown log format {marker!r} (this harness reads {known})"
    if marker is None:
        return f"{shown} is not a harness event log (no format marker)"
    return f"{shown} is not a harness event log (format marker {marker!r})"


def unreadable_log(path: Path, exc: sqlite3.Error) -> NotAHarnessLogError:
    """The error for a file SQLite cannot read as a log: damaged (a SQLite file that no
    longer reads), read-only where a write was needed, or not a SQLite file at all."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return NotAHarnessLogError(
            f"{path} is read-only ({text}): make it writable, or copy it to continue it "
            "(reading commands work on a read-only log)"
        )
    try:
        with path.open("rb") as file:
            header = file.read(len(_SQLITE_HEADER))
    except OSError:
        header = b""
    if header == _SQLITE_HEADER or "malformed" in text or "corrupt" in text:
        return NotAHarnessLogError(
            f"{path} is damaged: SQLite cannot read it ({text}); use a copy made before the "
            "damage (an interrupted campaign never damages its log: a disk or a tool did)"
        )
    if "not a database" in text:
        return NotAHarnessLogError(
            f"{path} is not a harness event log: not a SQLite file ({text}), or its first "
            "page is damaged"
        )
    return NotAHarnessLogError(f"{path} cannot be read as a harness event log: {text}")


def connect(path: str | os.PathLike[str], **kwargs: Any) -> sqlite3.Connection:
    """`sqlite3.connect` to a log, with the SQL functions its views call: the way to read a
    log of either format with ad-hoc SQL from Python (``pandas.read_sql`` over its
    ``events``, ``turns`` and ``verdicts`` views, say). ``kwargs`` go to `sqlite3.connect`."""
    return _sqlar.register(sqlite3.connect(path, **kwargs))
