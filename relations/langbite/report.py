"""LangBiTe report: pass rates per concern x community x language x model, and whether each
requirement (concern per language and model) reaches its pass threshold."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from harness.stats import wilson_interval
from harness.tables import ReportContext, ReportSection, Table, VerdictRow, rounded

NO_COMMUNITY = "(no community)"


def langbite_verdicts(ctx: ReportContext) -> list[VerdictRow]:
    return [v for v in ctx.relation_verdicts if v.evidence.get("langbite")]


def community_counts(
    verdicts: list[VerdictRow],
) -> dict[tuple[str, str, str, str], Counter[str]]:
    """(model, language, concern, community) -> answers passed/failed. An answer counts for
    every community filled into its prompt; INVALID cases were not judged and are skipped."""
    counts: dict[tuple[str, str, str, str], Counter[str]] = {}
    for v in verdicts:
        if v.outcome == "INVALID":
            continue
        ev = v.evidence
        for row in ev.get("answers", []):
            if row.get("passed") is None:
                continue
            names = sorted(set((row.get("fills") or {}).values())) or [NO_COMMUNITY]
            for name in names:
                key = (v.model, ev["language"], ev["concern"], name)
                counts.setdefault(key, Counter())["passed" if row["passed"] else "failed"] += 1
    return counts


def langbite_pass_rates(ctx: ReportContext) -> list[Table]:
    counts = community_counts(langbite_verdicts(ctx))
    if not counts:
        return []
    rows: list[list[Any]] = []
    for (model, language, concern, community), c in sorted(counts.items()):
        n = c["passed"] + c["failed"]
        low, high = wilson_interval(c["passed"], n)
        rows.append(
            [
                model,
                language,
                concern,
                community,
                n,
                c["passed"],
                c["failed"],
                rounded(c["passed"] / n if n else math.nan),
                rounded(low),
                rounded(high),
            ]
        )
    return [
        Table(
            "langbite_pass_rates",
            "LangBiTe pass rate per model, language, concern and community",
            [
                "model",
                "language",
                "concern",
                "community",
                "answers",
                "passed",
                "failed",
                "pass_rate",
                "ci95_low",
                "ci95_high",
            ],
            rows,
            note="an answer counts for each community in its prompt; same-value cases blame "
            "the communities whose number is off; INVALID cases are left out; 95% Wilson",
        )
    ]


def langbite_requirements(ctx: ReportContext) -> list[Table]:
    outcomes: dict[tuple[str, str, str], Counter[str]] = {}
    thresholds: dict[tuple[str, str, str], float] = {}
    for v in langbite_verdicts(ctx):
        key = (v.model, v.evidence["language"], v.evidence["concern"])
        outcomes.setdefault(key, Counter())[v.outcome] += 1
        thresholds[key] = float(v.evidence.get("pass_threshold", 0.9))
    if not outcomes:
        return []
    rows: list[list[Any]] = []
    for key, c in sorted(outcomes.items()):
        judged = c["HELD"] + c["VIOLATED"]
        rate = c["HELD"] / judged if judged else math.nan
        met = "n/a" if not judged else "yes" if rate >= thresholds[key] else "no"
        rows.append(
            [
                *key,
                sum(c.values()),
                c["HELD"],
                c["VIOLATED"],
                c["INVALID"],
                rounded(rate),
                thresholds[key],
                met,
            ]
        )
    return [
        Table(
            "langbite_requirements",
            "LangBiTe requirements: templates passed per model, language and concern",
            [
                "model",
                "language",
                "concern",
                "templates",
                "passed",
                "failed",
                "invalid",
                "pass_rate",
                "threshold",
                "met",
            ],
            rows,
            note="a template passes when its oracle holds over every community's answer; "
            "met = pass_rate >= the requirement's pass_threshold",
        )
    ]


REPORT_SECTIONS = (
    ReportSection("langbite_pass_rates", 60, langbite_pass_rates),
    ReportSection("langbite_requirements", 61, langbite_requirements),
)
