"""Reports: every registered section's tables for one campaign, as JSON or CSV (text is
rendered by the CLI). The core contributes the sections every family shares: violation
rates and the reasons cases were INVALID."""

from __future__ import annotations

import csv
import io
import json
import math
import sqlite3
from collections import Counter
from typing import Any

from harness.errors import ConfigError, StoreError
from harness.registry import report_sections
from harness.store.reader import EventReader
from harness.tables import ReportContext, ReportOptions, ReportSection, Table, rounded, wilson


def violation_rates(ctx: ReportContext) -> list[Table]:
    counts: dict[tuple[str, str], Counter[str]] = {}
    for v in ctx.relation_verdicts:
        counts.setdefault((v.model, v.relation), Counter())[v.outcome] += 1
    if not counts:
        return []
    rows = []
    totals: dict[str, Counter[str]] = {}
    for (model, relation), c in sorted(counts.items()):
        totals.setdefault(model, Counter()).update(c)
        rows.append(_rate_row(model, relation, c))
    for model, c in sorted(totals.items()):
        if sum(1 for (m, _) in counts if m == model) > 1:
            rows.append(_rate_row(model, "(all)", c))
    return [
        Table(
            "violation_rates",
            "Violation rate per model and relation",
            [
                "model",
                "relation",
                "cases",
                "violated",
                "held",
                "invalid",
                "rate",
                "ci95_low",
                "ci95_high",
            ],
            rows,
            note="rate = violated / (violated + held); INVALID cases are counted but excluded; "
            "95% Wilson interval",
        )
    ]


def _rate_row(model: str, relation: str, c: Counter[str]) -> list[Any]:
    valid = c["VIOLATED"] + c["HELD"]
    low, high = wilson(c["VIOLATED"], valid)
    rate = c["VIOLATED"] / valid if valid else math.nan
    return [
        model,
        relation,
        sum(c.values()),
        c["VIOLATED"],
        c["HELD"],
        c["INVALID"],
        rounded(rate),
        rounded(low),
        rounded(high),
    ]


def invalid_reasons(ctx: ReportContext) -> list[Table]:
    counts: Counter[tuple[str, str, str]] = Counter()
    for v in ctx.relation_verdicts:
        if v.outcome == "INVALID":
            counts[(v.model, v.relation, v.reason.split(":")[0])] += 1
    if not counts:
        return []
    rows = [[m, r, reason, n] for (m, r, reason), n in sorted(counts.items())]
    return [
        Table(
            "invalid_reasons",
            "Why cases were INVALID",
            ["model", "relation", "reason", "cases"],
            rows,
        )
    ]


CORE_SECTIONS = (
    ReportSection("violation_rates", 10, violation_rates),
    ReportSection("invalid_reasons", 40, invalid_reasons),
)


# Options only some sections have: given for a log none of whose sections reads them, they
# would change nothing, silently.
SECTION_OPTIONS = {"mode": "only BiasLens reports have oracle modes (strict, released)"}


def build_report(log: EventReader, campaign: str | None = None, **options: Any) -> list[Table]:
    read = ReportOptions(options)
    ctx = ReportContext(log, log.campaign_id(campaign), read)
    tables: list[Table] = []
    try:
        for section in sorted(report_sections(), key=lambda s: (s.order, s.name)):
            tables.extend(section.build(ctx))
    except sqlite3.Error as exc:
        raise StoreError(
            f"{log.path}: the report could not read the log ({exc}){_first_bad_row(log)}; "
            "the log is damaged: use a copy made before the damage"
        ) from exc
    for name, why in SECTION_OPTIONS.items():
        if options.get(name) is not None and name not in read.read:
            raise ConfigError(
                f"no part of this report has a {name!r} option: {why}",
                field=f"--{name}",
                fix=f"leave --{name} out for this log",
            )
    return tables


def _first_bad_row(log: EventReader) -> str:
    """Where the first event whose payload is not JSON is, if that is the cause."""
    try:
        row = log.connection.execute(
            "SELECT campaign, case_id, seq, kind FROM events WHERE NOT json_valid(payload) LIMIT 1"
        ).fetchone()
    except sqlite3.Error:
        return ""
    if row is None:
        return ""
    campaign, case_id, seq, kind = row
    where = f"event {kind} #{seq} of case {case_id!r} (campaign {campaign})"
    return f"; the payload of {where} is not JSON"


def to_json(tables: list[Table]) -> str:
    return json.dumps(
        {
            t.name: {
                "title": t.title,
                "note": t.note,
                "rows": [dict(zip(t.columns, r, strict=True)) for r in t.rows],
            }
            for t in tables
        },
        indent=2,
        ensure_ascii=False,
    )


def to_csv(tables: list[Table]) -> str:
    """Long format, one value per line: table, row number, column, value."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["table", "row", "column", "value"])
    for t in tables:
        for i, row in enumerate(t.rows):
            for col, value in zip(t.columns, row, strict=True):
                writer.writerow([t.name, i, col, "" if value is None else value])
    return out.getvalue()
