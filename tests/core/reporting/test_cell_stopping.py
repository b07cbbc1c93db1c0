"""Cell-by-cell decisions of stopping when decided: the looks' levels spend alpha (checked
by simulation of the score process), the conditional power against a simulation, and which
relations a look lets stop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from harness.reporting.cell_stopping import (
    Cell,
    cells_of_report,
    cheapest_stops,
    conditional_power,
    decide_cell,
    earliest_look,
    families_of,
    family_bar,
    look_levels,
    lost_at,
    predictive_power,
    take_look,
)


def test_one_look_is_the_fixed_level() -> None:
    assert look_levels((1.0,), 0.05) == pytest.approx((0.05,), abs=1e-9)


def test_four_equal_looks_use_the_published_bounds() -> None:
    levels = look_levels((0.25, 0.5, 0.75, 1.0), 0.05)
    published = (4.3326, 2.9631, 2.3590, 2.0141)
    assert levels == pytest.approx(tuple(2 * norm.sf(c) for c in published), rel=2e-3)
    assert list(levels) == sorted(levels)  # the bar is strictest first


def test_significant_at_any_look_spends_alpha_under_the_null() -> None:
    # A cell's z at each look of a Brownian score process with no drift: the chance that
    # some look reads it significant is alpha (two-sided), not more.
    fractions = (0.2, 0.4, 0.6, 0.8, 1.0)
    levels = look_levels(fractions, 0.05)
    rng = np.random.default_rng(11)
    paths = 200_000
    steps = rng.normal(0, np.sqrt(np.diff((0.0, *fractions))), size=(paths, len(fractions)))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    p = 2 * norm.sf(np.abs(z))
    ever = (p <= np.array(levels)).any(axis=1).mean()
    assert ever == pytest.approx(0.05, abs=0.003)
    # Reading every look at the fixed level instead spends far more: the check can fail.
    assert (p <= 0.05).any(axis=1).mean() > 0.1


def test_pocock_levels_spend_alpha_as_its_function_says() -> None:
    # Brute force: Brownian paths with no drift; the share that has crossed by each look is
    # Lan-DeMets' Pocock-type spending alpha ln(1 + (e - 1) t), and the levels are nearly
    # equal (unlike O'Brien-Fleming's).
    fractions = (0.25, 0.5, 0.75, 1.0)
    levels = look_levels(fractions, 0.05, "pocock")
    assert max(levels) / min(levels) < 1.1
    assert levels[0] > 100 * look_levels(fractions, 0.05)[0]
    rng = np.random.default_rng(17)
    steps = rng.normal(0, np.sqrt(np.diff((0.0, *fractions))), size=(300_000, 4))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    crossed = np.logical_or.accumulate(2 * norm.sf(np.abs(z)) <= np.array(levels), axis=1)
    for j, t in enumerate(fractions):
        assert crossed[:, j].mean() == pytest.approx(
            0.05 * math.log(1 + (math.e - 1) * t), abs=0.002
        )


@pytest.mark.parametrize(("p", "t"), [(0.2, 0.5), (0.02, 0.25), (0.5, 0.75), (0.001, 0.5)])
def test_conditional_power_matches_simulation(p: float, t: float) -> None:
    # B(t) = z sqrt(t), drift B(t) / t; B(1) = B(t) + drift (1 - t) + N(0, 1 - t).
    z = norm.isf(p / 2)
    b = z * math.sqrt(t)
    rng = np.random.default_rng(5)
    end = b + b / t * (1 - t) + rng.normal(0, math.sqrt(1 - t), 400_000)
    simulated = (end > norm.isf(0.025)).mean()
    assert conditional_power(p, t, 0.05) == pytest.approx(simulated, abs=0.004)


@pytest.mark.parametrize(("p", "t"), [(0.2, 0.5), (0.02, 0.25), (0.5, 0.75), (0.001, 0.5)])
def test_predictive_power_matches_simulation(p: float, t: float) -> None:
    # Brute force: the drift drawn from its flat-prior posterior N(B(t) / t, 1 / t), then
    # B(1) = B(t) + drift (1 - t) + N(0, 1 - t).
    b = norm.isf(p / 2) * math.sqrt(t)
    rng = np.random.default_rng(9)
    drift = rng.normal(b / t, math.sqrt(1 / t), 400_000)
    end = b + drift * (1 - t) + rng.normal(0, math.sqrt(1 - t), 400_000)
    assert predictive_power(p, t, 0.05) == pytest.approx((end > norm.isf(0.025)).mean(), abs=0.004)
    # Less sure of the effect than the trend: closer to a coin toss than conditional power.
    assert abs(predictive_power(p, t, 0.05) - 0.5) <= abs(conditional_power(p, t, 0.05) - 0.5)


def test_conditional_power_at_the_end_is_the_test() -> None:
    assert conditional_power(0.04, 1.0, 0.05) == 1.0
    assert conditional_power(0.06, 1.0, 0.05) == 0.0


def test_decisions() -> None:
    level = 0.005
    assert decide_cell(Cell("f", "t", "s", 1e-6, 1e-4), 0.5, level, 0.05) == "significant"
    # Significant at the fixed level but not at the look's stricter one: not yet.
    assert decide_cell(Cell("f", "t", "s", 1e-3, 0.01), 0.5, level, 0.05) == "open"
    assert decide_cell(Cell("f", "t", "s", 0.9, 1.0), 0.5, level, 0.05) == "futile"
    assert decide_cell(Cell("f", "t", "s", None, None), 0.5, level, 0.05) == "futile"
    assert decide_cell(Cell("f", "t", "s", math.nan, None), 0.5, level, 0.05) == "futile"


RELATIONS = ("metaquerier.mr1", "metaquerier.mr2", "metafair.mr8")


def test_families_of_a_relation() -> None:
    families = [
        "metaquerier.mr1",
        "metaquerier.mr1 (refused)",
        "metaquerier.mr2",
        "metaquerier.attribution",
        "metafair.mr8",
    ]
    assert families_of("metaquerier.mr1", families, RELATIONS) == [
        "metaquerier.attribution",
        "metaquerier.mr1",
        "metaquerier.mr1 (refused)",
    ]
    assert families_of("metafair.mr8", families, RELATIONS) == ["metafair.mr8"]
    assert families_of("langbite", families, (*RELATIONS, "langbite")) == []


def test_a_look_stops_only_relations_whose_families_are_decided() -> None:
    cells = [
        Cell("metaquerier.mr1", "t", "a", 1e-8, 1e-7),  # significant
        Cell("metaquerier.mr2", "t", "b", 0.9, 1.0),  # futile
        Cell("metaquerier.attribution", "t", "c", 0.01, 0.2),  # open: feeds mr1 and mr2
        Cell("metafair.mr8", "t", "d", 0.8, 1.0),  # futile
    ]
    look = take_look(cells, RELATIONS, RELATIONS, 0.5, 0.003, 0.05)
    assert look.stops == ("metafair.mr8",)
    assert look.decisions["metaquerier.attribution"]["open"] == 1
    decided = [*cells[:2], Cell("metaquerier.attribution", "t", "c", 0.9, 1.0), cells[3]]
    assert take_look(decided, RELATIONS, RELATIONS, 0.5, 0.003, 0.05).stops == RELATIONS
    # A relation none of whose tests ran yet goes on; a stopped one is not listed again.
    assert take_look(decided, ("langbite",), (*RELATIONS, "langbite"), 0.5, 0.003, 0.05).stops == ()
    assert take_look(decided, RELATIONS[:1], RELATIONS, 0.5, 0.003, 0.05).stops == RELATIONS[:1]


def test_cells_of_a_json_report() -> None:
    report = {
        "findings": {"rows": [{"kind": "flagged"}]},
        "violation_rates": {"rows": [{"model": "m", "rate": 0.1}]},
        "control_excess": {
            "rows": [
                {
                    "relation": "metafair.mr8",
                    "group": "woman",
                    "p": 0.001,
                    "p_fdr": 0.004,
                    "hypothesis_family": {"name": "metafair.mr8"},
                },
                {"relation": "x", "p": None, "p_fdr": None, "hypothesis_family": {"name": "x"}},
            ]
        },
        "statistical_tests": {"rows": [{"family": "metafair.mr8"}]},
    }
    assert cells_of_report(report) == [
        Cell("metafair.mr8", "control_excess", "relation metafair.mr8, group woman", 0.001, 0.004),
        Cell("x", "control_excess", "relation x", None, None),
    ]


def test_family_bar_is_what_benjamini_hochberg_would_ask() -> None:
    cells = [Cell("f", "t", str(i), p, None) for i, p in enumerate((0.001, 0.03, 0.2, 0.6))]
    cells.append(Cell("f", "t", "none", None, None))  # not tested: not counted
    # Two of four below alpha: a third flag would need p <= alpha x 3 / 4.
    assert family_bar(cells, 0.05) == pytest.approx(0.0375)
    assert family_bar(cells[:1], 0.05) == pytest.approx(0.05)
    # A cell that may reach alpha but hardly the family's bar is futile only under "family".
    weak = [*cells, *(Cell("f", "t", f"n{i}", 0.9, 1.0) for i in range(40))]
    bar = family_bar(weak, 0.05)
    middle = Cell("f", "t", "m", 0.3, 1.0)
    assert conditional_power(0.3, 0.5, 0.05) >= 0.1 > conditional_power(0.3, 0.5, bar)
    assert decide_cell(middle, 0.5, 0.003, 0.05) == "open"
    assert decide_cell(middle, 0.5, 0.003, 0.05, bar) == "futile"
    looks = {
        rule: take_look([*weak, middle], ("r",), ("r",), 0.5, 0.003, 0.05, rule)
        for rule in ("alpha", "family")
    }
    assert looks["alpha"].decisions["f"]["open"] > looks["family"].decisions["f"]["open"]
    # Predictive power of reaching the bar is nearer a coin toss: the same cell stays open.
    nearer = Cell("f", "t", "m", 0.2, 1.0)
    assert predictive_power(0.2, 0.5, bar) >= 0.1 > conditional_power(0.2, 0.5, bar)
    assert decide_cell(nearer, 0.5, 0.003, 0.05, bar, predictive=True) == "open"
    assert decide_cell(nearer, 0.5, 0.003, 0.05, bar) == "futile"
    on = {
        rule: take_look([*weak, nearer], ("r",), ("r",), 0.5, 0.003, 0.05, rule).decisions["f"]
        for rule in ("family", "predictive")
    }
    assert on["predictive"]["open"] > on["family"]["open"]


def test_lost_at_counts_findings_not_significant_at_each_look() -> None:
    ps: list[dict[str, float | None]] = [
        {"a": 0.01, "b": None},
        {"a": 0.001, "b": 0.035},
        {"a": 0.0, "b": 0.04},
    ]
    assert lost_at(ps, ["a", "b", "c"], [0.005, 0.03, 0.044]) == [3, 2, 1]


def _earliest_by_brute_force(
    ps: list[dict[str, float]], findings: list[str], levels: list[float], losses: int, stay: bool
) -> int:
    def fine(j: int) -> bool:
        return len([f for f in findings if f not in ps[j] or ps[j][f] > levels[j]]) <= losses

    last = len(ps) - 1
    candidates = [
        j for j in range(last) if fine(j) and (not stay or all(map(fine, range(j, last))))
    ]
    return min(candidates, default=last)


@pytest.mark.parametrize("seed", range(30))
def test_earliest_look_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    looks, findings = int(rng.integers(1, 6)), [f"f{i}" for i in range(int(rng.integers(0, 5)))]
    levels = sorted(rng.uniform(0, 0.05, looks).tolist())
    ps = [
        {f: float(rng.uniform(0, 0.06)) for f in findings if rng.uniform() < 0.8}
        for _ in range(looks)
    ]
    lost = lost_at(ps, findings, levels)
    for losses in (0, 1):
        for stay in (False, True):
            expected = _earliest_by_brute_force(ps, findings, levels, losses, stay)
            assert earliest_look(lost, losses, stay) == expected


@pytest.mark.parametrize("seed", range(30))
def test_cheapest_stops_against_every_choice(seed: int) -> None:
    import itertools

    rng = np.random.default_rng(100 + seed)
    groups = []
    for _ in range(int(rng.integers(1, 4))):
        looks = int(rng.integers(1, 5))
        calls = np.cumsum(rng.integers(1, 50, looks)).tolist()
        lost = [*sorted(rng.integers(0, 4, looks - 1).tolist(), reverse=True), 0]
        groups.append((calls, lost))
    for losses in range(4):
        best = min(
            (sum(g[0][j] for g, j in zip(groups, choice, strict=True)), choice)
            for choice in itertools.product(*(range(len(g[0])) for g in groups))
            if sum(g[1][j] for g, j in zip(groups, choice, strict=True)) <= losses
        )
        looks_chosen, cost = cheapest_stops(groups, losses)
        assert cost == best[0]
        assert sum(g[1][j] for g, j in zip(groups, looks_chosen, strict=True)) <= losses
        assert sum(g[0][j] for g, j in zip(groups, looks_chosen, strict=True)) == cost


def test_cheapest_stops_with_no_choice_fails() -> None:
    with pytest.raises(ValueError, match="no choice"):
        cheapest_stops([([10.0], [2])], 1)
