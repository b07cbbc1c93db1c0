"""The excess over a matched control: its exact McNemar p and interval against brute force,
the interval's coverage of 0 under the null computed exactly, and the table's rows."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting.excess import (
    COLUMNS,
    NO_CONTROL,
    excess_rows,
    paired_excess,
    paired_power,
)


def brute_force_p(test_only: int, control_only: int) -> float:
    """Two-sided central p of the sign test by enumerating every assignment of the
    discordant pairs to the two sides (each equally likely under the null)."""
    d = test_only + control_only
    if d == 0:
        return 1.0
    counts = [0] * (d + 1)
    for signs in itertools.product((0, 1), repeat=d):
        counts[sum(signs)] += 1
    total = 2**d
    low = sum(counts[: test_only + 1]) / total
    high = sum(counts[test_only:]) / total
    return min(1.0, 2 * min(low, high))


@pytest.mark.parametrize("test_only", range(0, 9))
@pytest.mark.parametrize("control_only", range(0, 9))
def test_p_is_the_exact_sign_test_of_the_discordant_pairs(
    test_only: int, control_only: int
) -> None:
    got = paired_excess(3, test_only, control_only, 5)
    assert got.p == pytest.approx(brute_force_p(test_only, control_only), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))
def test_interval_excludes_zero_exactly_when_p_is_below_alpha(
    both: int, test_only: int, control_only: int, neither: int
) -> None:
    e = paired_excess(both, test_only, control_only, neither)
    if both + test_only + control_only + neither == 0:
        assert math.isnan(e.excess)
        return
    assert e.low <= e.excess <= e.high
    assert e.excess == pytest.approx((test_only - control_only) / e.n)
    assert e.rate - e.control_rate == pytest.approx(e.excess)
    excludes = not (e.low <= 0 <= e.high)
    # Both come from the same two binomial tails; a hair's tolerance at the boundary.
    if abs(e.p - 0.05) > 1e-9:
        assert excludes == (e.p < 0.05), e


def pair_probabilities(p: float, rho_extra: float = 0.0) -> tuple[float, float, float, float]:
    """Cell probabilities (both, test only, control only, neither) of a fair model that
    violates test and control alike at rate p (``rho_extra`` > 0: positively correlated)."""
    both = p * p + rho_extra
    one = p * (1 - p) - rho_extra
    return both, one, one, (1 - p) * (1 - p) + rho_extra


@pytest.mark.parametrize("n", [10, 25, 40])
@pytest.mark.parametrize(("p", "extra"), [(0.1, 0.0), (0.3, 0.0), (0.5, 0.0), (0.3, 0.1)])
def test_null_coverage_of_zero_is_at_least_95_percent_exactly(
    n: int, p: float, extra: float
) -> None:
    """Summed over every outcome of n pairs (multinomial, computed exactly): the interval
    holds 0 with probability >= 0.95 whenever test and control violate alike."""
    from scipy.stats import binom

    probs = pair_probabilities(p, extra)
    discordant = probs[1] + probs[2]
    coverage = 0.0
    for d in range(n + 1):
        weight = float(binom.pmf(d, n, discordant))
        for b in range(d + 1):
            e = paired_excess(n - d, b, d - b, 0)  # concordant cells do not move the interval
            if e.low <= 0 <= e.high:
                coverage += weight * float(binom.pmf(b, d, 0.5))
    assert coverage >= 0.95


def test_a_planted_excess_is_found_where_the_null_is_not() -> None:
    # 200 pairs, the test violated 10 points more often than its control.
    planted = paired_excess(10, 40, 20, 130)
    assert planted.excess == pytest.approx(0.10)
    assert planted.p < 0.05 and planted.low > 0
    null = paired_excess(10, 30, 30, 130)
    assert null.excess == 0 and null.low < 0 < null.high and null.p == 1.0


def test_rows_per_relation_and_group_and_no_control() -> None:
    ev = lambda outcome, group: {"control": {"outcome": outcome, "kind": "again", "group": group}}  # noqa: E731
    verdicts = [
        ("m", "r1", "VIOLATED", ev("HELD", "a")),
        ("m", "r1", "HELD", ev("HELD", "a")),
        ("m", "r1", "VIOLATED", ev("VIOLATED", "b")),
        ("m", "r1", "INVALID", ev("HELD", "b")),
        ("m", "r1", "HELD", ev("INVALID", "b")),
        ("m", "old", "VIOLATED", {}),
    ]
    rows = excess_rows(verdicts)
    by = {(r[1], r[2]): r for r in rows}
    assert set(by) == {("r1", "(all)"), ("r1", "a"), ("r1", "b"), ("old", "(all)")}
    total = by[("r1", "(all)")]
    at = {name: total[i] for i, name in enumerate(COLUMNS)}
    assert at["control"] == "again" and at["pairs"] == 3 and at["unpaired"] == 2
    assert at["rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert at["control_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert (at["test_only"], at["control_only"]) == (1, 0)
    assert at["p_min"] == 1.0  # one discordant pair: p can never be below 1
    old = by[("old", "(all)")]
    assert old[3] == NO_CONTROL and old[-3] is None  # no test: not counted by the correction


@pytest.mark.parametrize(("b", "c", "n"), [(0.2, 0.05, 10), (0.1, 0.1, 8), (0.3, 0.0, 6)])
def test_power_is_the_chance_of_p_below_alpha_over_every_outcome(
    b: float, c: float, n: int
) -> None:
    """Brute force: every sequence of n pairs (each test only, control only or concordant)."""
    brute = 0.0
    flagged: dict[tuple[int, int], bool] = {}
    for seq in itertools.product((0, 1, 2), repeat=n):
        prob = math.prod((b, c, 1 - b - c)[x] for x in seq)
        key = (seq.count(0), seq.count(1))
        if key not in flagged:
            flagged[key] = paired_excess(0, key[0], key[1], n - sum(key)).p < 0.05
        if flagged[key]:
            brute += prob
    assert paired_power(b, c, n) == pytest.approx(brute, abs=1e-9)
    if b == c:
        assert paired_power(b, c, n) <= 0.05
