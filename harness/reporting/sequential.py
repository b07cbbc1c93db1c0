"""Stopping when decided: an anytime-valid confidence sequence for a relation's excess over
its matched control, read at interim looks.

Each case of a relation that runs a control gives a pair (test violated?, control violated?)
(`harness.reporting.excess`), so a value ``D = test - control`` in {-1, 0, 1}; the relation's
excess is the mean of D. The sequence is the betting confidence sequence of Waudby-Smith and
Ramdas ("Estimating means of bounded random variables by betting", JRSS-B 2024): D is mapped
to Y = (D + 1) / 2 in [0, 1], and for every candidate mean m two gamblers bet on Y - m, one
on each side, with the predictable plug-in stakes of that paper (their running variance
estimate, so a relation whose test and control rarely disagree narrows fast). Their hedged
capital is a nonnegative martingale at the true mean, so by Ville's inequality it ever
reaches 1 / alpha with probability at most alpha: the set of m whose capital stays below is
a confidence sequence valid at every case, whatever the number or timing of the looks. The
sequence kept is the running intersection (valid too).

Means are computed on a fixed grid of candidate means (`GRID` points inside (0, 1)); the
capital of each is a product over the pairs in the relation's own case order, so the same
verdicts give the same sequence in a run, a resume and a replay.

A look reads the sequence: ``effect`` when it excludes 0, ``no_effect`` when it lies inside
(-smallest effect, +smallest effect), else ``continue``. Each relation and model's sequence
runs at alpha divided by the number of relation-model pairs of the campaign (Bonferroni),
so the chance that any of them flags an effect where there is none stays within alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

GRID = 2000  # candidate means of Y; the sequence's resolution in D is 2 / GRID
_TRUNCATE = 0.5  # the largest share of capital a gambler stakes (the paper's c)
METHOD_NAME = "betting confidence sequence (Waudby-Smith & Ramdas), Bonferroni over relations"

Decision = Literal["continue", "effect", "no_effect"]


def pair_value(outcome: str, evidence: dict[str, Any]) -> int | None:
    """D for one verdict: (test violated) - (control violated), or None when the case has no
    control or either outcome is not valid (INVALID, REFUSED)."""
    control = evidence.get("control")
    if not isinstance(control, dict):
        return None
    other = control.get("outcome")
    valid = ("VIOLATED", "HELD")
    if outcome not in valid or other not in valid:
        return None
    return int(outcome == "VIOLATED") - int(other == "VIOLATED")


@dataclass
class BettingSequence:
    """The confidence sequence of one relation and model, fed pair by pair in case order."""

    alpha: float
    pairs: int = 0
    total: float = 0.0  # sum of D
    _mean: float = 0.5  # the paper's mu-hat (of Y), with its prior 1/2
    _var: float = 0.25  # the paper's sigma-hat squared, with its prior 1/4
    _sum_y: float = 0.0
    _sum_sq: float = 0.0
    low: float = -1.0  # the running intersection, in D
    high: float = 1.0
    _grid: npt.NDArray[np.float64] = field(
        default_factory=lambda: (np.arange(GRID, dtype=np.float64) + 0.5) / GRID
    )
    _log_up: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(GRID))
    _log_down: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(GRID))

    def add(self, d: int) -> None:
        """One more pair's D (in the relation's case order)."""
        y = (d + 1) / 2.0
        t = self.pairs + 1
        # The stake is predictable: it uses the estimates of the pairs before this one.
        stake = math.sqrt(2 * math.log(2 / self.alpha) / (self._var * t * math.log(1 + t)))
        grid = self._grid
        up = np.minimum(stake, _TRUNCATE / grid)
        down = np.minimum(stake, _TRUNCATE / (1 - grid))
        self._log_up += np.log1p(up * (y - grid))
        self._log_down += np.log1p(-down * (y - grid))
        self.pairs = t
        self.total += d
        self._sum_y += y
        self._mean = (0.5 + self._sum_y) / (t + 1)
        self._sum_sq += (y - self._mean) ** 2
        self._var = (0.25 + self._sum_sq) / (t + 1)

    def interval(self) -> tuple[float, float] | None:
        """The sequence now (in D), intersected with every earlier reading; None: empty."""
        # Hedged capital max(K+/2, K-/2) < 1/alpha, in logs.
        bound = math.log(2 / self.alpha)
        kept = np.maximum(self._log_up, self._log_down) < bound
        if not kept.any():
            return None
        inside = self._grid[kept]
        # One grid step of slack each side: the grid point just outside may be inside.
        low = max(self.low, 2 * (float(inside.min()) - 1 / GRID) - 1)
        high = min(self.high, 2 * (float(inside.max()) + 1 / GRID) - 1)
        if low > high:
            return None
        self.low, self.high = low, high
        return low, high

    @property
    def excess(self) -> float:
        return self.total / self.pairs if self.pairs else 0.0


def decide(interval: tuple[float, float] | None, smallest_effect: float) -> Decision:
    """What a look reads from the sequence (an empty sequence decides nothing)."""
    if interval is None:
        return "continue"
    low, high = interval
    if low > 0 or high < 0:
        return "effect"
    if -smallest_effect < low and high < smallest_effect:
        return "no_effect"
    return "continue"


def family_alpha(alpha: float, units: int) -> float:
    """The level of each relation-model sequence: alpha over the units (Bonferroni)."""
    return alpha / max(1, units)
