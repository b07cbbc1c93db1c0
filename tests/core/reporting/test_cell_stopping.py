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
    conditional_power,
    decide_cell,
    families_of,
    family_bar,
    look_levels,
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


@pytest.mark.parametrize(("p", "t"), [(0.2, 0.5), (0.02, 0.25), (0.5, 0.75), (0.001, 0.5)])
def test_conditional_power_matches_simulation(p: float, t: float) -> None:
    # B(t) = z sqrt(t), drift B(t) / t; B(1) = B(t) + drift (1 - t) + N(0, 1 - t).
    z = norm.isf(p / 2)
    b = z * math.sqrt(t)
    rng = np.random.default_rng(5)
    end = b + b / t * (1 - t) + rng.normal(0, math.sqrt(1 - t), 400_000)
    simulated = (end > norm.isf(0.025)).mean()
    assert conditional_power(p, t, 0.05) == pytest.approx(simulated, abs=0.004)


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
