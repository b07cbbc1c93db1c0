"""Stopping when decided, read cell by cell: at an interim look, which of a report's test
rows (its cells: a group or term of a relation's tables) are decided, and so which
relations may stop drawing cases.

A look is taken at an information fraction ``t`` of a relation's planned cases (the first
``t x planned`` cases in the relation's own order, as `harness.running.stopping` counts
them) and reads the report built on the cases closed so far, with the report's own tests
and its own correction (Benjamini-Hochberg within the relation's hypothesis family). A
cell is

- ``significant`` when its corrected p-value is at most the nominal level of the look's
  O'Brien-Fleming bound (Lan-DeMets spending of alpha over the planned looks,
  `harness.reporting.sequential.obf_bounds`): the alpha the family may spend by then, so
  a cell flagged early has crossed a stricter bar than the fixed plan's;
- ``futile`` when, continuing at the trend it shows, it would reach even the fixed plan's
  least strict bar (its raw p-value at alpha) with conditional power below
  ``FUTILITY_POWER`` (Lan, Simon and Halperin's stochastic curtailment, on the B-value
  ``B(t) = z sqrt(t)``). Futility never flags anything, so it cannot raise the false
  positive rate (a non-binding rule); it can only lose a finding that would have come late;
- ``open`` otherwise.

A family is decided when none of its cells is open; a relation stops when every family it
feeds is decided (`families_of`). Everything here is a pure function of the report's rows,
so the same closed cases give the same decisions in a run, a resume and a replay.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.reporting.sequential import spending_bounds

FUTILITY_POWER = 0.10  # a cell whose conditional power under its own trend is below: futile
CellDecision = Literal["significant", "futile", "open"]


@dataclass(frozen=True)
class Cell:
    """One test row of a report at a look: its family, what it is about, and its p-values."""

    family: str
    table: str
    subject: str
    p: float | None  # the raw p-value (None: the test did not run)
    p_fdr: float | None  # corrected within the family


def look_levels(
    fractions: Sequence[float], alpha: float, spending: str = "obf"
) -> tuple[float, ...]:
    """The nominal two-sided level of each look's bound: O'Brien-Fleming-type spending
    (``"obf"``) or Pocock-type (``"pocock"``, `harness.reporting.sequential.SPENDING`)."""
    from scipy.stats import norm

    bounds = spending_bounds(tuple(fractions), alpha, spending)
    return tuple(float(2 * norm.sf(c)) for c in bounds)


def conditional_power(p: float, t: float, alpha: float) -> float:
    """The chance that a test read at information fraction ``t`` with two-sided p-value
    ``p`` ends below ``alpha`` at the full size, its effect continuing at the trend it
    shows (the B-value's drift estimated by B(t) / t)."""
    from scipy.stats import norm

    if t >= 1:
        return 1.0 if p <= alpha else 0.0
    z = float(norm.isf(max(p, 1e-300) / 2))
    needed = float(norm.isf(alpha / 2))
    return float(norm.sf((needed - z / math.sqrt(t)) / math.sqrt(1 - t)))


def predictive_power(p: float, t: float, alpha: float) -> float:
    """`conditional_power` averaged over what the data so far say of the effect (a flat
    prior: the drift's posterior is normal about B(t) / t with variance 1 / t), so
    B(1) given B(t) is normal with mean B(t) / t and variance (1 - t) / t."""
    from scipy.stats import norm

    if t >= 1:
        return 1.0 if p <= alpha else 0.0
    z = float(norm.isf(max(p, 1e-300) / 2))
    needed = float(norm.isf(alpha / 2))
    return float(norm.sf((needed - z / math.sqrt(t)) / math.sqrt((1 - t) / t)))


def decide_cell(
    cell: Cell,
    t: float,
    level: float,
    alpha: float,
    bar: float | None = None,
    predictive: bool = False,
) -> CellDecision:
    """What a look at fraction ``t`` (nominal level ``level``) reads for one cell; ``bar``:
    the raw p-value it must reach at the full plan to be flagged (default ``alpha``, the
    least strict the family's correction can ask); ``predictive``: futility read on
    `predictive_power` instead of `conditional_power`."""
    if cell.p_fdr is not None and not math.isnan(cell.p_fdr) and cell.p_fdr <= level:
        return "significant"
    if cell.p is None or math.isnan(cell.p):
        return "futile"  # no test could run on its data yet: nothing to wait for at this look
    power = predictive_power if predictive else conditional_power
    if power(cell.p, t, alpha if bar is None else bar) < FUTILITY_POWER:
        return "futile"
    return "open"


def cells_of_report(report: Mapping[str, Any]) -> list[Cell]:
    """The test rows of a JSON report (`harness.reporting.report.to_json`), each with its
    hypothesis family."""
    cells = []
    for name, table in report.items():
        if not isinstance(table, dict) or name in ("findings", "statistical_tests"):
            continue
        for row in table.get("rows", ()):
            family = row.get("hypothesis_family") if isinstance(row, dict) else None
            if not isinstance(family, dict) or "p_fdr" not in row:
                continue
            subject = ", ".join(
                f"{k} {row[k]}" for k in ("relation", "gender", "term", "group") if row.get(k)
            )
            cells.append(
                Cell(str(family["name"]), name, subject, _number(row.get("p")),
                     _number(row.get("p_fdr")))
            )  # fmt: skip
    return cells


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def families_of(relation: str, families: Iterable[str], relations: Iterable[str]) -> list[str]:
    """The families a relation feeds: those named after it (its aspects included), and the
    families named after its package that are no relation's own (a claims family, such as
    ``metaquerier.attribution``, reads every relation of the package)."""
    names = {r for r in relations}
    package = relation.partition(".")[0]
    found = []
    for family in sorted(set(families)):
        base = family.partition(" (")[0]
        if base == relation or (base not in names and base.partition(".")[0] == package):
            found.append(family)
    return found


@dataclass(frozen=True)
class Look:
    """One look: each family's cells by decision, and the relations it lets stop."""

    fraction: float
    level: float
    decisions: dict[str, dict[CellDecision, int]]
    stops: tuple[str, ...]


def family_bar(cells: Sequence[Cell], alpha: float) -> float:
    """The raw p-value a cell of this family must reach if Benjamini-Hochberg flags every
    cell now below alpha and it besides: alpha x (those + 1) / the family's tests."""
    tested = [c.p for c in cells if c.p is not None and not math.isnan(c.p)]
    below = sum(p <= alpha for p in tested)
    return alpha * min(len(tested), below + 1) / max(1, len(tested))


def take_look(
    cells: Sequence[Cell],
    drawing: Sequence[str],
    relations: Sequence[str],
    t: float,
    level: float,
    alpha: float,
    futility: str = "alpha",
) -> Look:
    """The decisions of one look: which of ``drawing`` (the relations still drawing cases,
    of the campaign's ``relations``) may stop. ``futility``: "alpha" (a cell is futile
    when it is unlikely to reach alpha), "family" (unlikely to reach `family_bar`) or
    "predictive" (`predictive_power` of reaching `family_bar` below the same 10 %)."""
    by_family: dict[str, list[Cell]] = {}
    for cell in cells:
        by_family.setdefault(cell.family, []).append(cell)
    decisions: dict[str, dict[CellDecision, int]] = {}
    for family, members in by_family.items():
        bar = family_bar(members, alpha) if futility in ("family", "predictive") else None
        counts = decisions.setdefault(family, {"significant": 0, "futile": 0, "open": 0})
        for cell in members:
            counts[decide_cell(cell, t, level, alpha, bar, futility == "predictive")] += 1
    stops = []
    for r in drawing:
        fed = families_of(r, decisions, relations)
        # A relation none of whose tests has run yet has nothing decided: it goes on.
        if fed and all(decisions[f]["open"] == 0 for f in fed):
            stops.append(r)
    return Look(t, level, decisions, tuple(stops))


def lost_at(
    p_by_look: Sequence[Mapping[str, float | None]],
    findings: Iterable[str],
    levels: Sequence[float],
) -> list[int]:
    """At each look, how many of ``findings`` (keys of cells) are not significant at that
    look's level: corrected p-value missing (not tested or not listed) or above it."""
    wanted = list(findings)
    lost = []
    for ps, level in zip(p_by_look, levels, strict=True):
        lost.append(sum(1 for f in wanted if (p := ps.get(f)) is None or p > level))
    return lost


def earliest_look(lost: Sequence[int], losses: int = 0, stay: bool = False) -> int:
    """The bound an oracle reaches: the index of the earliest look at which at most
    ``losses`` of the findings are not yet significant (``stay``: nor at any later look), as
    a rule that knew which cells hold a finding and never waited on any other could stop;
    the last look (the full plan) when no earlier one does."""
    last = len(lost) - 1
    for j in range(last):
        if lost[j] <= losses and (not stay or all(n <= losses for n in lost[j:last])):
            return j
    return last


def cheapest_stops(
    groups: Sequence[tuple[Sequence[float], Sequence[int]]], losses: int
) -> tuple[tuple[int, ...], float]:
    """Each group of relations (its calls and its findings lost at each look) stopped at
    one look, the choice that spends the fewest calls in all while losing at most
    ``losses`` findings in all: (the look of each group, the calls). Dynamic programming
    over the groups, on the losses spent so far."""
    best: dict[int, tuple[float, tuple[int, ...]]] = {0: (0.0, ())}
    for calls, lost in groups:
        step: dict[int, tuple[float, tuple[int, ...]]] = {}
        for spent, (cost, looks) in best.items():
            for j, (c, n) in enumerate(zip(calls, lost, strict=True)):
                total = spent + n
                if total > losses:
                    continue
                if total not in step or cost + c < step[total][0]:
                    step[total] = (cost + c, (*looks, j))
        best = step
    if not best:
        raise ValueError("no choice of looks loses at most the losses allowed")
    cost, looks = min(best.values())
    return looks, cost
