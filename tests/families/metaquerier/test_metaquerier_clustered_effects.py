"""The diff and risk-ratio intervals of MetaQuerier's group rows are clustered by case
(`relations.metaquerier.report.clustered_intervals`): the terms of one reply are correlated,
so a group's (case, term) pairs are not independent draws."""

from __future__ import annotations

import random

import pytest

from harness.family_api import cluster_rate_interval, compare_to_rest
from relations.metaquerier.report import clustered_intervals, design_effect


def test_the_design_effect_is_the_one_of_the_clustered_rate_interval() -> None:
    from statsmodels.stats.proportion import proportion_confint

    clusters = [(3, 4), (0, 4), (1, 3), (4, 4), (0, 2), (2, 5)]
    k, n = sum(c[0] for c in clusters), sum(c[1] for c in clusters)
    deff = design_effect(clusters)
    assert deff > 1
    low, high = proportion_confint(k / deff, n / deff, alpha=0.05, method="wilson")
    _, c_low, c_high = cluster_rate_interval(clusters)
    assert (c_low, c_high) == pytest.approx((low, high))
    assert design_effect([(0, 3), (0, 2)]) == 1.0 and design_effect([(2, 3)]) == 1.0


def test_copies_of_a_reply_add_no_evidence() -> None:
    # Each case's term repeated m times with the same outcome: the intervals are those of
    # one term per case (both effective sizes are the cases less one).
    group = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1]
    rest = [0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    one = clustered_intervals(
        sum(group), len(group), sum(rest), len(rest),
        [(x, 1) for x in group], [(x, 1) for x in rest],
    )  # fmt: skip
    for m in (2, 5):
        copies = clustered_intervals(
            m * sum(group), m * len(group), m * sum(rest), m * len(rest),
            [(m * x, m) for x in group], [(m * x, m) for x in rest],
        )  # fmt: skip
        assert copies == pytest.approx(one)
        # Unclustered, the copies would narrow the interval as if they were new cases.
        pooled = compare_to_rest(m * sum(group), m * len(group), m * sum(rest), m * len(rest))
        assert pooled.diff_high - pooled.diff_low < copies[1] - copies[0]


def test_under_the_null_the_clustered_interval_covers_zero_where_the_pooled_one_does_not() -> None:
    # Brute force: 400 simulated tables, 30 cases of the group and 60 of the rest, five
    # terms a reply sharing the reply's outcome (rate 0.3 on both sides).
    rng = random.Random(29)
    clustered = pooled = 0
    trials = 400
    for _ in range(trials):
        g = [5 * (rng.random() < 0.3) for _ in range(30)]
        r = [5 * (rng.random() < 0.3) for _ in range(60)]
        k, n, rk, rn = sum(g), 5 * len(g), sum(r), 5 * len(r)
        lo, hi, rr_lo, rr_hi = clustered_intervals(
            k, n, rk, rn, [(x, 5) for x in g], [(x, 5) for x in r]
        )
        clustered += lo <= 0 <= hi and rr_lo <= 1 <= rr_hi
        c = compare_to_rest(k, n, rk, rn)
        pooled += c.diff_low <= 0 <= c.diff_high
    assert clustered / trials >= 0.92
    assert pooled / trials < 0.85
