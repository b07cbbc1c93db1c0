"""Report section: how judges agree with the relations' own verdicts and with each other.

Raters are verdict sources: "relation" (the case's oracle) and each "judge:<model>" that
re-judged the log. Per model and relation: cases both rated, raw agreement, Cohen's kappa
over the labels VIOLATED / HELD / INVALID.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from harness.tables import ReportContext, ReportSection, Table, rounded

LABELS = ("VIOLATED", "HELD", "INVALID")


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float:
    """Cohen's kappa of two raters' labels; NaN when undefined (no pairs, or chance = 1)."""
    n = len(pairs)
    if n == 0:
        return math.nan
    observed = sum(1 for a, b in pairs if a == b) / n
    left = Counter(a for a, _ in pairs)
    right = Counter(b for _, b in pairs)
    expected = sum(left[k] * right[k] for k in set(left) | set(right)) / (n * n)
    if expected >= 1.0:
        return math.nan
    return (observed - expected) / (1 - expected)


def _sources(ctx: ReportContext) -> list[str]:
    rows = ctx.log.connection.execute(
        "SELECT DISTINCT source FROM verdicts WHERE campaign = ? AND source != 'relation' "
        "ORDER BY source",
        (ctx.campaign,),
    )
    return [r[0] for r in rows]


def judge_agreement(ctx: ReportContext) -> list[Table]:
    judges = _sources(ctx)
    if not judges:
        return []
    labels: dict[str, dict[str, tuple[str, str, str]]] = {}  # source -> case -> (model, rel, out)
    for source in ["relation", *judges]:
        labels[source] = {v.case_id: (v.model, v.relation, v.outcome) for v in ctx.verdicts(source)}
    rows: list[list[Any]] = []
    for a, b in combinations(["relation", *judges], 2):
        if a == "relation" or len(judges) > 1:
            rows.extend(_rows(a, b, labels[a], labels[b]))
    return [
        Table(
            "judges",
            "Agreement between raters (the relation's oracle and re-judging models)",
            [
                "model",
                "relation",
                "rater_a",
                "rater_b",
                "cases",
                "agreement",
                "kappa",
                "a_violated",
                "b_violated",
                "b_invalid",
            ],
            rows,
            note="cases rated by both; agreement = share with the same label; Cohen's kappa "
            "over VIOLATED / HELD / INVALID",
        )
    ]


def _rows(
    a: str, b: str, left: dict[str, tuple[str, str, str]], right: dict[str, tuple[str, str, str]]
) -> list[list[Any]]:
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for case_id, (model, relation, outcome) in left.items():
        other = right.get(case_id)
        if other is not None:
            groups.setdefault((model, relation), []).append((outcome, other[2]))
    rows = []
    per_model: dict[str, list[tuple[str, str]]] = {}
    for (model, relation), pairs in sorted(groups.items()):
        per_model.setdefault(model, []).extend(pairs)
        rows.append(_row(model, relation, a, b, pairs))
    for model, pairs in sorted(per_model.items()):
        if sum(1 for m, _ in groups if m == model) > 1:
            rows.append(_row(model, "(all)", a, b, pairs))
    return rows


def _row(model: str, relation: str, a: str, b: str, pairs: list[tuple[str, str]]) -> list[Any]:
    agree = sum(1 for x, y in pairs if x == y) / len(pairs)
    return [
        model,
        relation,
        a,
        b,
        len(pairs),
        rounded(agree),
        rounded(cohen_kappa(pairs)),
        sum(1 for x, _ in pairs if x == "VIOLATED"),
        sum(1 for _, y in pairs if y == "VIOLATED"),
        sum(1 for _, y in pairs if y == "INVALID"),
    ]


JUDGE_SECTIONS = (ReportSection("judges", 60, judge_agreement),)
