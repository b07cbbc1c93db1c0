"""Reports: every registered section's tables for one campaign, as JSON or CSV (text is
rendered by the CLI). The core contributes the sections every family shares: violation
rates and the reasons cases were INVALID, and corrects every test of a report for multiple
comparisons (`apply_fdr`)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness.reporting.format_report import answer_formats
from harness.reporting.outcome_groups import outcome_groups
from harness.reporting.stats import (
    ALPHA,
    TEST_COLUMNS,
    fdr_adjust,
    report_number,
    wilson_interval,
)
from harness.reporting.tables import (
    Bars,
    Forest,
    Heatmap,
    ReportContext,
    ReportOptions,
    ReportSection,
    Table,
    rounded,
)
from harness.runtime.gc_pause import gc_paused
from harness.store.reader import EventReader
from harness.store.verdict_counts import OutcomeCounts
from harness.vocabulary.errors import ConfigError, StoreError


def violation_rates(ctx: ReportContext) -> list[Table]:
    counts = ctx.verdict_counts
    if not counts.by_relation:
        return []
    rows = [
        _rate_row(model, relation, c) for (model, relation), c in sorted(counts.by_relation.items())
    ]
    relations_of = Counter(model for model, _ in counts.by_relation)
    for model, c in sorted(counts.by_model.items()):
        if relations_of[model] > 1:
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
                "refused",
                "rate",
                "ci95_low",
                "ci95_high",
                "distinct_cases",
                "case_rate",
                "case_ci95_low",
                "case_ci95_high",
            ],
            rows,
            note="cases, violated, held, invalid, refused count every verdict, repeats "
            "included; rate = violated / (violated + held) over those (INVALID and REFUSED "
            "excluded: a refusal is neither a fair nor an unfair answer), 95% Wilson "
            "interval; case_rate counts each case once: a case is violated when most of its "
            "valid repeats are (a tie is not), over distinct_cases with a valid repeat, 95% "
            "Wilson interval (the interval to read when repeats > 1: repeats of one case are "
            "not independent)",
            plot=(
                Forest("case_rate", "case_ci95_low", "case_ci95_high"),
                Heatmap(("relation",), ("model",), "case_rate"),
            ),
        )
    ]


def _rate_row(model: str, relation: str, counts: OutcomeCounts) -> list[Any]:
    c = counts.outcomes
    judged = c["VIOLATED"] + c["HELD"]
    low, high = wilson_interval(c["VIOLATED"], judged)
    rate = c["VIOLATED"] / judged if judged else math.nan
    cases, violated_cases = counts.cases, counts.violated_cases
    case_low, case_high = wilson_interval(violated_cases, cases)
    return [
        model,
        relation,
        sum(c.values()),
        c["VIOLATED"],
        c["HELD"],
        c["INVALID"],
        c["REFUSED"],
        rounded(rate),
        rounded(low),
        rounded(high),
        cases,
        rounded(violated_cases / cases if cases else math.nan),
        rounded(case_low),
        rounded(case_high),
    ]


def invalid_reasons(ctx: ReportContext) -> list[Table]:
    counts = ctx.verdict_counts.invalid_reasons
    if not counts:
        return []
    rows = [[m, r, reason, n] for (m, r, reason), n in sorted(counts.items())]
    return [
        Table(
            "invalid_reasons",
            "Why cases were INVALID",
            ["model", "relation", "reason", "cases"],
            rows,
            plot=(Bars("cases", ("model", "relation", "reason")),),
        )
    ]


CORE_SECTIONS = (
    ReportSection("violation_rates", 10, violation_rates),
    ReportSection("invalid_reasons", 40, invalid_reasons),
    ReportSection("answer_formats", 11, answer_formats),
    ReportSection("outcome_groups", 45, outcome_groups),
)


# Options only some sections have: given for a log none of whose sections reads them, they
# would change nothing, silently.
SECTION_OPTIONS = {
    "mode": "only BiasLens (strict, released) and Meta-Fair MR11-MR14 (strict, guardme) "
    "reports have oracle modes"
}


def build_tables(
    log: EventReader,
    campaign: str | None = None,
    *,
    sections: Sequence[ReportSection],
    **options: Any,
) -> list[Table]:
    """The tables of ``sections`` for ``campaign`` of ``log`` (its latest by default), in
    (order, name) order, with the false discovery rate applied over all of their tests.
    The caller names the sections (`harness.plugins.assembly.build_report` passes every
    registered one), so the framework never reads the registry."""
    read = ReportOptions(options)
    ctx = ReportContext(log, log.campaign_id(campaign), read)
    sections = sorted(sections, key=lambda s: (s.order, s.name))
    built: dict[int, list[Table]] = {}
    try:
        # A report of a million-case log builds millions of rows and verdicts: the cyclic
        # collector rescans them again and again and finds no cycles (harness.runtime.gc_pause).
        with gc_paused():
            # The core's sections read the verdict counts, which a second process may be
            # computing meanwhile: they are built last, the tables still come out in order.
            ctx.count_verdicts_aside()
            for i, section in sorted(enumerate(sections), key=lambda e: e[1] in CORE_SECTIONS):
                built[i] = section.build(ctx)
    except sqlite3.Error as exc:
        raise StoreError(
            f"{log.path}: the report could not read the log ({exc}){_first_bad_row(log)}; "
            "the log is damaged: use a copy made before the damage"
        ) from exc
    finally:
        ctx.close()
    tables = [t for i in range(len(sections)) for t in built[i]]
    for name, why in SECTION_OPTIONS.items():
        if options.get(name) is not None and name not in read.read:
            raise ConfigError(
                f"no part of this report has a {name!r} option: {why}",
                field=f"--{name}",
                fix=f"leave --{name} out for this log",
            )
    return apply_fdr(tables)


def _kept(table: Table) -> Table:
    if table.keep is None:
        return table
    rows = [row for row, keep in zip(table.rows, table.keep, strict=True) if keep]
    return dataclasses.replace(table, rows=rows, keep=None)


def _takes_part(table: Table) -> bool:
    return tuple(table.columns[-len(TEST_COLUMNS) :]) == TEST_COLUMNS


def apply_fdr(tables: list[Table]) -> list[Table]:
    """Benjamini-Hochberg over every test of the report: fills ``p_fdr`` and ``flagged`` of
    each table that ends with `harness.reporting.stats.TEST_COLUMNS`, and appends a table saying how
    many tests ran and how many are flagged. One family of tests per report, because a
    reader scans the whole report for flags."""
    pvalues = [
        math.nan if row[-3] is None else float(row[-3])
        for t in tables
        if _takes_part(t)
        for row in t.rows
    ]
    tested = sum(1 for p in pvalues if not math.isnan(p))
    if not tested:
        return [_kept(t) for t in tables]
    adjusted, flagged = fdr_adjust(pvalues)
    position = iter(zip(adjusted, flagged, strict=True))
    out: list[Table] = []
    for t in tables:
        if not _takes_part(t):
            out.append(_kept(t))
            continue
        rows = []
        for row in t.rows:
            q, flag = next(position)
            rows.append([*row[:-2], report_number(q, 6), "yes" if flag else "no"])
        out.append(_kept(dataclasses.replace(t, rows=rows)))
    out.append(
        Table(
            "statistical_tests",
            "Tests in this report and the correction for multiple comparisons",
            ["tests", "flagged", "method", "alpha"],
            [[tested, sum(flagged), "Benjamini-Hochberg FDR", ALPHA]],
            note="every p in this report counts; flagged = significant after the correction "
            "(p_fdr <= alpha); a test that could not run (an empty side) is not counted",
        )
    )
    return out


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
