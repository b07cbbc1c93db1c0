"""Report section: how judges agree with the relations' own verdicts and with each other.

Raters are verdict sources: "relation" (the case's oracle) and each "judge:<model>" that
re-judged the log. Per model and relation: cases both rated, the valid pairs among them
(both raters reached VIOLATED or HELD), and raw agreement and Cohen's kappa over those
valid pairs. INVALID means "could not tell": two raters that both could not tell have not
agreed about anything, so such pairs are counted apart, never as agreement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from harness.reporting.judge_stats import cohen_kappa_interval
from harness.reporting.tables import Bars, ReportContext, ReportSection, Table, rounded

LABELS = ("VIOLATED", "HELD", "INVALID")
VALID = frozenset({"VIOLATED", "HELD"})


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float:
    """Cohen's kappa of two raters' labels (statsmodels); NaN when undefined (no pairs, or
    agreement by chance = 1)."""
    return cohen_kappa_interval(pairs)[0]


def valid_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs in which both raters reached a verdict (VIOLATED or HELD)."""
    return [(a, b) for a, b in pairs if a in VALID and b in VALID]


def _sources(ctx: ReportContext) -> list[str]:
    if not ctx.rejudged:
        return []  # no judge: the sources are not read from every verdict
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
                "valid_pairs",
                "agreement",
                "kappa",
                "kappa_low",
                "kappa_high",
                "a_violated",
                "b_violated",
                "a_invalid",
                "b_invalid",
            ],
            rows,
            plot=(Bars("kappa", ("model", "relation", "rater_a", "rater_b")),),
            note="cases rated by both; valid_pairs = those both raters judged VIOLATED or "
            "HELD; agreement (share with the same label) and Cohen's kappa over the valid "
            "pairs only (an INVALID from both is not agreement), with its asymptotic 95% "
            "interval",
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
    valid = valid_pairs(pairs)
    agree = sum(1 for x, y in valid if x == y) / len(valid) if valid else math.nan
    kappa, low, high = cohen_kappa_interval(valid)
    return [
        model,
        relation,
        a,
        b,
        len(pairs),
        len(valid),
        rounded(agree),
        rounded(kappa),
        rounded(low),
        rounded(high),
        sum(1 for x, _ in pairs if x == "VIOLATED"),
        sum(1 for _, y in pairs if y == "VIOLATED"),
        sum(1 for x, _ in pairs if x == "INVALID"),
        sum(1 for _, y in pairs if y == "INVALID"),
    ]


JUDGE_SECTIONS = (ReportSection("judges", 60, judge_agreement),)
