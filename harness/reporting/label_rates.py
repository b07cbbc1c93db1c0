"""Rates per value of each case label a relation declares: a family's tables for free.

A relation names the keys of its case data that label a case (``labels`` on
`harness.vocabulary.relation.RelationBase`: ``("group", "occupation")``). For each declared
label, per model and relation, this section gives two tables with the report's own
statistics and multiplicity, so a new family gets per-group findings without a section of
its own:

- ``label_rates``: the violation rate of each value against the other values of the same
  label (`harness.reporting.stats.compare_groups`: Fisher's exact test or chi-squared, the
  difference with Newcombe's interval, the risk ratio). The unit is the case: a case counts
  as violated when most of its valid repeats were (`majority_per_case`; a tied case is left
  out); INVALID and REFUSED verdicts are left out, as in the violation rates. The control is
  the rest of the label's values for the same model and relation.
- ``label_control_excess``: for relations whose cases ran a matched control
  (`harness.reporting.excess`), the excess of each value's violation rate over its own
  control's, with the exact McNemar test and its interval (the unit is a verdict: its test
  and its control, asked in the same case).

Every row names its relation, so its test is corrected with that relation's other claims
(`harness.reporting.report.apply_fdr`). A value is the label's value in the case data as
text (a list: its items joined with " + "); a case without the key is left out of that
label. The case data is read once, streamed beside the verdicts in case order: what is kept
is one case's repeats at a time (for the per-case majority) and a counter per value.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from harness.reporting.excess import CELL_COLUMNS, PairTally, control_of, excess_cells
from harness.reporting.stats import (
    COMPARISON_COLUMNS,
    NotInCaseOrder,
    compare_groups,
    majority_per_case,
    majority_per_case_in_order,
)
from harness.reporting.tables import Forest, ReportContext, Table, rounded

_VALID = ("VIOLATED", "HELD")

RATE_COLUMNS = [
    "model",
    "relation",
    "label",
    "value",
    "cases",
    "violated",
    "rate",
    "ci95_low",
    "ci95_high",
    *COMPARISON_COLUMNS,
]
EXCESS_COLUMNS = ["model", "relation", "label", "value", *CELL_COLUMNS]


def label_value(value: Any) -> str | None:
    """A label's value as a table shows it, or None (no value: the case is left out)."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, list | tuple):
        return " + ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _case_labels(
    ctx: ReportContext, labels: Mapping[str, Sequence[str]]
) -> Iterator[tuple[str, tuple[tuple[str, str], ...]]]:
    """(case id, ((label, value), ...)) of every case of a labelled relation, by case id."""
    names = sorted(labels)
    cur = ctx.log.connection.execute(
        "SELECT case_id, json_extract(payload, '$.case.relation'),"
        " json_extract(payload, '$.case.data') FROM events"
        " WHERE campaign = ? AND kind = 'CaseOpened'"
        f" AND json_extract(payload, '$.case.relation') IN ({', '.join('?' * len(names))})"
        " ORDER BY case_id",
        (ctx.campaign, *names),
    )
    for case_id, relation, data in cur:
        found = json.loads(data or "{}")
        pairs = []
        for key in labels[relation]:
            value = label_value(found.get(key)) if isinstance(found, dict) else None
            if value is not None:
                pairs.append((key, value))
        yield case_id, tuple(pairs)


def _tally(
    ctx: ReportContext, labels: Mapping[str, Sequence[str]], streamed: bool
) -> tuple[dict[tuple[str, ...], tuple[int, int]], dict[tuple[str, str, str, str], PairTally]]:
    """(model, relation, label, value) -> (violated cases by majority, cases), and its
    control pairs' tally. ``streamed``: each case's repeats are summarised as its block
    ends (`majority_per_case_in_order`), else every labelled verdict is held to the end."""
    valid: list[tuple[str, tuple[str, str, str, str, str], bool]] = []
    pairs: dict[tuple[str, str, str, str], PairTally] = defaultdict(lambda: PairTally([0, 0, 0, 0]))

    def outcomes() -> Iterator[tuple[str, tuple[str, str, str, str, str], bool]]:
        cases = _case_labels(ctx, labels)
        current: tuple[str, tuple[tuple[str, str], ...]] | None = next(cases, None)
        for v in ctx.verdicts(relations=labels):
            # Both streams are in case-id order (SQLite's binary order of UTF-8 text is the
            # order of Python strings): a merge, never a dictionary of every case.
            while current is not None and current[0] < v.case_id:
                current = next(cases, None)
            if current is None or current[0] != v.case_id:
                continue
            control = control_of(v.evidence)
            for key, value in current[1]:
                if v.outcome in _VALID:
                    yield (
                        v.case_id,
                        (v.model, v.relation, key, value, v.case_key),
                        v.outcome == "VIOLATED",
                    )
                if control is not None:
                    kind = str(control.get("kind", "repeat"))
                    pairs[(v.model, v.relation, key, value)].add(
                        v.outcome, str(control["outcome"]), kind
                    )

    majorities: Iterable[tuple[tuple[str, str, str, str, str], bool]]
    if streamed:
        majorities = majority_per_case_in_order(outcomes())
    else:
        valid.extend(outcomes())
        majorities = majority_per_case((case, hit) for _, case, hit in valid).items()
    counts: dict[tuple[str, ...], tuple[int, int]] = {}
    for (model, relation, key, value, _), hit in majorities:
        k, n = counts.get((model, relation, key, value), (0, 0))
        counts[(model, relation, key, value)] = (k + hit, n + 1)
    return counts, pairs


def label_tables(ctx: ReportContext, labels: Mapping[str, Sequence[str]]) -> list[Table]:
    """The label tables (module doc) of the relations in ``labels`` (relation -> its
    declared label keys); none when no relation declares a label."""
    labels = {r: tuple(keys) for r, keys in labels.items() if keys}
    if not labels:
        return []
    try:
        counts, pairs = _tally(ctx, labels, streamed=True)
    except NotInCaseOrder:
        counts, pairs = _tally(ctx, labels, streamed=False)
    tables: list[Table] = []
    rows = [
        [*key, c.n, c.k, rounded(c.rate), rounded(c.low), rounded(c.high), *c.cells()]
        for key, c in compare_groups(counts)
    ]
    if rows:
        tables.append(
            Table(
                "label_rates",
                "Violation rate per value of each case label the relation declares, "
                "against the label's other values",
                RATE_COLUMNS,
                rows,
                unit="a case (violated when most of its valid repeats are; a tied case left out)",
                note="label: a key of the case data the relation declares (its 'labels'); "
                "value: that key's value in the case; control: the label's other values for "
                "the same model and relation; rate over cases with a valid verdict (INVALID "
                "and REFUSED left out), 95% Wilson interval; diff (Newcombe) and risk ratio "
                "with 95% intervals; p from Fisher's exact test (chi-squared when large), "
                "corrected with the relation's other claims (Benjamini-Hochberg after "
                "Tarone's rule); a label with one value has no test",
                rest_within=("model", "relation", "label"),
                plot=(
                    Forest(
                        "diff",
                        "diff_low",
                        "diff_high",
                        ("model", "relation", "label", "value"),
                        "flagged",
                    ),
                ),
            )
        )
    if pairs:
        tables.append(
            Table(
                "label_control_excess",
                "Violation rate per value of each declared case label beside its matched "
                "null control, and the excess over it",
                EXCESS_COLUMNS,
                [[*key, *excess_cells(pairs[key])] for key in sorted(pairs)],
                unit="a case: its test and its matched control, asked in the same case (a "
                "repeat is a pair of its own)",
                note="as control_excess, per value of each declared label: rate and "
                "control_rate over pairs where both are valid (unpaired: cases with an "
                "INVALID side); excess = rate - control_rate with the exact McNemar test on "
                "the discordant pairs and its Clopper-Pearson interval; corrected with the "
                "relation's other claims",
                plot=(
                    Forest(
                        "excess",
                        "excess_low",
                        "excess_high",
                        ("model", "relation", "label", "value"),
                        "flagged",
                    ),
                ),
            )
        )
    return tables
