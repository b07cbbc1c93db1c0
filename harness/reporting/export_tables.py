"""Wide, typed tables for data tools: ``harness export DB --table turns|verdicts|cases
--format csv|parquet|jsonl``, one row per turn, verdict or case.

Every table is one SQL query over the log's views (``turns``, ``verdicts``; see
`harness.store.schema`) and its ``CaseOpened`` events: the views stay the source of truth,
these tables only join and type them. Each column is declared once here (name, type, what
it holds); docs/export.md lists them and a test keeps the two in step.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any, TextIO

from harness.store.reader import EventReader
from harness.vocabulary.errors import StoreError
from harness.vocabulary.extras import require_extra

FORMATS = ("csv", "parquet", "jsonl")
BATCH = 5000  # rows per parquet row group written at a time


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # string, int64, float64, bool, timestamp (epoch seconds in the log), json
    doc: str


_CASE = [
    Column("campaign", "string", "campaign id"),
    Column("case_id", "string", "case id: relation/index/rrepeat@model"),
    Column("relation", "string", "the relation that drew the case"),
    Column("model", "string", "the model under test"),
]

TURN_COLUMNS = [
    *_CASE,
    Column("repeat", "int64", "which repeat of the case"),
    Column("turn", "int64", "turn number in the case, from 0"),
    Column("attempts", "int64", "attempts at this turn (retries included)"),
    Column("thread", "string", "the conversation thread the turn belongs to"),
    Column("role", "string", "subject (the model under test) or judge"),
    Column("prompt", "string", "the prompt of the turn"),
    Column("reply", "string", "the reply of the last attempt (null when it failed)"),
    Column("error_kind", "string", "why the last attempt failed (null when it succeeded)"),
    Column("decision", "string", "what the runner decided after that failure"),
    Column("input_tokens", "int64", "prompt tokens of the last attempt"),
    Column("output_tokens", "int64", "reply tokens of the last attempt"),
    Column("latency_s", "float64", "seconds the last attempt took"),
    Column("finish_reason", "string", "why the model stopped (stop, length...)"),
    Column("sent_at", "timestamp", "when the last attempt was sent (UTC)"),
]

VERDICT_COLUMNS = [
    *_CASE,
    Column("repeat", "int64", "which repeat of the case"),
    Column("source", "string", "who decided: relation (its oracle) or judge:<model>"),
    Column("outcome", "string", "VIOLATED, HELD, INVALID or REFUSED"),
    Column("reason", "string", "the verdict's reason"),
    Column("evidence", "json", "the verdict's evidence (JSON)"),
    Column("decided_at", "timestamp", "when the verdict was recorded (UTC)"),
]

CASE_COLUMNS = [
    *_CASE,
    Column("index", "int64", "the case's index in its relation's plan"),
    Column("repeat", "int64", "which repeat of the case"),
    Column("seed", "int64", "the case's seed (63-bit, derived from the campaign seed)"),
    Column("data", "json", "what the relation drew for the case (terms, groups...; JSON)"),
    Column("closed", "bool", "the case was closed (false: in flight when the campaign stopped)"),
    Column("turns", "int64", "turns asked"),
    Column("outcome", "string", "the relation's latest verdict (null: none yet)"),
    Column("reason", "string", "that verdict's reason"),
    Column("judge_outcomes", "json", "each re-judging source's latest outcome (JSON object)"),
    Column("input_tokens", "int64", "prompt tokens over the turns' last attempts"),
    Column("output_tokens", "int64", "reply tokens over the turns' last attempts"),
    Column("opened_at", "timestamp", "when the case was opened (UTC)"),
]

_TURNS_SQL = """
WITH attempts AS (
    SELECT t.*,
           COUNT(*) OVER (PARTITION BY t.case_id, t.turn) AS attempts,
           ROW_NUMBER() OVER (PARTITION BY t.case_id, t.turn ORDER BY t.attempt DESC) AS latest
    FROM turns t WHERE t.campaign = :campaign
)
SELECT a.campaign, a.case_id, json_extract(o.payload, '$.case.relation'), a.model,
       json_extract(o.payload, '$.case.repeat'), a.turn, a.attempts, a.thread, a.role,
       a.prompt, a.reply, a.error_kind, a.decision, a.input_tokens, a.output_tokens,
       a.latency_s, a.finish_reason, a.sent_at
FROM attempts a
JOIN events o ON o.campaign = a.campaign AND o.case_id = a.case_id AND o.kind = 'CaseOpened'
WHERE a.latest = 1
ORDER BY a.case_id, a.turn
"""

_VERDICTS_SQL = """
SELECT campaign, case_id, relation, model, repeat, source, outcome, reason, evidence,
       decided_at
FROM verdicts WHERE campaign = :campaign
ORDER BY case_id, decided_at
"""

_CASES_SQL = """
WITH last_turns AS (
    SELECT case_id, turn, input_tokens, output_tokens,
           ROW_NUMBER() OVER (PARTITION BY case_id, turn ORDER BY attempt DESC) AS latest
    FROM turns WHERE campaign = :campaign
), per_case AS (
    SELECT case_id, COUNT(*) AS turns, SUM(input_tokens) AS input_tokens,
           SUM(output_tokens) AS output_tokens
    FROM last_turns WHERE latest = 1 GROUP BY case_id
), ranked AS (
    SELECT case_id, source, outcome, reason,
           ROW_NUMBER() OVER (PARTITION BY case_id, source ORDER BY decided_at DESC) AS latest
    FROM verdicts WHERE campaign = :campaign
), judges AS (
    SELECT case_id, json_group_object(source, outcome) AS outcomes
    FROM ranked WHERE latest = 1 AND source != 'relation' GROUP BY case_id
)
SELECT o.campaign, o.case_id, json_extract(o.payload, '$.case.relation'),
       json_extract(o.payload, '$.case.model'), json_extract(o.payload, '$.case.index'),
       json_extract(o.payload, '$.case.repeat'),
       json_extract(o.payload, '$.case.seed'),
       json_extract(o.payload, '$.case.data'),
       EXISTS (SELECT 1 FROM events c WHERE c.campaign = o.campaign
               AND c.case_id = o.case_id AND c.kind = 'CaseClosed'),
       COALESCE(p.turns, 0), r.outcome, r.reason, COALESCE(j.outcomes, '{}'),
       p.input_tokens, p.output_tokens, o.ts
FROM events o
LEFT JOIN per_case p ON p.case_id = o.case_id
LEFT JOIN ranked r ON r.case_id = o.case_id AND r.source = 'relation' AND r.latest = 1
LEFT JOIN judges j ON j.case_id = o.case_id
WHERE o.campaign = :campaign AND o.kind = 'CaseOpened'
ORDER BY o.case_id
"""

TABLES: dict[str, tuple[list[Column], str]] = {
    "turns": (TURN_COLUMNS, _TURNS_SQL),
    "verdicts": (VERDICT_COLUMNS, _VERDICTS_SQL),
    "cases": (CASE_COLUMNS, _CASES_SQL),
}


def _typed(column: Column, value: Any) -> Any:
    """The value as its column's Python type (None stays None)."""
    if value is None:
        return None
    if column.type == "timestamp":
        return datetime.fromtimestamp(float(value), tz=UTC)
    if column.type == "bool":
        return bool(value)
    if column.type == "int64":
        return int(value)
    if column.type == "float64":
        return float(value)
    return str(value)


def table_rows(log: EventReader, table: str, campaign: str | None = None) -> Iterator[list[Any]]:
    columns, sql = TABLES[table]
    cid = log.campaign_id(campaign)
    try:
        for row in log.connection.execute(sql, {"campaign": cid}):
            yield [_typed(c, v) for c, v in zip(columns, row, strict=True)]
    except sqlite3.Error as exc:
        raise StoreError(f"{log.path}: the {table} table could not be read ({exc})") from exc


def _text(column: Column, value: Any) -> Any:
    """The value as text formats write it: ISO 8601 times, JSON-style booleans."""
    if value is None:
        return None
    if column.type == "timestamp":
        return value.isoformat()
    if column.type == "bool":
        return "true" if value else "false"
    return value


def write_csv(columns: list[Column], rows: Iterator[list[Any]], out: TextIO) -> int:
    writer = csv.writer(out)
    writer.writerow([c.name for c in columns])
    n = 0
    for row in rows:
        writer.writerow(
            ["" if v is None else _text(c, v) for c, v in zip(columns, row, strict=True)]
        )
        n += 1
    return n


def write_jsonl(columns: list[Column], rows: Iterator[list[Any]], out: TextIO) -> int:
    n = 0
    for row in rows:
        item = {}
        for c, v in zip(columns, row, strict=True):
            if c.type == "json" and v is not None:
                item[c.name] = json.loads(v)
            elif c.type == "bool" and v is not None:
                item[c.name] = v
            else:
                item[c.name] = _text(c, v)
        out.write(json.dumps(item, ensure_ascii=False) + "\n")
        n += 1
    return n


def arrow_schema(columns: list[Column]) -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "json": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([pa.field(c.name, types[c.type]) for c in columns])


def require_pyarrow() -> None:
    """Parquet needs pyarrow (the ``parquet`` extra): checked before any work, one line."""
    require_extra("parquet", field="--format")


def write_parquet(columns: list[Column], rows: Iterator[list[Any]], out: IO[bytes]) -> int:
    import pyarrow.parquet as pq

    schema = arrow_schema(columns)
    n = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        batch: list[list[Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= BATCH:
                writer.write_table(_arrow_table(schema, batch))
                n += len(batch)
                batch = []
        if batch or n == 0:
            writer.write_table(_arrow_table(schema, batch))
            n += len(batch)
    return n


def _arrow_table(schema: Any, batch: list[list[Any]]) -> Any:
    import pyarrow as pa

    values: list[list[Any]] = [[row[i] for row in batch] for i in range(len(schema))]
    arrays = [pa.array(v, type=f.type) for v, f in zip(values, schema, strict=True)]
    return pa.table(arrays, schema=schema)
