"""harness.reporting.stats against brute force: Fisher by enumerating hypergeometric tables,
McNemar by the binomial sum, Benjamini-Hochberg by its definition, Wilson by its closed form."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting.stats import (
    cluster_rate_interval,
    compare_to_rest,
    compare_to_rest_stratified,
    exact_min_p,
    fdr_adjust,
    fdr_adjust_tarone,
    majority_per_case,
    mcnemar_exact,
    mcnemar_min_p,
    mean_of_shares_interval,
    mean_per_case,
    stratified_exact_test,
    tied_cases,
    two_by_two_test,
    wilson_interval,
)

Z = 1.959963984540054


def brute_fisher(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher: the probability of every table with the same margins that is no
    more likely than the observed one, enumerated."""
    r1, c1, n = a + b, a + c, a + b + c + d

    def prob(x: int) -> Fraction:
        return Fraction(math.comb(c1, x) * math.comb(n - c1, r1 - x), math.comb(n, r1))

    observed = prob(a)
    tables = range(max(0, r1 + c1 - n), min(r1, c1) + 1)
    # scipy's relative tolerance for "as likely": 1 + 1e-7.
    return float(sum(p for x in tables if (p := prob(x)) <= observed * Fraction(10000001, 10**7)))


def brute_bh(pvalues: list[float]) -> list[float]:
    """q_i = min over j with p_j >= p_i of p_j * m / rank_j, capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    rank = {i: r + 1 for r, i in enumerate(order)}
    return [
        min(1.0, min(pvalues[j] * m / rank[j] for j in range(m) if pvalues[j] >= pvalues[i]))
        for i in range(m)
    ]


cells = st.integers(0, 12)


@settings(deadline=None)  # the machine is shared: timings vary
@given(a=cells, b=cells, c=cells, d=cells)
def test_small_tables_use_fisher_and_match_the_enumeration(a: int, b: int, c: int, d: int) -> None:
    test, p = two_by_two_test([[a, b], [c, d]])
    assert test == "fisher"
    assert p == pytest.approx(min(1.0, brute_fisher(a, b, c, d)), rel=1e-9, abs=1e-12)


def test_large_balanced_tables_use_chi_squared_and_agree_with_fisher() -> None:
    test, p = two_by_two_test([[300, 700], [350, 650]])
    assert test == "chi2"
    assert p == pytest.approx(brute_fisher(300, 700, 350, 650), rel=0.1)


@settings(deadline=None)  # the machine is shared: timings vary
@given(k=st.integers(0, 30), n=st.integers(1, 30), rk=st.integers(0, 60), rn=st.integers(1, 60))
def test_group_vs_rest_effect_sizes(k: int, n: int, rk: int, rn: int) -> None:
    k, rk = min(k, n), min(rk, rn)
    g = compare_to_rest(k, n, rk, rn)
    assert g.diff == pytest.approx(k / n - rk / rn)
    assert g.diff_low <= g.diff + 1e-9 and g.diff <= g.diff_high + 1e-9
    assert -1 <= g.diff_low <= g.diff_high <= 1
    assert g.rr_low <= g.rr_high
    if k and rk:
        assert g.rr_low <= g.risk_ratio <= g.rr_high
    assert g.low <= g.rate <= g.high
    assert g.p == pytest.approx(min(1.0, brute_fisher(k, n - k, rk, rn - rk)), rel=1e-9)


def test_a_side_without_observations_has_no_test() -> None:
    g = compare_to_rest(0, 0, 3, 10)
    assert g.test == "none" and math.isnan(g.p)


@settings(deadline=None)  # the machine is shared: timings vary
@given(b=st.integers(0, 25), c=st.integers(0, 25))
def test_mcnemar_exact_is_the_two_sided_binomial_sum(b: int, c: int) -> None:
    n = b + c
    tail = sum(Fraction(math.comb(n, i), 2**n) for i in range(min(b, c) + 1)) if n else 1
    assert mcnemar_exact(b, c) == pytest.approx(min(1.0, float(2 * tail)), rel=1e-9)


@settings(deadline=None, max_examples=200)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_benjamini_hochberg_matches_its_definition(pvalues: list[float]) -> None:
    adjusted, flagged = fdr_adjust(pvalues)
    expected = brute_bh(pvalues)
    assert adjusted == pytest.approx(expected, rel=1e-9, abs=1e-12)
    # Flagged: at or under the largest rank k with p_(k) <= k/m * alpha.
    m = len(pvalues)
    ranked = sorted(pvalues)
    cut = max((k for k in range(1, m + 1) if ranked[k - 1] <= k / m * 0.05), default=0)
    threshold = ranked[cut - 1] if cut else -1.0
    assert flagged == [p <= threshold for p in pvalues]


def test_fdr_leaves_untestable_entries_out() -> None:
    adjusted, flagged = fdr_adjust([0.01, math.nan, 0.04])
    assert math.isnan(adjusted[1]) and not flagged[1]
    assert adjusted[0] == pytest.approx(0.02) and adjusted[2] == pytest.approx(0.04)


@settings(deadline=None)  # the machine is shared: timings vary
@given(n=st.integers(1, 5000), data=st.data())
def test_wilson_interval_contains_the_rate_and_stays_in_bounds(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, n))
    low, high = wilson_interval(k, n)
    assert 0 <= low <= k / n <= high <= 1


def test_wilson_closed_forms() -> None:
    assert wilson_interval(0, 10)[1] == pytest.approx(Z * Z / (10 + Z * Z))
    assert wilson_interval(10, 10)[0] == pytest.approx(10 / (10 + Z * Z))
    p, n = 0.3, 50
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    assert wilson_interval(15, 50) == pytest.approx((centre - half, centre + half))
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_majority_counts_each_case_once_and_leaves_a_tie_out() -> None:
    """A tie is no evidence either way: counted as False it biased every rate down."""
    pairs = [("a", True), ("a", True), ("a", False), ("b", True), ("b", False), ("c", False)]
    assert majority_per_case(pairs) == {"a": True, "c": False}
    assert tied_cases(pairs) == 1
    assert mean_per_case(pairs) == {"a": 2 / 3, "b": 0.5, "c": 0.0}


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=30))
def test_majority_and_ties_partition_the_cases(pairs: list[tuple[int, bool]]) -> None:
    decided = majority_per_case(pairs)
    assert len(decided) + tied_cases(pairs) == len({c for c, _ in pairs})
    for case, positive in decided.items():
        votes = [v for c, v in pairs if c == case]
        assert positive == (2 * sum(votes) > len(votes))


def brute_min_p_fisher(a: int, b: int, c: int, d: int) -> float:
    """The smallest two-sided Fisher p over every table with the margins of (a, b, c, d)."""
    r1, c1, n = a + b, a + c, a + b + c + d
    return min(
        brute_fisher(x, r1 - x, c1 - x, n - r1 - c1 + x)
        for x in range(max(0, r1 + c1 - n), min(r1, c1) + 1)
    )


@given(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6), st.integers(0, 6))
@settings(max_examples=80, deadline=None)
def test_exact_min_p_is_the_smallest_fisher_p_with_those_margins(
    a: int, b: int, c: int, d: int
) -> None:
    if a + b + c + d == 0:
        return
    assert exact_min_p([((a, b), (c, d))]) == pytest.approx(
        brute_min_p_fisher(a, b, c, d), rel=1e-6
    )
    # and no table with those margins has a smaller p than the observed one's floor
    assert stratified_exact_test([((a, b), (c, d))]) >= exact_min_p([((a, b), (c, d))]) - 1e-12


def test_exact_min_p_of_strata_by_enumeration() -> None:
    """Two strata: every pair of tables with the same margins, tested, the smallest p."""
    strata = [((1, 2), (0, 3)), ((2, 0), (1, 2))]
    candidates = []
    margins = [(a + b, a + c, a + b + c + d) for (a, b), (c, d) in strata]
    choices = [range(max(0, r + k - n), min(r, k) + 1) for r, k, n in margins]
    for x in choices[0]:
        for y in choices[1]:
            tables = [
                ((v, r - v), (k - v, n - r - k + v))
                for v, (r, k, n) in zip((x, y), margins, strict=True)
            ]
            candidates.append(stratified_exact_test(tables))
    assert exact_min_p(strata) == pytest.approx(min(candidates), rel=1e-9)


@given(st.integers(0, 12), st.integers(0, 12))
def test_mcnemar_min_p_is_the_smallest_mcnemar_p(b: int, c: int) -> None:
    n = b + c
    assert mcnemar_min_p(b, c) == pytest.approx(min(mcnemar_exact(x, n - x) for x in range(n + 1)))


def test_tarone_drops_the_tests_that_cannot_reach_alpha_and_corrects_the_rest() -> None:
    p = [0.01, 0.5, 0.03, math.nan, 0.2]
    p_min = [0.0, 0.3, 0.01, 0.0, 0.001]
    result = fdr_adjust_tarone(p, p_min)
    assert (result.tested, result.dropped) == (3, 1)
    expected, flagged = fdr_adjust([0.01, 0.03, 0.2])
    assert [result.adjusted[i] for i in (0, 2, 4)] == pytest.approx(expected)
    assert math.isnan(result.adjusted[1]) and math.isnan(result.adjusted[3])
    assert result.flagged == [flagged[0], False, flagged[1], False, flagged[2]]


def test_mean_of_shares_interval_is_wilson_on_whole_outcomes() -> None:
    assert mean_of_shares_interval(7, 20) == pytest.approx((0.35, *wilson_interval(7, 20)))
    mean, low, high = mean_of_shares_interval(2.5, 10)
    assert mean == 0.25 and low < 0.25 < high
    assert all(math.isnan(x) for x in mean_of_shares_interval(0, 0))


def test_cluster_interval_widens_with_correlated_rows() -> None:
    independent = [(1, 4)] * 25  # every cluster alike: the Wilson interval of the rows
    rate, low, high = cluster_rate_interval(independent)
    assert rate == 0.25 and (low, high) == pytest.approx(wilson_interval(25, 100))
    correlated = [(4, 4)] * 6 + [(0, 4)] * 19  # whole replies named together
    rate2, low2, high2 = cluster_rate_interval(correlated)
    assert rate2 == 0.24
    assert high2 - low2 > 1.5 * (high - low)
    # the design effect here is about 4 (a cluster counts as one row): the interval is
    # close to the Wilson interval of 6 of 25 clusters
    assert (low2, high2) == pytest.approx(wilson_interval(6, 25), abs=0.02)


def test_compare_groups_takes_the_rest_within_the_same_context() -> None:
    from harness.reporting.stats import compare_groups

    rows = dict(compare_groups({("m1", "a"): (3, 10), ("m1", "b"): (1, 20), ("m2", "a"): (5, 5)}))
    assert (rows[("m1", "a")].rest_k, rows[("m1", "a")].rest_n) == (1, 20)
    assert (rows[("m1", "b")].rest_k, rows[("m1", "b")].rest_n) == (3, 10)
    assert rows[("m2", "a")].test == "none"  # no other group of m2


def brute_stratified(tables: list[tuple[int, int, int, int]]) -> float:
    """The exact conditional test given the strata, by enumerating every combination of
    top-left cells that keeps each table's margins: the probability of every combination
    whose sum is no more likely than the observed sum."""
    import itertools

    ranges, probs = [], []
    for a, b, c, d in tables:
        r1, c1, n = a + b, a + c, a + b + c + d
        xs = list(range(max(0, r1 + c1 - n), min(r1, c1) + 1))
        ranges.append(xs)
        probs.append(
            {
                x: Fraction(math.comb(c1, x) * math.comb(n - c1, r1 - x), math.comb(n, r1))
                for x in xs
            }
        )
    by_sum: dict[int, Fraction] = {}
    for combo in itertools.product(*ranges):
        p = Fraction(1)
        for x, pr in zip(combo, probs, strict=True):
            p *= pr[x]
        by_sum[sum(combo)] = by_sum.get(sum(combo), Fraction(0)) + p
    observed = by_sum[sum(t[0] for t in tables)]
    return float(sum(p for p in by_sum.values() if p <= observed * Fraction(10000001, 10**7)))


small = st.integers(0, 5)


@settings(deadline=None, max_examples=150)  # the machine is shared: timings vary
@given(st.lists(st.tuples(small, small, small, small), min_size=1, max_size=3))
def test_stratified_exact_test_matches_the_enumeration(
    tables: list[tuple[int, int, int, int]],
) -> None:
    p = stratified_exact_test([((a, b), (c, d)) for a, b, c, d in tables])
    assert p == pytest.approx(min(1.0, brute_stratified(tables)), rel=1e-7, abs=1e-12)


def _per_table_exact(tables: list[tuple[int, int, int, int]]) -> float:
    """The test computed one scipy call per table, as before it was batched."""
    from scipy.stats import hypergeom

    dist, observed = np.ones(1), 0
    for a, b, c, d in tables:
        group, total, positives = a + b, a + b + c + d, a + c
        if total == 0:
            continue
        low, high = max(0, positives - (c + d)), min(group, positives)
        k = np.arange(low, high + 1)
        part = np.exp(hypergeom.logpmf(k, total, group, positives))
        dist = np.convolve(dist, part / part.sum())
        observed += a - low
    return float(min(1.0, dist[dist <= dist[observed] * (1 + 1e-7)].sum()))


@settings(deadline=None, max_examples=200)  # the machine is shared: timings vary
@given(st.lists(st.tuples(*[st.integers(0, 40)] * 4), min_size=0, max_size=12))
def test_the_batched_pmf_gives_the_per_table_p_value_exactly(
    tables: list[tuple[int, int, int, int]],
) -> None:
    # One vectorised pmf call over every table's support must not move a single bit.
    p = stratified_exact_test([((a, b), (c, d)) for a, b, c, d in tables])
    assert p == _per_table_exact(tables)


@settings(deadline=None)  # the machine is shared: timings vary
@given(a=cells, b=cells, c=cells, d=cells)
def test_one_stratum_is_fishers_test(a: int, b: int, c: int, d: int) -> None:
    p = stratified_exact_test([((a, b), (c, d))])
    assert p == pytest.approx(min(1.0, brute_fisher(a, b, c, d)), rel=1e-7, abs=1e-12)


def test_stratifying_keeps_a_stratum_effect_out_of_the_group_effect() -> None:
    # Within each stratum the group fares exactly like the rest (1/2 and 1/10), but the
    # group sits mostly in the stratum with the high base rate: pooled, it looks worse.
    strata = [(20, 40, 2, 4), (1, 10, 10, 100)]
    pooled = compare_to_rest(21, 50, 12, 104)
    assert pooled.p < 0.001
    g = compare_to_rest_stratified(strata)
    assert g.test == "cmh-exact" and g.p > 0.5
    assert (g.k, g.n, g.rest_k, g.rest_n) == (21, 50, 12, 104)
    assert g.diff == pytest.approx(pooled.diff)


def test_strata_without_both_sides_give_no_test() -> None:
    g = compare_to_rest_stratified([(2, 5, 0, 0), (0, 0, 1, 9)])
    assert g.test == "none" and math.isnan(g.p)
    g = compare_to_rest_stratified([(0, 5, 0, 9), (0, 0, 1, 9)])
    assert g.test == "cmh-exact" and g.p == 1.0
