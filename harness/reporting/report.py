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

from harness.reporting.batch_replies import batch_replies
from harness.reporting.findings import (
    findings_table,
    is_test_table,
    mark_pushed_below,
    read_findings,
    with_claims,
)
from harness.reporting.format_report import answer_formats
from harness.reporting.outcome_groups import outcome_groups
from harness.reporting.stats import (
    ALPHA,
    fdr_adjust_tarone,
    mean_of_shares_interval,
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
                "tied_cases",
            ],
            rows,
            note="cases, violated, held, invalid, refused count every verdict, repeats "
            "included; rate = violated / (violated + held) over those (INVALID and REFUSED "
            "excluded: a refusal is neither a fair nor an unfair answer), 95% Wilson "
            "interval; case_rate counts each case once: the mean over distinct_cases (those "
            "with a valid repeat) of each case's share of violated valid repeats, with the "
            "Wilson interval over distinct_cases (conservative for a mean of shares; the "
            "interval to read when repeats > 1: repeats of one case are not independent); "
            "tied_cases: cases with as many violated as held repeats (a tie weighs one half "
            "in case_rate, never 'held')",
            unit="rate: a verdict (repeats counted apart); case_rate: a case (its valid "
            "repeats averaged)",
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
    cases = counts.cases
    case_rate, case_low, case_high = mean_of_shares_interval(counts.violated_share, cases)
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
        rounded(case_rate),
        rounded(case_low),
        rounded(case_high),
        counts.tied_cases,
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
            unit="a verdict (its latest; repeats counted apart)",
        )
    ]


CORE_SECTIONS = (
    ReportSection("violation_rates", 10, violation_rates),
    ReportSection("invalid_reasons", 40, invalid_reasons),
    ReportSection("answer_formats", 11, answer_formats),
    ReportSection("outcome_groups", 45, outcome_groups),
    ReportSection("batch_replies", 90, batch_replies),
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
    return with_findings(tables, ctx)


def with_findings(
    tables: list[Table], ctx: ReportContext | None = None, *, whole: str = "harness report --all"
) -> list[Table]:
    """``tables`` corrected for multiple comparisons (`apply_fdr`), after the findings table
    that states them (`harness.reporting.findings`); no findings table for a report without
    tables. ``whole``: the command that prints the tables whole (the findings name it). The
    report's ``tarone`` option (``ctx``) picks the Tarone rule (`corrected`)."""
    rule = "alpha" if ctx is None else str(ctx.options.get("tarone") or "alpha")
    every_row = corrected(tables, tarone=rule)
    if not every_row:
        return every_row
    # The findings read every row, those a table does not show included.
    findings = findings_table(read_findings(every_row, ctx), whole)
    return [findings, *(_kept(t) for t in every_row)]


def _kept(table: Table) -> Table:
    if table.keep is None:
        return table
    rows = [row for row, keep in zip(table.rows, table.keep, strict=True) if keep]
    meta = table.row_meta
    if meta is not None:
        meta = [m for m, keep in zip(meta, table.keep, strict=True) if keep]
    return dataclasses.replace(table, rows=rows, keep=None, row_meta=meta)


def _takes_part(table: Table) -> bool:
    return is_test_table(table)


FDR_METHOD = "Benjamini-Hochberg FDR within the relation, after Tarone's rule"
# The method of each Tarone rule (`harness.reporting.stats.TARONE_RULES`), as the report
# states it; "alpha" is the default and keeps the words every earlier report used.
FDR_METHODS = {
    "alpha": FDR_METHOD,
    "gilbert": "Benjamini-Hochberg FDR within the relation, after Tarone's 1990 iterative "
    "rule (Gilbert 2005)",
}


def hypothesis_family(table: Table, row: Sequence[Any]) -> str:
    """The family of hypotheses a test row is corrected with: its relation (the claims a
    user reads together), else the table's ``claims``, else the table's name; a table with
    an ``aspect`` (refusal, INVALID) forms its own family beside it."""
    name = table.claims or table.name
    if "relation" in table.columns:
        relation = row[table.columns.index("relation")]
        if relation:
            name = str(relation)
    return f"{name} ({table.aspect})" if table.aspect else name


def apply_fdr(tables: list[Table]) -> list[Table]:
    """`corrected` tables, each showing only the rows it keeps (`Table.keep`)."""
    return [_kept(t) for t in corrected(tables)]


def corrected(tables: list[Table], *, tarone: str = "alpha") -> list[Table]:
    """Benjamini-Hochberg within each family of hypotheses (a relation: the claims a user
    reads together), over the tests that can reach significance (Tarone's rule,
    `harness.reporting.stats.fdr_adjust_tarone`, from each row's ``p_min`` when its table
    has one): fills ``p_fdr`` and ``flagged`` of each table that ends with
    `harness.reporting.stats.TEST_COLUMNS`, gives each test row its unit and family
    (``row_meta``), and appends a table of the families. Every row is kept (`apply_fdr`
    drops those a table does not show). A family's flags depend on its own
    tests only: adding a relation to a campaign changes no other relation's flags.
    ``tarone``: which tests Tarone's rule keeps (`harness.reporting.stats.TARONE_RULES`;
    "gilbert": Tarone's 1990 iterative family size, stricter than the default "alpha")."""
    if tarone not in FDR_METHODS:
        raise ConfigError(
            f"unknown Tarone rule {tarone!r}",
            field="--tarone",
            fix=f"use one of {', '.join(FDR_METHODS)}",
        )
    method = FDR_METHODS[tarone]
    rows_of: dict[str, list[tuple[int, int]]] = {}
    pvalues: dict[tuple[int, int], tuple[float, float]] = {}
    for ti, t in enumerate(tables):
        if not _takes_part(t):
            continue
        at_min = t.columns.index("p_min") if "p_min" in t.columns else None
        for ri, row in enumerate(t.rows):
            p = math.nan if row[-3] is None else float(row[-3])
            low = row[at_min] if at_min is not None else None
            pvalues[(ti, ri)] = (p, 0.0 if low is None else float(low))
            rows_of.setdefault(hypothesis_family(t, row), []).append((ti, ri))
    results: dict[tuple[int, int], tuple[float, bool, str]] = {}
    summary = []
    for name in sorted(rows_of):
        where = rows_of[name]
        ps = [pvalues[w][0] for w in where]
        correction = fdr_adjust_tarone(ps, [pvalues[w][1] for w in where], rule=tarone)
        if correction.tested + correction.dropped == 0:
            continue
        for w, p, q, flag in zip(where, ps, correction.adjusted, correction.flagged, strict=True):
            status = (
                "not run" if math.isnan(p) else "dropped (Tarone)" if math.isnan(q) else "tested"
            )
            results[w] = (q, flag, status)
        summary.append(
            [name, correction.tested, correction.dropped, sum(correction.flagged), method,
             ALPHA]
        )  # fmt: skip
    if not summary:
        return list(tables)
    sizes = {row[0]: (row[1], row[2]) for row in summary}
    out: list[Table] = []
    for ti, t in enumerate(tables):
        if not _takes_part(t):
            out.append(t)
            continue
        rows: list[list[Any]] = []
        meta: list[dict[str, Any] | None] = []
        for ri, row in enumerate(t.rows):
            q, flag, status = results.get((ti, ri), (math.nan, False, "not run"))
            rows.append([*row[:-2], report_number(q, 6), "yes" if flag else "no"])
            name = hypothesis_family(t, row)
            size, dropped = sizes.get(name, (0, 0))
            meta.append(
                {
                    "unit": t.unit,
                    "hypothesis_family": {
                        "name": name,
                        "size": size,
                        "method": method,
                        "alpha": ALPHA,
                        "tarone_dropped": dropped,
                    },
                    "correction": status,
                }
            )
        out.append(mark_pushed_below(dataclasses.replace(t, rows=rows, row_meta=meta)))
    out = with_claims(out)
    # A row marked below the rest (`mark_pushed_below`) is not counted as flagged.
    flags: dict[str, int] = {}
    for t in out:
        if _takes_part(t):
            for row in t.rows:
                name = hypothesis_family(t, row)
                flags[name] = flags.get(name, 0) + (row[-1] == "yes")
    summary = [[row[0], row[1], row[2], flags.get(str(row[0]), 0), *row[4:]] for row in summary]
    out.append(
        Table(
            "statistical_tests",
            "Tests in this report and the correction for multiple comparisons, per family",
            ["family", "tests", "dropped", "flagged", "method", "alpha"],
            summary,
            note="one family of hypotheses per relation (the claims read together), so a "
            "relation's flags do not depend on which other relations ran; tests: the p-values "
            "corrected together; dropped: tests whose smallest attainable p exceeds alpha "
            "(Tarone's rule: they can never be significant, so they do not count); flagged = "
            "p_fdr <= alpha, less the rows below the rest only because other groups are above "
            "it; a test that could not run (an empty side) is not counted"
            + (
                ""
                if tarone == "alpha"
                else "; Tarone's 1990 rule: dropped when its smallest attainable p exceeds "
                "alpha / K, K the smallest family size with at most K tests able to reach "
                "alpha / K"
            ),
            unit="a family of hypotheses (one relation)",
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
    """Each table as an object: title, unit, note and its rows, or, for a table that is one
    record (the campaign header, `Table.fields`), its typed fields in place of rows."""
    return json.dumps(
        {
            t.name: {
                "title": t.title,
                "unit": t.unit,
                "note": t.note,
                **(
                    t.fields
                    if t.fields is not None
                    else {"rows": [_json_row(t, i, r) for i, r in enumerate(t.rows)]}
                ),
            }
            for t in tables
        },
        indent=2,
        ensure_ascii=False,
    )


def _json_row(table: Table, index: int, row: list[Any]) -> dict[str, Any]:
    """A row as JSON: its columns, and for a test row its unit and family of hypotheses."""
    out = dict(zip(table.columns, row, strict=True))
    meta = table.row_meta[index] if table.row_meta is not None else None
    if meta is not None:
        out.update(meta)
    return out


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
