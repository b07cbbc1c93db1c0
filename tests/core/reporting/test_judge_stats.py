"""Judge statistics against brute force on small cases: Cohen's and Fleiss' kappa,
Krippendorff's alpha, Rogan-Gladen, the corrected rate's interval (coverage in a seeded
simulation) and the label planner."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting.judge_calibration import (
    JURY,
    Rated,
    attribute_error_tests,
    per_test_confusions,
    threat_text,
)
from harness.reporting.judge_stats import (
    Z95,
    Confusion,
    bootstrap_interval,
    cohen_kappa_interval,
    corrected_rate,
    fleiss_kappa_of,
    krippendorff_alpha,
    labels_needed,
    rogan_gladen,
)
from harness.reporting.stats import wilson_interval

LABEL = st.sampled_from(["B", "U", "X"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(LABEL, LABEL), min_size=2, max_size=30))
def test_cohen_kappa_is_observed_over_chance_agreement(pairs: list[tuple[str, str]]) -> None:
    kappa, low, high = cohen_kappa_interval(pairs)
    labels = {x for p in pairs for x in p}
    n = len(pairs)
    po = sum(a == b for a, b in pairs) / n
    pe = sum(
        (sum(a == c for a, _ in pairs) / n) * (sum(b == c for _, b in pairs) / n) for c in labels
    )
    if len(labels) < 2 or pe == 1:
        assert math.isnan(kappa) or pe == 1
        return
    assert kappa == pytest.approx((po - pe) / (1 - pe))
    # Undefined (NaN) when the asymptotic variance is: one rater using one label.
    assert (math.isnan(low) and math.isnan(high)) or low - 1e-12 <= kappa <= high + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(LABEL, min_size=3, max_size=3), min_size=2, max_size=20))
def test_fleiss_kappa_matches_its_definition(units: list[list[str]]) -> None:
    got = fleiss_kappa_of(units)
    cats = sorted({x for u in units for x in u})
    if len(cats) < 2:
        assert math.isnan(got)
        return
    n, m = len(units), 3
    counts = [[u.count(c) for c in cats] for u in units]
    p_i = [(sum(x * x for x in row) - m) / (m * (m - 1)) for row in counts]
    p_j = [sum(row[j] for row in counts) / (n * m) for j in range(len(cats))]
    pe = sum(p * p for p in p_j)
    expected = (sum(p_i) / n - pe) / (1 - pe)
    assert got == pytest.approx(expected)


def _alpha_brute(units: list[list[str | None]]) -> float:
    """Krippendorff's alpha from its pairwise definition: disagreement of pairs of values
    within units (each unit's pairs weighted 1/(m-1)) against pairs of all pairable values."""
    pairable = [[x for x in u if x is not None] for u in units]
    pairable = [u for u in pairable if len(u) >= 2]
    values = [x for u in pairable for x in u]
    n = len(values)
    observed = (
        sum(sum(a != b for a, b in itertools.permutations(u, 2)) / (len(u) - 1) for u in pairable)
        / n
    )
    expected = sum(a != b for a, b in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - observed / expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), LABEL), min_size=2, max_size=4), max_size=12))
def test_krippendorff_alpha_matches_the_pairwise_definition(units: list[list[str | None]]) -> None:
    got = krippendorff_alpha(units)
    pairable = [x for u in units if sum(v is not None for v in u) >= 2 for x in u if x]
    if len(set(pairable)) < 2:
        assert math.isnan(got)
        return
    assert got == pytest.approx(_alpha_brute(units))


def test_krippendorff_alpha_of_the_textbook_example() -> None:
    # Krippendorff's reliability data example: 4 coders, 12 units, nominal alpha 0.743.
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [list(u) for u in zip(*coders, strict=True)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    low, high = bootstrap_interval(units, krippendorff_alpha, seed=1)
    assert low < 0.743 < high


def test_rogan_gladen_inverts_the_judges_error_and_clips() -> None:
    se, sp, pi = 0.8, 0.9, 0.3
    observed = pi * se + (1 - pi) * (1 - sp)
    assert rogan_gladen(observed, se, sp) == pytest.approx(pi)
    assert rogan_gladen(0.01, se, sp) == 0.0 and rogan_gladen(0.99, se, sp) == 1.0
    assert math.isnan(rogan_gladen(0.5, 0.5, 0.5))


def test_a_perfect_judge_is_not_corrected_and_its_interval_never_collapses() -> None:
    fixed = corrected_rate(0, 3, Confusion(tp=10, fn=0, fp=0, tn=10))
    assert fixed.corrected == 0.0 and fixed.low == 0.0 and fixed.high > 0.1
    assert math.isnan(corrected_rate(3, 10, Confusion(tp=0, fn=0, fp=1, tn=5)).low)


@given(
    k=st.integers(0, 400),
    extra=st.integers(0, 400),
    cells=st.tuples(*(st.integers(0, 60) for _ in range(4))),
)
@settings(max_examples=300)
def test_the_corrected_rate_lies_inside_its_interval(
    k: int, extra: int, cells: tuple[int, int, int, int]
) -> None:
    # Far below the judge's false-positive rate the unclipped interval lies below 0 (a sim
    # campaign gave corrected 0, high -0.0009): both ends are clipped like the point.
    fixed = corrected_rate(k, k + extra + 1, Confusion(*cells))
    if not math.isnan(fixed.low):
        assert 0.0 <= fixed.low <= fixed.corrected <= fixed.high <= 1.0
    assert corrected_rate(1, 400, Confusion(tp=40, fn=10, fp=30, tn=70)).high >= 0.0


def test_the_corrected_interval_covers_the_true_rate() -> None:
    """The bench's check of the report's interval (bench/judge_correction.py), small and
    seeded: a judge of Se 0.8, Sp 0.9, 200 labelled cases drawn from a separate sample (the
    harder case: it shares no judge error with the campaign), true rate 0.3."""
    rng = np.random.default_rng(30)
    runs, pi, n, labels, covered = 200, 0.3, 1000, 200, 0
    for _ in range(runs):
        k = int(rng.binomial(n, pi * 0.8 + (1 - pi) * 0.1))
        h = rng.random(labels) < pi
        s = np.where(h, rng.random(labels) < 0.8, rng.random(labels) < 0.1)
        c = Confusion(
            int((h & s).sum()), int((h & ~s).sum()), int((~h & s).sum()), int((~h & ~s).sum())
        )
        fixed = corrected_rate(k, n, c)
        covered += fixed.low <= pi <= fixed.high
    assert covered / runs >= 0.93


def test_the_planner_reaches_its_target_and_no_fewer_labels_would() -> None:
    se, sp, prevalence, h, campaign = 0.8, 0.9, 0.3, 0.05, 2000
    plan = labels_needed(se, sp, prevalence, h, campaign)

    def wilson_half(p: float, n: int) -> float:
        low, high = wilson_interval(round(p * n), n)
        return (high - low) / 2

    assert wilson_half(se, plan.positives) <= h < wilson_half(se, plan.positives - 1)
    assert wilson_half(sp, plan.negatives) <= h < wilson_half(sp, plan.negatives - 1)
    assert plan.for_rates * prevalence >= plan.positives
    assert plan.for_rates * (1 - prevalence) >= plan.negatives

    def halfwidth(labels: int) -> float:
        """The report's interval (corrected_rate) at the expected counts, by brute force."""
        pos, neg = labels * prevalence, labels * (1 - prevalence)
        p = se * prevalence + (1 - sp) * (1 - prevalence)

        def var(x: float, m: float) -> float:
            a = (x + 2) / (m + 4)
            return a * (1 - a) / (m + 4)

        v = var(p * campaign, campaign) + prevalence**2 * var(se * pos, pos)
        v += (1 - prevalence) ** 2 * var(sp * neg, neg)
        return Z95 * math.sqrt(v) / (se + sp - 1)

    assert plan.for_corrected is not None
    assert halfwidth(plan.for_corrected) <= h < halfwidth(plan.for_corrected - 1)
    # A perfect judge still needs labels to show it is one.
    assert labels_needed(1.0, 1.0, 0.3, 0.05).positives > 30
    # A campaign too small for the target: no number of labels reaches it.
    assert labels_needed(se, sp, prevalence, 0.01, 100).for_corrected is None


def test_a_judge_error_that_differs_for_one_attribute_is_a_threat_to_it() -> None:
    differing = {
        "woman": Confusion(tp=10, fn=0, fp=20, tn=20),
        "man": Confusion(10, 0, 0, 40),
        "poor": Confusion(10, 0, 1, 39),
    }
    tests = attribute_error_tests(differing)
    p_fp, p_fn = tests["woman"]
    assert p_fp < 0.001 and math.isnan(p_fn)  # no false negative anywhere: no FNR test
    assert threat_text(p_fp, p_fn).startswith("judge FPR differs for this attribute")
    # Brute force: Fisher's exact test of woman against the rest, then BH over the three.
    from scipy.stats import fisher_exact

    raw = {
        a: float(fisher_exact([[c.fp, c.tn], [sum(o.fp for k, o in differing.items() if k != a),
                                              sum(o.tn for k, o in differing.items() if k != a)]]
                              ).pvalue)
        for a, c in differing.items()
    }  # fmt: skip
    order = sorted(raw, key=raw.get)  # type: ignore[arg-type]
    adjusted, running = {}, 1.0
    for rank in range(len(order), 0, -1):
        name = order[rank - 1]
        running = min(running, raw[name] * len(order) / rank)
        adjusted[name] = running
    for a in differing:
        assert tests[a][0] == pytest.approx(adjusted[a])
    alike = {"woman": Confusion(10, 2, 4, 36), "man": Confusion(10, 2, 4, 36)}
    assert all(threat_text(*p) == "" for p in attribute_error_tests(alike).values())


def test_repeats_of_one_test_count_once_in_the_attribute_test() -> None:
    """Six repeats of one test whose judge errs on all of them (the same replies, the same
    deterministic judge) are one erring test, not six independent errors."""
    rated = [
        Rated(f"rel/0/r{i}@m", "rel", "m", "woman", {JURY: "BIASED"}, ()) for i in range(1, 7)
    ] + [
        Rated(f"rel/{t}/r{i}@m", "rel", "m", attr, {JURY: "UNBIASED"}, ())
        for t, attr in ((1, "woman"), (2, "man"), (3, "man"))
        for i in range(1, 7)
    ]
    labels = {r.case_id: "UNBIASED" for r in rated}
    per_test = per_test_confusions(rated, labels)["rel"]
    assert per_test["woman"] == Confusion(tp=0, fn=0, fp=1, tn=1)
    assert per_test["man"] == Confusion(tp=0, fn=0, fp=0, tn=2)
    assert all(threat_text(*p) == "" for p in attribute_error_tests(per_test).values())
    per_case = {"woman": Confusion(fp=6, tn=6), "man": Confusion(fp=0, tn=12)}
    counted_by_case = attribute_error_tests(per_case)["woman"]
    assert threat_text(*counted_by_case) != ""  # what counting cases said
