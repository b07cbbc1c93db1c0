"""The stratified exact test computes its conditional distribution once for p and p_min
(`stratified_exact_p_and_min`, cached by the tables with a choice) and keeps the pooled
effects without computing the pooled test: the values are those of the separate calls, to
the last bit."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting.stats import (
    compare_to_rest,
    compare_to_rest_stratified,
    exact_min_p,
    stratified_exact_p_and_min,
    stratified_exact_test,
)

TABLE = st.tuples(
    st.tuples(st.integers(0, 5), st.integers(0, 5)), st.tuples(st.integers(0, 5), st.integers(0, 5))
)


@given(st.lists(TABLE, min_size=1, max_size=8))
@settings(max_examples=300, deadline=None)
def test_p_and_p_min_from_one_distribution_are_the_two_calls_bit_for_bit(
    tables: list[tuple[tuple[int, int], tuple[int, int]]],
) -> None:
    p, p_min = stratified_exact_p_and_min(tables)
    assert p == stratified_exact_test(tables)
    assert p_min == exact_min_p(tables)
    # once more: now from the cache, the same values
    assert stratified_exact_p_and_min(tables) == (p, p_min)


def test_tables_without_a_choice_change_nothing() -> None:
    informative = [((1, 0), (0, 1)), ((2, 1), (0, 3))]
    # no positive, every list positive, an empty table: one possible count each
    padded = [((0, 4), (0, 2)), informative[0], ((3, 0), (2, 0)), ((0, 0), (0, 0)), informative[1]]
    assert stratified_exact_p_and_min(padded) == stratified_exact_p_and_min(informative)
    assert stratified_exact_p_and_min(padded) == (
        stratified_exact_test(padded),
        exact_min_p(padded),
    )
    assert stratified_exact_p_and_min([((0, 3), (0, 3))]) == (1.0, 1.0)


STRATUM = st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)).map(
    lambda t: (min(t[0], t[1]), t[1], min(t[2], t[3]), t[3])
)


@given(st.lists(STRATUM, min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_the_stratified_comparison_is_the_pooled_one_with_the_exact_test(
    strata: list[tuple[int, int, int, int]],
) -> None:
    """As it was computed before: the pooled comparison (its test included) with the
    stratified test's p and p_min put in its place."""
    g = compare_to_rest_stratified(strata)
    k, n, rest_k, rest_n = (sum(s[i] for s in strata) for i in range(4))
    tables = [((a, b - a), (c, d - c)) for a, b, c, d in strata if b > 0 and d > 0]
    pooled = compare_to_rest(k, n, rest_k, rest_n)
    if tables:
        expected = dataclasses.replace(
            pooled,
            test="cmh-exact",
            p=stratified_exact_test(tables),
            p_min=exact_min_p(tables),
        )
    else:
        expected = dataclasses.replace(pooled, test="none", p=math.nan, p_min=math.nan)
    # NaN != NaN: compare the fields' reprs (bit-equal floats print alike)
    assert repr(dataclasses.astuple(g)) == repr(dataclasses.astuple(expected))


def test_a_test_over_many_strata_is_not_kept_in_the_cache() -> None:
    """A stratum a case: a large campaign's key would hold every table (about 70 MB at a
    million cases); only small keys, which repeat (BADF's shuffles), are cached."""
    from harness.reporting import stats

    many = [((1, 1), (0, 2)), ((0, 2), (1, 1))] * stats.CACHED_STRATA
    few = many[: stats.CACHED_STRATA]
    stats._exact_p_and_min.cache_clear()
    large = stratified_exact_p_and_min(many)
    assert stats._exact_p_and_min.cache_info().currsize == 0
    assert large == (stratified_exact_test(many), exact_min_p(many))
    small = stratified_exact_p_and_min(few)
    assert stats._exact_p_and_min.cache_info().currsize == 1
    assert small == (stratified_exact_test(few), exact_min_p(few))
