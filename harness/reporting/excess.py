"""Rates beside their matched null controls: the excess of a relation's violation rate over
the rate its control shows on the same cases, with a paired test and an interval.

A relation that runs a control (``control = true`` in its options; new campaigns get it by
default) asks, inside each case, a null counterpart of its test beside the test itself: the
source prompt asked again in a fresh thread, or a swap within the same group (each family's
docs say which). Its oracle reads the control exactly as it reads the test, and the verdict
carries the control's outcome in ``evidence["control"]``:

    {"outcome": "HELD" | "VIOLATED" | "INVALID", "kind": "<what the control is>",
     "group": "<the attribute or group the case is about>"}

So every case gives a *pair* (test violated?, control violated?), both from the same model,
case and repeat. A fair but random model (temperature > 0) violates the test and its control
at the same rate, the noise floor; bias is what the test shows beyond it. The report gives,
per relation and model (and per group where the verdicts name one), the rate, the control's
rate and the excess with:

- the exact McNemar test on the discordant pairs (b: test violated, control held; c: the
  reverse), two-sided and central (twice the smaller binomial tail, capped at 1);
- the interval of the excess, conditional on the number of discordant pairs d = b + c: the
  Clopper-Pearson 95 % interval (lo, hi) of the share of discordant pairs that go the test's
  way, mapped to the excess as ((2 lo - 1) d / n, (2 hi - 1) d / n). It excludes 0 exactly
  when the test above rejects at 0.05 (both are built from the same two binomial tails), so
  under the null hypothesis it covers 0 with probability at least 95 % for every d.

Flags are on the excess (the table ends with the test columns and takes part in the
report's correction for multiple comparisons). Logs written before controls existed, and
relations that run none, show "no control" and no test.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.reporting.stats import (
    ALPHA,
    TEST_COLUMNS,
    mcnemar_exact,
    mcnemar_min_p,
    report_number,
)
from harness.reporting.tables import Forest, ReportContext, ReportSection, Table

CONTROL_KEY = "control"  # the key of the control's outcome in a verdict's evidence
NO_CONTROL = "no control"
PAIR_OUTCOMES = ("VIOLATED", "HELD")


@dataclass(frozen=True)
class PairedExcess:
    """A test's rate against its control's over the same cases (both valid in each pair)."""

    n: int  # pairs with both outcomes valid
    both: int  # a: violated in test and control
    test_only: int  # b: violated in the test only
    control_only: int  # c: violated in the control only
    rate: float
    control_rate: float
    excess: float
    low: float
    high: float
    p: float


def paired_excess(both: int, test_only: int, control_only: int, neither: int) -> PairedExcess:
    """The excess of the test's rate over its control's, from the four paired counts, with
    the exact McNemar p-value and the conditional Clopper-Pearson interval (module doc)."""
    from scipy.stats import binomtest

    n = both + test_only + control_only + neither
    if n == 0:
        nan = math.nan
        return PairedExcess(0, 0, 0, 0, nan, nan, nan, nan, nan, nan)
    rate = (both + test_only) / n
    control_rate = (both + control_only) / n
    excess = (test_only - control_only) / n
    discordant = test_only + control_only
    if discordant == 0:
        # Every pair agrees: no evidence of a difference either way.
        return PairedExcess(n, both, 0, 0, rate, control_rate, 0.0, 0.0, 0.0, 1.0)
    result = binomtest(test_only, discordant, 0.5)
    ci = result.proportion_ci(confidence_level=1 - ALPHA, method="exact")
    share = discordant / n
    low, high = (2 * float(ci.low) - 1) * share, (2 * float(ci.high) - 1) * share
    # statsmodels' exact McNemar p is central (twice the smaller binomial tail): the test
    # the Clopper-Pearson interval inverts.
    p = mcnemar_exact(test_only, control_only)
    return PairedExcess(n, both, test_only, control_only, rate, control_rate, excess, low, high, p)


def paired_power(test_only: float, control_only: float, n: int, alpha: float = ALPHA) -> float:
    """The chance that n independent pairs flag the excess (exact McNemar p < ``alpha``),
    when a pair is violated in the test only with probability ``test_only`` and in the
    control only with ``control_only``: the number of discordant pairs is binomial, and
    given it the pairs going the test's way are binomial too (exact sum, scipy)."""
    from scipy.stats import binom

    discordant = test_only + control_only
    if n <= 0 or discordant <= 0:
        return 0.0
    share = test_only / discordant
    power = 0.0
    for d in range(1, n + 1):
        weight = float(binom.pmf(d, n, discordant))
        if weight < 1e-12:
            continue
        for b in range(d + 1):
            if mcnemar_exact(b, d - b) < alpha:
                power += weight * float(binom.pmf(b, d, share))
    return power


@dataclass
class PairTally:
    """Paired counts of one row: [both, test only, control only, neither], unpaired, and the
    kinds of control seen."""

    counts: list[int]
    unpaired: int = 0
    kinds: set[str] | None = None

    def add(self, test: str, control: str, kind: str) -> None:
        if self.kinds is None:
            self.kinds = set()
        self.kinds.add(kind)
        if test not in PAIR_OUTCOMES or control not in PAIR_OUTCOMES:
            self.unpaired += 1
            return
        t, c = test == "VIOLATED", control == "VIOLATED"
        self.counts[0 if t and c else 1 if t else 2 if c else 3] += 1


# The columns `excess_cells` fills, after a row's labels: every table of excesses over a
# matched control (per group here, per label value in label_rates) ends with them.
CELL_COLUMNS = [
    "control",
    "pairs",
    "unpaired",
    "rate",
    "control_rate",
    "excess",
    "excess_low",
    "excess_high",
    "test_only",
    "control_only",
    "test",
    "p_min",
    *TEST_COLUMNS,
]
COLUMNS = ["model", "relation", "group", *CELL_COLUMNS]


def control_of(evidence: dict[str, Any]) -> dict[str, Any] | None:
    """The control's record in a verdict's evidence, or None (no control ran)."""
    found = evidence.get(CONTROL_KEY)
    return found if isinstance(found, dict) and "outcome" in found else None


def excess_rows(verdicts: Iterable[tuple[str, str, str, dict[str, Any]]]) -> list[list[Any]]:
    """The rows of the excess table from (model, relation, outcome, evidence) of each case:
    per (model, relation) over all its cases, and per group where the controls name one;
    a (model, relation) whose cases carry no control gets one "no control" row."""
    pairs: dict[tuple[str, str, str], PairTally] = defaultdict(lambda: PairTally([0, 0, 0, 0]))
    seen: set[tuple[str, str]] = set()
    for model, relation, outcome, evidence in verdicts:
        seen.add((model, relation))
        control = control_of(evidence)
        if control is None:
            continue
        kind = str(control.get("kind", "repeat"))
        pairs[(model, relation, "(all)")].add(outcome, str(control["outcome"]), kind)
        group = control.get("group")
        if group is not None:
            pairs[(model, relation, str(group))].add(outcome, str(control["outcome"]), kind)
    rows: list[list[Any]] = []
    for model, relation in sorted(seen):
        keys = sorted(
            (k for k in pairs if k[:2] == (model, relation)), key=lambda k: (k[2] != "(all)", k[2])
        )
        if not keys:
            rows.append(
                [model, relation, "(all)", NO_CONTROL, 0, 0]
                + [None] * 7
                + ["none", None, None, None, None]
            )
            continue
        for key in keys:
            rows.append([model, relation, key[2], *excess_cells(pairs[key])])
    return rows


def excess_cells(got: PairTally) -> list[Any]:
    """The cells of a row of the excess table from its "control" column on: the control's
    kinds, the pairs, the rates, the excess with its interval and the exact McNemar test."""
    both, test_only, control_only, neither = got.counts
    e = paired_excess(both, test_only, control_only, neither)
    return [
        ", ".join(sorted(got.kinds or ())),
        e.n,
        got.unpaired,
        report_number(e.rate),
        report_number(e.control_rate),
        report_number(e.excess),
        report_number(e.low),
        report_number(e.high),
        test_only,
        control_only,
        "mcnemar-exact" if e.n else "none",
        # The smallest p its discordant pairs allow (Tarone's rule).
        report_number(mcnemar_min_p(test_only, control_only), 6) if e.n else None,
        report_number(e.p, 6) if e.n else None,
        None,
        None,
    ]


def control_excess(ctx: ReportContext) -> list[Table]:
    rows = excess_rows((v.model, v.relation, v.outcome, v.evidence) for v in ctx.relation_verdicts)
    if not rows:
        return []
    return [
        Table(
            "control_excess",
            "Violation rate beside its matched null control, and the excess over it",
            COLUMNS,
            rows,
            unit="a case: its test and its matched control, asked in the same case (a repeat "
            "is a pair of its own)",
            note="control: what was asked as the null counterpart (the family's docs); "
            "rate and control_rate over pairs where both are valid (unpaired: cases with an "
            "INVALID side); excess = rate - control_rate; exact McNemar test on the discordant "
            "pairs (test_only vs control_only); 95% interval of the excess: Clopper-Pearson "
            "on the discordant pairs, scaled by their share (excludes 0 exactly when p < "
            "0.05); flags are on the excess; 'no control': the cases ran none (a log from "
            "before controls, an import, or control = false)",
            plot=(
                Forest(
                    "excess", "excess_low", "excess_high", ("model", "relation", "group"), "flagged"
                ),
            ),
        )
    ]


EXCESS_SECTIONS = (ReportSection("control_excess", 12, control_excess),)
