"""The report section that names each model's answer format and compares the formats.

A campaign may run the same relations with free-text and structured answers (the demo
does); the format changes what a model can say, so rates of different formats must never be
pooled silently. This table names the format of every model entry and gives, per format,
how often answers were INVALID and the violation rate, side by side. It appears only when a
campaign asked for structured answers, so reports of free-only campaigns are unchanged.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from harness.reporting.stats import wilson_interval
from harness.reporting.tables import ReportContext, Table, rounded


def model_formats(config: dict[str, Any]) -> dict[str, str]:
    """model name -> answer format, from a recorded campaign config (old ones: all free)."""
    default = str(config.get("answer_format") or "free")
    return {
        str(spec.get("name")): str(spec.get("answer_format") or default)
        for spec in config.get("models") or []
    }


def answer_formats(ctx: ReportContext) -> list[Table]:
    started = next((s for cid, s in ctx.log.campaigns() if cid == ctx.campaign), None)
    formats = model_formats(started.config) if started is not None else {}
    if "structured" not in formats.values():
        return []
    tallied = ctx.verdict_counts
    counts: dict[tuple[str, str], Counter[str]] = {
        key: c.outcomes for key, c in tallied.by_relation.items()
    }
    counts.update(((model, "(all)"), c.outcomes) for model, c in tallied.by_model.items())
    rows = []
    for (model, relation), c in sorted(counts.items()):
        fmt = formats.get(model, "free")
        cases = sum(c.values())
        low, high = wilson_interval(c["INVALID"], cases)
        valid = c["VIOLATED"] + c["HELD"]
        rows.append(
            [
                model,
                fmt,
                relation,
                cases,
                c["INVALID"],
                rounded(c["INVALID"] / cases if cases else math.nan),
                rounded(low),
                rounded(high),
                c["VIOLATED"],
                rounded(c["VIOLATED"] / valid if valid else math.nan),
            ]
        )
    return [
        Table(
            "answer_formats",
            "Answers per format: free text vs structured (constrained to the declared shape)",
            [
                "model",
                "answer_format",
                "relation",
                "cases",
                "invalid",
                "invalid_rate",
                "ci95_low",
                "ci95_high",
                "violated",
                "violation_rate",
            ],
            rows,
            note="invalid_rate = invalid / cases, with its 95% Wilson interval; violation_rate = "
            "violated / (violated + held). A format changes what the model can answer: compare "
            "formats side by side, never pooled.",
            unit="a reply",
        )
    ]
