"""Refusal and INVALID rates by group: a model that refuses one group hides its bias there.

A refusal (REFUSED) or an unreadable answer (INVALID) leaves the violation rate's
denominator, so a model that refuses the questions about one group looks fair about it.
This section tests, per model and relation, each group's refusal rate and INVALID rate
against the rest of the relation's groups, with the report's own machinery
(`harness.reporting.stats.compare_groups`: Fisher's exact test or chi-squared, the difference
with Newcombe's interval and the risk ratio) and its multiplicity (every row ends with the
test columns; each relation's refusal tests, and its INVALID tests, are a family of their own
beside its bias claims: `Table.aspect`). A flagged row of
``differential_refusal`` is a finding of its own: the model refuses that group more (or
less) often than the others.

The unit is the case: a case counts as refused (INVALID) when most of its repeats were
(`majority_per_case`; a tied case is left out). The control is the rest of the relation's groups for
the same model. The group of a case is read from its data, the first of `GROUP_KEYS` it
has (a list is read by its last element: Meta-Fair's follow-up attribute); cases with none
are left out. A relation with no refusal (no INVALID) at all gets one row, group "(every
group)", with its zero and no test (test "none", p empty): every p would be 1 and would only
dilute the correction.
"""

from __future__ import annotations

import json
from typing import Any

from harness.reporting.stats import (
    COMPARISON_COLUMNS,
    compare_groups,
    majority_per_case,
    wilson_interval,
)
from harness.reporting.tables import ReportContext, Table, rounded

# Case-data keys that name the social group a case is about, in the order they are read:
# Meta-Fair and BiasLens "attribute" (Meta-Fair's open tests: "attributes"), MetaQuerier's
# target "gender", LangBiTe's "concern", BADF's "identity_category".
GROUP_KEYS = ("attribute", "attributes", "gender", "concern", "identity_category")


def group_of(data: dict[str, Any]) -> str | None:
    """The group a case is about, from its data (`GROUP_KEYS`), or None."""
    for key in GROUP_KEYS:
        value = data.get(key)
        if isinstance(value, list):
            value = value[-1] if value else None
        if isinstance(value, str) and value:
            return value
    return None


def _groups(ctx: ReportContext) -> dict[str, str]:
    cur = ctx.log.connection.execute(
        "SELECT case_id, json_extract(payload, '$.case.data') FROM events"
        " WHERE campaign = ? AND kind = 'CaseOpened'",
        (ctx.campaign,),
    )
    out: dict[str, str] = {}
    for case_id, data in cur:
        group = group_of(json.loads(data or "{}"))
        if group is not None:
            out[case_id] = group
    return out


_KINDS = (
    (
        "REFUSED",
        "differential_refusal",
        "Differential refusal: refusal rate per group against the rest of the relation's groups",
    ),
    (
        "INVALID",
        "invalid_by_group",
        "INVALID rate per group against the rest of the relation's groups",
    ),
)


def outcome_groups(ctx: ReportContext) -> list[Table]:
    groups = _groups(ctx)
    if not groups:
        return []
    # One streamed pass over the verdicts; what is kept is one small tuple per case.
    per_case: dict[str, list[tuple[tuple[str, str, str, str], bool]]] = {o: [] for o, *_ in _KINDS}
    relations_with: dict[str, set[tuple[str, str]]] = {o: set() for o, *_ in _KINDS}
    for v in ctx.verdicts():
        group = groups.get(v.case_id)
        if group is None:
            continue
        for outcome, *_ in _KINDS:
            hit = v.outcome == outcome
            per_case[outcome].append(((v.model, v.relation, group, v.case_key), hit))
            if hit:
                relations_with[outcome].add((v.model, v.relation))
    tables = []
    for outcome, name, title in _KINDS:
        counts: dict[tuple[str, ...], tuple[int, int]] = {}
        for (model, relation, group, _), hit in majority_per_case(per_case[outcome]).items():
            k, n = counts.get((model, relation, group), (0, 0))
            counts[(model, relation, group)] = (k + hit, n + 1)
        rows = []
        untested: dict[tuple[str, str], int] = {}
        for key, comparison in compare_groups(counts):
            if (key[0], key[1]) not in relations_with[outcome]:
                # None of the relation's cases had this outcome: no test to run (every p
                # would be 1 and would only dilute the correction); one row says so.
                untested[(key[0], key[1])] = untested.get((key[0], key[1]), 0) + comparison.n
                continue
            rows.append(
                [
                    *key,
                    comparison.n,
                    comparison.k,
                    rounded(comparison.rate),
                    rounded(comparison.low),
                    rounded(comparison.high),
                    *comparison.cells(),
                ]
            )
        for (model, relation), n in untested.items():
            low, high = wilson_interval(0, n)
            none = [None] * 7
            rows.append(
                [model, relation, "(every group)", n, 0, 0.0, rounded(low), rounded(high),
                 *none, "none", None, None, None, None]
            )  # fmt: skip
        rows.sort(key=lambda r: (r[0], r[1]))
        if not rows:
            continue
        word = outcome.lower()
        tables.append(
            Table(
                name,
                title,
                [
                    "model",
                    "relation",
                    "group",
                    "cases",
                    word,
                    "rate",
                    "ci95_low",
                    "ci95_high",
                    *COMPARISON_COLUMNS,
                ],
                rows,
                aspect=word,
                unit=f"a case ({word} when most of its repeats are; a tied case left out)",
                note=f"unit: the case ({word} when most of its repeats are); control: the "
                "other groups of the same model and relation; rate with its 95% Wilson "
                "interval, diff (Newcombe) and risk ratio with 95% intervals; p from "
                "Fisher's exact test (chi-squared when large), corrected within its own "
                f"family per relation ('<relation> ({word})', Benjamini-Hochberg after "
                "Tarone's rule); a flagged row is a finding of its "
                f"own: the model's {word} rate differs for that group, and its violation "
                "rate there is read from fewer answers",
            )
        )
    return tables
