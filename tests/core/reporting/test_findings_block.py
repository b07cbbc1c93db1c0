"""The findings block read from any table that keeps the contract of
`harness.reporting.findings`: a flagged row becomes a sentence with its direction, effect,
interval, control, adjusted p, size, unit and family; an undecided row is stated with its
minimum detectable effect and the cases that would decide it (checked against brute-force
power); nothing flagged is said plainly; the text block fits 100 columns."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from harness.reporting.findings import (
    FINDINGS_TABLE,
    findings_lines,
    read_findings,
    unit_head,
)
from harness.reporting.power import (
    cases_in_closed_form,
    cases_to_decide,
    minimum_detectable_effect,
)
from harness.reporting.report import corrected, with_findings
from harness.reporting.stats import COMPARISON_COLUMNS, TEST_COLUMNS, compare_groups
from harness.reporting.tables import Table


def term_table(counts: dict[tuple[str, str, str], tuple[int, int]], **extra: Any) -> Table:
    """A family-style table: each (model, gender, term) against the other terms of its model
    and gender, with the report's own group-vs-rest test."""
    rows = []
    for key, g in compare_groups(counts):
        rows.append([*key, "profession", g.n, g.k, g.rate, g.low, g.high, *g.cells()])
    return Table(
        "terms",
        "Terms named as a gender",
        ["model", "gender", "term", "group", "asked", "named", "rate", "ci95_low", "ci95_high",
         *COMPARISON_COLUMNS],
        rows,
        unit="a case",
        claims="attribution",
        **extra,
    )  # fmt: skip


def values(table: Table) -> list[dict[str, Any]]:
    return [dict(zip(table.columns, r, strict=True)) for r in table.rows]


COUNTS = {
    ("m", "male", "engineer"): (18, 20),
    ("m", "male", "clerk"): (1, 60),
    ("m", "male", "baker"): (2, 60),
    ("m", "male", "pilot"): (1, 2),  # named once of two: two cases cannot decide it
    ("m", "female", "nurse"): (1, 40),
    ("m", "female", "cook"): (2, 40),
}


def test_a_flagged_row_is_a_sentence_with_its_direction_effect_and_control() -> None:
    tables = with_findings([term_table(COUNTS)])
    assert tables[0].name == FINDINGS_TABLE
    found = values(tables[0])
    flagged = [r for r in found if r["kind"] == "flagged"]
    # Named male far more often than the other male terms; those are named less than their
    # rest (which holds the engineer): flagged too, and said to be lower.
    higher = [r for r in flagged if r["effect"] > 0]
    assert [(r["labels"], r["towards"]) for r in higher] == [("engineer (profession)", "male")]
    assert all(": lower: " in r["text"] for r in flagged if r["effect"] < 0)
    [f] = higher
    row = next(r for r in values(tables[1]) if r["term"] == "engineer")
    assert row["flagged"] == "yes"
    assert (f["effect"], f["effect_low"], f["effect_high"]) == pytest.approx(
        (row["diff"], row["diff_low"], row["diff_high"]), abs=1e-4
    )
    assert f["adjusted_p"] == row["p_fdr"] and f["n"] == 20 and f["unit"] == "a case"
    [family] = values(tables[-1])  # the table of families: its tests after Tarone's rule
    assert f["family"] == family["family"] == "attribution"
    assert f["family_size"] == family["tests"] < len(COUNTS)
    assert f["control"] == "the other terms of the same model and gender"
    assert f["control_rate"] == pytest.approx(row["rest_rate"], abs=1e-4)
    for part in ("engineer (group profession) -> male", "diff +0.", "p_fdr", "n = 20",
                 "unit: a case", "family attribution"):  # fmt: skip
        assert part in f["text"], part


def test_an_undecided_row_says_what_it_could_detect_and_what_would_decide_it() -> None:
    found = values(with_findings([term_table(COUNTS)])[0])
    undecided = [r for r in found if r["kind"] == "inconclusive"]
    pilot = next(r for r in undecided if r["labels"] == "pilot (profession)")
    assert pilot["towards"] == "male" and pilot["n"] == 2
    # Two cases detect nothing at this family's level; the cases needed reach the effect.
    assert pilot["mde"] is None or pilot["mde"] > pilot["effect"]
    needed, effect = pilot["cases_needed"], pilot["decide_at"]
    assert effect == pytest.approx(max(0.1, pilot["effect_low"]), abs=1e-3)
    rest = 60 + 60 + 20  # the other male terms: the rest the row was tested against
    ratio = rest / 2
    baseline = pilot["control_rate"]

    def mde(n: int) -> float:
        return minimum_detectable_effect(
            n, max(2, round(n * ratio)), pilot["family_size"], baseline=baseline
        ).mde

    assert mde(needed) <= effect + 1e-4 < mde(needed - 1)
    # A row whose interval lies within 10 points is decided, not listed.
    assert all(r["labels"] != "clerk (profession)" for r in undecided)


def test_a_table_without_flags_says_so_with_what_could_have_been_detected() -> None:
    flat = {k: (5, 50) for k in COUNTS}
    found = values(with_findings([term_table(flat)])[0])
    [headline] = [r for r in found if r["kind"] == "headline"]
    assert headline["text"].startswith("Nothing flagged")
    [undetected] = [r for r in found if r["kind"] == "undetected"]
    assert undetected["family"] == "attribution" and undetected["family_size"] == len(flat)
    # At the median size, against the rest of the first such row (cook: the other female
    # term, 50 cases), at the family's level, from the rest's rate.
    expected = minimum_detectable_effect(50, 50, len(flat), baseline=0.1).mde
    assert undetected["mde"] == pytest.approx(expected, abs=1e-3)
    assert "nothing flagged among 6 tests" in undetected["text"]


def test_a_paired_table_states_its_control_and_the_relations_noise_floor() -> None:
    # What a comparison of two logs (or a control) produces: an excess with its interval.
    columns = ["model", "relation", "group", "control", "pairs", "rate", "control_rate",
               "excess", "excess_low", "excess_high", "p_min", *TEST_COLUMNS]  # fmt: skip
    rows = [
        ["m", "r1", "female", "the same prompt again", 400, 0.3, 0.1, 0.2, 0.15, 0.25, 0.0,
         1e-9, None, None],
        ["m", "r1", "male", "the same prompt again", 400, 0.1, 0.1, 0.0, -0.02, 0.02, 0.0,
         1.0, None, None],
    ]  # fmt: skip
    table = Table("paired", "Paired", columns, rows, unit="a case and its control")
    found = values(with_findings([table])[0])
    [f] = [r for r in found if r["kind"] == "flagged"]
    assert f["labels"] == "female" and f["claim"] == "r1" and f["measure"] == "excess"
    assert f["control"] == "its control (the same prompt again)"
    assert (f["effect"], f["effect_low"], f["effect_high"]) == (0.2, 0.15, 0.25)
    assert "rate 0.300 vs 0.100" in f["text"]


def test_hidden_rows_are_read_and_the_text_block_fits_100_columns() -> None:
    keep = [r[2] != "engineer" for r in term_table(COUNTS).rows]  # the finding is hidden
    tables = with_findings([term_table(COUNTS, keep=keep)])
    assert all(r[2] != "engineer" for r in tables[1].rows)
    found = values(tables[0])
    assert "engineer (profession)" in [r["labels"] for r in found if r["kind"] == "flagged"]
    lines = findings_lines(tables[0], 100)
    assert max(len(line) for line in lines) <= 100
    assert any("engineer (profession) -> male" in line and "[+" in line for line in lines)


def _exact_power_z(p1: float, p0: float, n1: int, n0: int, level: float) -> float:
    """Power of the arcsine z-test (the planner's model), by enumerating both binomials."""
    from scipy.stats import binom, norm

    a, b = np.arange(n1 + 1), np.arange(n0 + 1)
    weight = binom.pmf(a, n1, p1)[:, None] * binom.pmf(b, n0, p0)[None, :]
    z = (2 * np.arcsin(np.sqrt(a / n1))[:, None] - 2 * np.arcsin(np.sqrt(b / n0))[None, :]) / (
        math.sqrt(1 / n1 + 1 / n0)
    )
    return float((weight * (np.abs(z) > norm.ppf(1 - level / 2))).sum())


def _exact_power_fisher(p1: float, p0: float, n1: int, n0: int, level: float) -> float:
    """Power of Fisher's exact test (the report's test), by enumeration."""
    from scipy.stats import binom, fisher_exact

    total = 0.0
    for a in range(n1 + 1):
        for b in range(n0 + 1):
            w = float(binom.pmf(a, n1, p1) * binom.pmf(b, n0, p0))
            if w > 1e-12 and fisher_exact([[a, n1 - a], [b, n0 - b]]).pvalue <= level:
                total += w
    return total


@pytest.mark.parametrize(
    ("effect", "n", "rest", "family", "baseline"),
    [(0.5, 3, 9, 1, 0.1), (0.4, 4, 12, 2, 0.2), (0.3, 5, 20, 1, 0.05)],
)
def test_cases_to_decide_reach_the_planned_power_by_brute_force(
    effect: float, n: int, rest: int, family: int, baseline: float
) -> None:
    needed = cases_to_decide(effect, n, rest, family, baseline=baseline)
    assert needed is not None
    ratio = rest / n
    n_rest = max(2, round(needed * ratio))
    level = 0.05 / family
    # The planner's test has 80 % power there (discreteness moves it a few points) and one
    # case fewer does not reach the effect; the report's own test, Fisher's, is close.
    assert _exact_power_z(baseline + effect, baseline, needed, n_rest, level) == pytest.approx(
        0.8, abs=0.08
    )
    assert _exact_power_fisher(baseline + effect, baseline, needed, n_rest, level) == pytest.approx(
        0.8, abs=0.08
    )
    assert minimum_detectable_effect(needed, n_rest, family, baseline=baseline).mde <= effect
    fewer = max(2, round((needed - 1) * ratio))
    assert minimum_detectable_effect(needed - 1, fewer, family, baseline=baseline).mde > effect
    # The closed form the named cells use is the same size, give or take a case.
    closed = cases_in_closed_form(effect, n, rest, family, baseline=baseline)
    assert closed is not None and abs(closed - needed) <= 1


def test_read_findings_on_corrected_tables_is_what_with_findings_states() -> None:
    tables = corrected([term_table(COUNTS)])
    findings = read_findings(tables)
    higher = [f.cell.labels_text() for f in findings.flagged if (f.cell.effect or 0) > 0]
    assert higher == ["engineer (profession)"]
    assert findings.tests == len(COUNTS) and findings.families == 1


@pytest.mark.parametrize(
    ("unit", "head"),
    [
        ("a case (its repeats by majority)", "a case"),
        ("a (case, source term) pair, its repeats' shares compared", "a (case, source term) pair"),
        ("a case: its test and its matched control (a repeat)", "a case"),
        ("rate: a verdict (repeats counted apart); case_rate: a case", "rate: a verdict"),
        ("a question", "a question"),
        ("a (case)", "a (case)"),
    ],
)
def test_a_units_head_drops_its_explanation_outside_parentheses(unit: str, head: str) -> None:
    assert unit_head(unit) == head
