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
from collections.abc import Iterable, Iterator
from typing import Any

from harness.reporting.stats import (
    COMPARISON_COLUMNS,
    NotInCaseOrder,
    compare_groups,
    majority_per_case,
    majority_per_case_in_order,
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


_Case = tuple[str, str, str, str]  # model, relation, group, case key

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


def _outcomes(ctx: ReportContext, streamed: bool) -> Iterator[tuple[str, _Case, str]]:
    """(case id, (model, relation, group, case key), outcome) of each verdict of a case
    with a group: its data read beside it as both stream (``streamed``), or from a
    dictionary of every case's group."""
    if streamed:
        for v, data in ctx.verdicts_with_data():
            group = group_of(data)
            if group is not None:
                yield v.case_id, (v.model, v.relation, group, v.case_key), v.outcome
        return
    groups = _groups(ctx)
    for v in ctx.verdicts():
        found = groups.get(v.case_id)
        if found is not None:
            yield v.case_id, (v.model, v.relation, found, v.case_key), v.outcome


def _tally(
    ctx: ReportContext, streamed: bool
) -> tuple[dict[str, dict[tuple[str, ...], tuple[int, int]]], dict[str, set[tuple[str, str]]]]:
    """Per outcome kind: (model, relation, group) -> (cases with that outcome by majority,
    cases), and the (model, relation) pairs with at least one such verdict. One streamed
    pass; ``streamed``: each case's repeats are summarised as its block ends
    (`majority_per_case_in_order`), else every case is held until the end."""
    relations_with: dict[str, set[tuple[str, str]]] = {o: set() for o, *_ in _KINDS}

    def outcomes() -> Iterator[tuple[str, tuple[str, ...], bool]]:
        for case_id, case, outcome in _outcomes(ctx, streamed):
            for kind, *_ in _KINDS:
                hit = outcome == kind
                yield case_id, (kind, *case), hit
                if hit:
                    relations_with[kind].add((case[0], case[1]))

    majorities: Iterable[tuple[tuple[str, ...], bool]] = (
        majority_per_case_in_order(outcomes())
        if streamed
        else majority_per_case((case, hit) for _, case, hit in outcomes()).items()
    )
    counts: dict[str, dict[tuple[str, ...], tuple[int, int]]] = {o: {} for o, *_ in _KINDS}
    for (kind, model, relation, group, _), hit in majorities:
        mine = counts[kind]
        k, n = mine.get((model, relation, group), (0, 0))
        mine[(model, relation, group)] = (k + hit, n + 1)
    return counts, relations_with


def outcome_groups(ctx: ReportContext) -> list[Table]:
    try:
        counts_of, relations_with = _tally(ctx, streamed=True)
    except NotInCaseOrder:
        counts_of, relations_with = _tally(ctx, streamed=False)
    tables = []
    for outcome, name, title in _KINDS:
        counts = counts_of[outcome]
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
