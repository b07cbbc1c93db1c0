"""The confidence sequence behind stopping when decided: its coverage checked exactly on
every sequence of a few pairs, by simulation on longer ones, and its decisions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from harness.reporting.sequential import (
    BettingSequence,
    GroupSequence,
    decide,
    family_alpha,
    look_fractions,
    obf_bounds,
    pair_value,
)


def _ever_misses(ds: tuple[int, ...], mean: float, alpha: float, looks: bool) -> bool:
    sequence = BettingSequence(alpha=alpha)
    for d in ds:
        sequence.add(d)
        if looks:
            interval = sequence.interval()
            if interval is None or not interval[0] <= mean <= interval[1]:
                return True
    return False


@pytest.mark.parametrize(
    ("p_up", "p_down", "alpha"),
    [(0.5, 0.5, 0.3), (0.3, 0.1, 0.3), (0.45, 0.05, 0.5), (0.1, 0.1, 0.4)],
)
def test_coverage_over_every_sequence_of_seven_pairs(
    p_up: float, p_down: float, alpha: float
) -> None:
    """Brute force: the exact probability, over all 3^7 sequences of D, that the sequence
    misses the true mean at any of the seven cases stays within alpha (large alphas, so
    the sequence is narrow enough at seven pairs for a miss to be possible at all)."""
    mean = p_up - p_down
    probability = {1: p_up, -1: p_down, 0: 1 - p_up - p_down}
    missed = 0.0
    for ds in itertools.product((-1, 0, 1), repeat=7):
        weight = math.prod(probability[d] for d in ds)
        if weight and _ever_misses(ds, mean, alpha, looks=True):
            missed += weight
    assert missed <= alpha


def test_the_brute_force_can_see_a_miss() -> None:
    """The exact check above is not vacuous: a sequence read at a far too large alpha
    misses an extreme mean on some short sequences."""
    assert _ever_misses((-1, -1, -1, -1, -1, -1, -1), 0.9, 0.9, looks=True)


@pytest.mark.parametrize(("p_up", "p_down"), [(0.15, 0.15), (0.02, 0.02), (0.25, 0.05)])
def test_coverage_by_simulation_at_every_case(p_up: float, p_down: float) -> None:
    """200 paths of 300 pairs, read at every pair: the share that ever miss the true mean
    stays within alpha (0.1) plus three standard errors."""
    rng = np.random.default_rng(11)
    alpha, paths, length = 0.1, 200, 300
    mean = p_up - p_down
    misses = 0
    for _ in range(paths):
        u = rng.random(length)
        ds = np.where(u < p_up, 1, np.where(u < p_up + p_down, -1, 0))
        sequence = BettingSequence(alpha=alpha)
        for d in ds:
            sequence.add(int(d))
            interval = sequence.interval()
            if interval is None or not interval[0] <= mean <= interval[1]:
                misses += 1
                break
    assert misses / paths <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / paths)


def test_it_narrows_to_a_decision() -> None:
    """A 20-point excess is decided an effect, and a rare disagreement with no excess is
    decided no effect of 0.1, within 600 pairs."""
    rng = np.random.default_rng(3)
    for p_up, p_down, wanted in ((0.3, 0.1, "effect"), (0.02, 0.02, "no_effect")):
        sequence = BettingSequence(alpha=0.05)
        reached = "continue"
        for _ in range(600):
            u = rng.random()
            sequence.add(1 if u < p_up else -1 if u < p_up + p_down else 0)
            reached = decide(sequence.interval(), 0.1)
            if reached != "continue":
                break
        assert reached == wanted


def test_decisions_and_pairs() -> None:
    assert decide((0.01, 0.2), 0.05) == "effect"
    assert decide((-0.2, -0.01), 0.05) == "effect"
    assert decide((-0.04, 0.04), 0.05) == "no_effect"
    assert decide((-0.04, 0.06), 0.05) == "continue"
    assert decide(None, 0.05) == "continue"
    assert family_alpha(0.05, 5) == pytest.approx(0.01)
    control = {"control": {"outcome": "HELD"}}
    assert pair_value("VIOLATED", control) == 1
    assert pair_value("HELD", {"control": {"outcome": "VIOLATED"}}) == -1
    assert pair_value("HELD", control) == 0
    assert pair_value("INVALID", control) is None
    assert pair_value("VIOLATED", {}) is None


def test_obrien_fleming_bounds_match_the_published_ones() -> None:
    """Lan-DeMets O'Brien-Fleming spending, two-sided 0.05, four equal looks: the bounds
    every group-sequential package prints (4.3326, 2.9631, 2.3590, 2.0141); one look is
    the fixed test's 1.96."""
    bounds = obf_bounds((0.25, 0.5, 0.75, 1.0), 0.05)
    assert bounds == pytest.approx((4.3326, 2.9631, 2.3590, 2.0141), abs=2e-4)
    assert obf_bounds((1.0,), 0.05) == pytest.approx((1.95996,), abs=1e-4)


def test_obrien_fleming_bounds_spend_alpha_by_simulation() -> None:
    """Unequal looks (a last one shorter, as `look_fractions` gives): Brownian paths cross
    some bound at the rate alpha, within four standard errors."""
    fractions = look_fractions(230, 50)
    assert fractions == (50 / 230, 100 / 230, 150 / 230, 200 / 230, 1.0)
    alpha = 0.05 / 3
    bounds = np.array(obf_bounds(fractions, alpha))
    rng = np.random.default_rng(5)
    paths = 200_000
    steps = np.diff(np.array((0.0, *fractions)))
    walk = np.cumsum(rng.standard_normal((paths, len(fractions))) * np.sqrt(steps), axis=1)
    z = walk / np.sqrt(np.array(fractions))
    rate = float((np.abs(z) > bounds).any(axis=1).mean())
    assert abs(rate - alpha) <= 4 * math.sqrt(alpha * (1 - alpha) / paths)


def test_the_group_sequence_reads_its_repeated_interval() -> None:
    bounds = obf_bounds(look_fractions(400, 100), 0.05)
    sequence = GroupSequence(alpha=0.05, bounds=bounds)
    for i in range(100):
        sequence.add(1 if i % 4 == 0 else 0)  # an excess of 0.25
    low, high = sequence.interval(1) or (0.0, 0.0)
    half = bounds[0] * math.sqrt((0.25 - 0.25**2) / 100)
    assert (low, high) == pytest.approx((0.25 - half, 0.25 + half))
    assert decide((low, high), 0.1) == "effect"
    quiet = GroupSequence(alpha=0.05, bounds=bounds)
    for _ in range(100):
        quiet.add(0)  # no disagreement: the variance floor keeps the interval open
    assert quiet.interval(1) == pytest.approx((-bounds[0] / 100, bounds[0] / 100))
