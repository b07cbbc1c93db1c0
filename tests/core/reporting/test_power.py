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
    groups (n cases each, each against its own rest of n cases) are ``gap`` above the
    baseline, the arcsine z-test per group: brute force."""
    from scipy.stats import norm
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(20261128)
    rates = np.array([baseline + gap] * gaps + [baseline] * (family - gaps))
    found = 0
    for _ in range(runs):
        a = rng.binomial(n, rates) / n
        b = rng.binomial(n, baseline, family) / n
        z = (2 * np.arcsin(np.sqrt(a)) - 2 * np.arcsin(np.sqrt(b))) / math.sqrt(2 / n)
        p = 2 * norm.sf(np.abs(z))
        found += int(multipletests(p, alpha=0.05, method="fdr_bh")[0][:gaps].sum())
    return found / (runs * gaps)


@pytest.mark.parametrize(
    ("gap", "n", "family", "gaps"), [(0.15, 80, 20, 8), (0.2, 50, 23, 10), (0.1, 200, 50, 5)]
)
def test_many_real_gaps_are_found_at_bhs_lenient_level(
    gap: float, n: int, family: int, gaps: int
) -> None:
    """With several real gaps in a family, BH finds each more often than at alpha / family
    (the one-gap model understates it); the model given the number of gaps matches brute
    force."""
    measured = _bh_power(gap, n, family, gaps, 0.1, runs=2000)
    one = power_at(gap, n, n, family, baseline=0.1)
    many = power_at(gap, n, n, family, baseline=0.1, gaps=gaps)
    assert measured == pytest.approx(many, abs=0.05)
    assert one < measured - 0.08
    d = minimum_detectable_effect(n, n, family, baseline=0.1, gaps=gaps)
    assert power_at(d.mde, n, n, family, baseline=0.1, gaps=gaps) == pytest.approx(0.8, abs=0.02)


def test_one_gap_keeps_the_alpha_over_family_level() -> None:
    from harness.reporting.power import bh_level

    assert bh_level(20, 1, 0.8) == pytest.approx(0.05 / 20)
    assert bh_level(20, 5, 0.8) > 0.05 / 20
    assert bh_level(20, 20, 0.99) <= 0.05
