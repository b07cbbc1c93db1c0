"""The comparison's statistics against brute force on small cases: McNemar's exact p and mid-p
by enumerating the discordant pairs' signs, the paired permutation p by enumerating every
sign flip, the bootstrap interval against the exact bootstrap distribution, the unpaired
test against Fisher's, and the Cochran-Armitage trend against its textbook formula."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting.compare import (
    CaseTally,
    Side,
    paired_difference,
    trend_table,
    unpaired_difference,
)
from harness.reporting.stats import compare_to_rest


def brute_sign_test(new_only: int, base_only: int) -> tuple[float, float]:
    """(central two-sided p, mid-p) of the sign test over every assignment of the
    discordant pairs, each equally likely under no difference."""
    d = new_only + base_only
    if d == 0:
        return 1.0, 1.0
    counts = [0] * (d + 1)
    for signs in itertools.product((0, 1), repeat=d):
        counts[sum(signs)] += 1
    total = 2**d
    low = sum(counts[: new_only + 1]) / total
    high = sum(counts[new_only:]) / total
    p = min(1.0, 2 * min(low, high))
    return p, min(1.0, p - counts[new_only] / total)


def pairs(
    both: int, new_only: int, base_only: int, neither: int
) -> tuple[list[float], list[float]]:
    base = [1.0] * both + [0.0] * new_only + [1.0] * base_only + [0.0] * neither
    new = [1.0] * both + [1.0] * new_only + [0.0] * base_only + [0.0] * neither
    return base, new


@pytest.mark.parametrize("new_only", range(0, 8))
@pytest.mark.parametrize("base_only", range(0, 8))
def test_mcnemar_p_and_mid_p_are_the_enumerated_sign_test(new_only: int, base_only: int) -> None:
    base, new = pairs(4, new_only, base_only, 6)
    got = paired_difference(base, new)
    p, mid = brute_sign_test(new_only, base_only)
    assert got.test == "mcnemar-exact"
    assert got.p == pytest.approx(p, abs=1e-12)
    assert got.p_mid == pytest.approx(mid, abs=1e-12)
    assert (got.new_only, got.base_only) == (new_only, base_only)
    assert got.diff == pytest.approx((new_only - base_only) / len(base))
    # The smallest p its discordant pairs allow: all of them on one side.
    assert got.p_min == pytest.approx(brute_sign_test(new_only + base_only, 0)[0])


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20), st.integers(1, 20))
def test_mcnemar_interval_holds_the_difference_and_excludes_zero_iff_p_is_small(
    both: int, new_only: int, base_only: int, neither: int
) -> None:
    got = paired_difference(*pairs(both, new_only, base_only, neither))
    assert got.low <= got.diff <= got.high
    if abs(got.p - 0.05) > 1e-9:
        assert (not (got.low <= 0 <= got.high)) == (got.p < 0.05)


def brute_sign_flip_p(diffs: Sequence[float]) -> float:
    """Two-sided p of the mean of paired differences over every sign flip."""
    observed = abs(sum(diffs))
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=len(diffs)):
        total += 1
        hits += abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed - 1e-12
    return hits / total


@pytest.mark.parametrize(
    ("base", "new"),
    [
        ([0.5, 0.0, 1.0, 0.5, 0.0, 0.5], [1.0, 0.5, 1.0, 1.0, 0.5, 0.5]),
        ([0.0, 0.25, 0.5, 0.75, 1.0, 0.0, 0.0], [0.5, 0.25, 0.5, 1.0, 0.5, 0.5, 1.0]),
        ([1 / 3, 2 / 3, 0.0, 1.0, 1 / 3], [1.0, 1.0, 1 / 3, 1.0, 2 / 3]),
    ],
)
def test_permutation_p_of_shares_is_the_enumerated_sign_flip_test(
    base: list[float], new: list[float]
) -> None:
    got = paired_difference(base, new)
    diffs = [b - a for a, b in zip(base, new, strict=True) if b != a]
    assert got.test == "paired-permutation"
    assert got.p == pytest.approx(brute_sign_flip_p(diffs), abs=1e-9)
    assert got.diff == pytest.approx(sum(new) / len(new) - sum(base) / len(base))
    assert got.low <= got.diff <= got.high


def test_bootstrap_interval_matches_the_exact_bootstrap_distribution() -> None:
    base = [0.0, 0.5, 0.5, 0.0, 1.0]
    new = [0.5, 1.0, 0.5, 0.5, 1.0]
    diffs = [b - a for a, b in zip(base, new, strict=True)]
    n = len(diffs)
    means = sorted(
        sum(diffs[i] for i in draw) / n for draw in itertools.product(range(n), repeat=n)
    )
    low = means[int(0.025 * len(means))]
    high = means[int(0.975 * len(means)) - 1]
    got = paired_difference(base, new)
    # 9,999 resamples against the 3,125 equally likely ones: the percentiles agree to
    # within one step of the (discrete) distribution of means.
    assert got.low == pytest.approx(low, abs=0.1 + 1e-9)
    assert got.high == pytest.approx(high, abs=0.1 + 1e-9)


def test_no_pair_and_no_difference() -> None:
    assert math.isnan(paired_difference([], []).p)
    same = paired_difference([0.5, 1.0], [0.5, 1.0])
    assert same.p == 1.0 and same.diff == 0.0


@pytest.mark.parametrize(("k_new", "k_base"), [(0, 0), (3, 1), (9, 2), (1, 8)])
def test_unpaired_binary_is_fishers_test_with_newcombes_interval(k_new: int, k_base: int) -> None:
    base = [1.0] * k_base + [0.0] * (12 - k_base)
    new = [1.0] * k_new + [0.0] * (10 - k_new)
    got = unpaired_difference(base, new)
    want = compare_to_rest(k_new, 10, k_base, 12)
    assert (got.p, got.low, got.high, got.test) == (want.p, want.diff_low, want.diff_high, "fisher")
    assert (got.n, got.n_base) == (10, 12)


def _side(label: str, relation: str, outcomes: list[str]) -> Side:
    cases = {
        (relation, i, i, "d"): CaseTally(relation, None, {o: 1}) for i, o in enumerate(outcomes)
    }
    return Side(label, label, cases)  # type: ignore[arg-type]


def cochran_armitage(counts: Sequence[tuple[int, int]]) -> float:
    """Textbook Cochran-Armitage: (violated, cases) per ordered log, scores 0, 1, 2..."""
    from scipy.stats import chi2

    n_total = sum(n for _, n in counts)
    p = sum(k for k, _ in counts) / n_total
    t = sum(i * (k - n * p) for i, (k, n) in enumerate(counts))
    s1 = sum(i * n for i, (_, n) in enumerate(counts))
    s2 = sum(i * i * n for i, (_, n) in enumerate(counts))
    var = p * (1 - p) * (s2 - s1 * s1 / n_total)
    # statsmodels' linear-by-linear statistic has N - 1 where the textbook has N.
    stat = t * t / var * (n_total - 1) / n_total
    return float(chi2.sf(stat, 1))


def test_trend_is_cochran_armitage() -> None:
    counts = [(3, 40), (6, 40), (11, 40), (9, 38)]
    logs = [
        (f"log{i}", [_side("m", "r", ["VIOLATED"] * k + ["HELD"] * (n - k))])
        for i, (k, n) in enumerate(counts)
    ]
    table = trend_table(logs)
    row = dict(zip(table.columns, table.rows[0], strict=True))
    assert row["test"] == "cochran-armitage"
    assert row["p"] == pytest.approx(cochran_armitage(counts), rel=1e-4)
    assert row["cases"] == "40, 40, 40, 38"
    assert row["change"] == pytest.approx(9 / 38 - 3 / 40, abs=1e-4)


def test_many_moved_pairs_use_random_sign_flips_whose_smallest_p_is_p_min() -> None:
    from harness.reporting.compare import RANDOM_MIN_P

    base = [0.0, 1 / 3] * 15
    new = [2 / 3, 1.0] * 15  # 30 pairs, every one higher: 2^30 sign patterns
    got = paired_difference(base, new)
    assert got.test == "paired-permutation"
    assert got.p_min == RANDOM_MIN_P
    assert got.p == pytest.approx(RANDOM_MIN_P)  # none of the random flips is as extreme
    again = paired_difference(base, new)
    assert (again.p, again.low, again.high) == (got.p, got.low, got.high)  # seeded
