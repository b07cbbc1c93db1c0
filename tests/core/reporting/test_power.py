"""The planner's power model against a brute-force simulation of the test it models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.reporting.power import cases_to_detect, minimum_detectable_effect, power_at


def _simulated_power(
    p_group: float, p_rest: float, n_group: int, n_rest: int, level: float, runs: int
) -> float:
    """Share of simulated campaigns in which the arcsine z-test rejects at ``level``."""
    from scipy.stats import norm

    rng = np.random.default_rng(20261127)
    a = rng.binomial(n_group, p_group, runs) / n_group
    b = rng.binomial(n_rest, p_rest, runs) / n_rest
    z = (2 * np.arcsin(np.sqrt(a)) - 2 * np.arcsin(np.sqrt(b))) / math.sqrt(
        1 / n_group + 1 / n_rest
    )
    return float(np.mean(np.abs(z) > norm.ppf(1 - level / 2)))


@pytest.mark.parametrize(
    ("n_group", "n_rest", "family", "baseline"),
    [(60, 60, 1, 0.1), (40, 120, 4, 0.2), (100, 300, 2, 0.05)],
)
def test_mde_is_detected_with_the_planned_power_in_simulation(
    n_group: int, n_rest: int, family: int, baseline: float
) -> None:
    d = minimum_detectable_effect(n_group, n_rest, family, baseline=baseline)
    assert 0 < d.mde < 1 - baseline
    measured = _simulated_power(
        baseline + d.mde, baseline, n_group, n_rest, 0.05 / family, runs=20_000
    )
    assert measured == pytest.approx(0.8, abs=0.03)
    # Half the gap is detected far less often: the figure is not a constant.
    half = _simulated_power(
        baseline + d.mde / 2, baseline, n_group, n_rest, 0.05 / family, runs=20_000
    )
    assert half < 0.5
    assert power_at(d.mde, n_group, n_rest, family, baseline=baseline) == pytest.approx(
        0.8, abs=1e-4
    )


def test_the_family_size_raises_the_mde() -> None:
    one = minimum_detectable_effect(100, 100, 1).mde
    ten = minimum_detectable_effect(100, 100, 10).mde
    assert ten > one
    assert minimum_detectable_effect(1, 100).mde == math.inf


@pytest.mark.parametrize(("target", "groups"), [(0.1, 2), (0.2, 5), (0.05, 3)])
def test_cases_to_detect_is_the_fewest_that_reach_the_target(target: float, groups: int) -> None:
    needed = cases_to_detect(target, groups)
    assert needed is not None

    def mde(cases: int) -> float:
        return minimum_detectable_effect(cases // groups, cases - cases // groups, groups).mde

    assert mde(needed) <= target < mde(needed - 1)


def _bh_power(gap: float, n: int, family: int, gaps: int, baseline: float, runs: int) -> float:
    """Share of real gaps Benjamini-Hochberg (alpha 0.05) flags when ``gaps`` of ``family``
    groups (n cases each, each against the rest: the other groups' cases, as the report
    compares them) are ``gap`` above the baseline, the arcsine z-test per group: brute
    force."""
    from scipy.stats import norm
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(20261128)
    rates = np.array([baseline + gap] * gaps + [baseline] * (family - gaps))
    found = 0
    for _ in range(runs):
        k = rng.binomial(n, rates)
        a = k / n
        b = (k.sum() - k) / (n * (family - 1))
        z = (2 * np.arcsin(np.sqrt(a)) - 2 * np.arcsin(np.sqrt(b))) / math.sqrt(
            1 / n + 1 / (n * (family - 1))
        )
        p = 2 * norm.sf(np.abs(z))
        found += int(multipletests(p, alpha=0.05, method="fdr_bh")[0][:gaps].sum())
    return found / (runs * gaps)


@pytest.mark.parametrize(
    ("gap", "n", "family", "gaps"),
    [
        (0.15, 80, 20, 8),
        (0.2, 50, 23, 10),
        (0.1, 200, 50, 5),
        (0.15, 60, 10, 3),
        (0.1, 150, 100, 20),
    ],
)
def test_many_real_gaps_are_found_at_bhs_lenient_level(
    gap: float, n: int, family: int, gaps: int
) -> None:
    """With several real gaps in a family, BH flags each when its p is below alpha x (1 +
    the others' rejections) / family, and each group's rest holds the other gaps (the
    groups without one sit below it and are rejected too): the model given the number of
    gaps matches brute force of the report's group-vs-rest design within 0.03 (it was
    within 0.01 on these five; the expected-rejections rule it replaced was 0.1 low on
    (0.15, 60, 10, 3), and without the rest holding the gaps 0.09-0.24 high)."""
    measured = _bh_power(gap, n, family, gaps, 0.1, runs=2000)
    rest = n * (family - 1)
    many = power_at(gap, n, rest, family, baseline=0.1, gaps=gaps)
    assert measured == pytest.approx(many, abs=0.03)
    d = minimum_detectable_effect(n, rest, family, baseline=0.1, gaps=gaps)
    assert power_at(d.mde, n, rest, family, baseline=0.1, gaps=gaps) == pytest.approx(0.8, abs=0.02)


def test_one_gap_keeps_the_alpha_over_family_level() -> None:
    from harness.reporting.power import bh_level

    assert bh_level(20, 1, 0.8) == pytest.approx(0.05 / 20)
    assert bh_level(20, 5, 0.8) > 0.05 / 20
    assert bh_level(20, 20, 0.99) <= 0.05


def _family_power(groups: int, n: int, gaps: int, gap: float, baseline: float, runs: int) -> float:
    """Brute force of a relation's family as the report builds it: each group's cases
    (one pair each: the test and its matched control) against the other groups' cases
    (`compare_groups`), the control's excess rows per group and for the relation
    (`paired_excess`, McNemar's smallest p for Tarone), BH after Tarone's rule over all
    of them; the share of real gaps' group rows flagged."""
    import random

    from harness.reporting.excess import paired_excess
    from harness.reporting.stats import compare_groups, fdr_adjust_tarone, mcnemar_min_p

    rng = random.Random(20261128)
    found = 0
    for _ in range(runs):
        counts: dict[tuple[str, ...], tuple[int, int]] = {}
        cells = []
        for g in range(groups):
            rate = baseline + gap if g < gaps else baseline
            cell = [0, 0, 0, 0]  # both, test only, control only, neither
            for _ in range(n):
                test, control = rng.random() < rate, rng.random() < baseline
                cell[0 if test and control else 1 if test else 2 if control else 3] += 1
            counts[(f"{g:02d}",)] = (cell[0] + cell[1], n)
            cells.append(cell)
        rows = compare_groups(counts)
        ps = [c.p for _, c in rows]
        mins = [c.p_min for _, c in rows]
        for cell in [*cells, [sum(c[i] for c in cells) for i in range(4)]]:
            ps.append(paired_excess(*cell).p)
            mins.append(mcnemar_min_p(cell[1], cell[2]))
        flagged = fdr_adjust_tarone(ps, mins).flagged
        found += sum(flagged[:gaps])
    return found / (runs * gaps)


@pytest.mark.parametrize(
    ("groups", "n", "gaps", "gap"), [(6, 60, 2, 0.15), (10, 40, 3, 0.2), (8, 80, 1, 0.12)]
)
def test_the_controls_excess_rows_share_the_family(
    groups: int, n: int, gaps: int, gap: float
) -> None:
    """A relation that runs its matched control corrects the control's excess rows (one
    per group, one for the relation) in the same family as its group rows: the model
    (`power_at` with ``control_pairs``) against the report's own tests, within 0.05 (300
    runs); the family without them is a different figure."""
    measured = _family_power(groups, n, gaps, gap, 0.1, runs=300)
    model = power_at(gap, n, n * (groups - 1), groups, baseline=0.1, gaps=gaps, control_pairs=n)
    assert measured == pytest.approx(model, abs=0.05)
    assert 0.15 < measured < 0.9
    without = power_at(gap, n, n * (groups - 1), groups, baseline=0.1, gaps=gaps)
    assert abs(without - model) > 0.02


def test_paired_power_is_the_excess_rows_exact_power() -> None:
    from harness.reporting.excess import paired_power
    from harness.reporting.power import paired_power_at

    for test_only, control_only, pairs in [(0.3, 0.05, 40), (0.2, 0.1, 150)]:
        exact = paired_power(test_only, control_only, pairs, 0.01)
        assert paired_power_at(test_only, control_only, pairs)(0.01 - 1e-9) == pytest.approx(exact)


def test_bh_power_of_one_real_test_is_its_power_at_alpha_over_the_family() -> None:
    from harness.reporting.power import bh_power

    (one,) = bh_power([(1, lambda level: level * 10)], 20)
    assert one == pytest.approx(0.05 / 20 * 10)
    # A second real test found surely lets the first be flagged at two ranks' level.
    first, _ = bh_power([(1, lambda level: level * 10), (1, lambda level: 1.0)], 20)
    assert first == pytest.approx(2 * 0.05 / 20 * 10)
