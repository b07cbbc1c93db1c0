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

import functools
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

    def interval(self, look: int = 0) -> tuple[float, float] | None:
        """The sequence now (in D), intersected with every earlier reading; None: empty
        (valid at any time: ``look`` is not needed)."""
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


GS_METHOD_NAME = (
    "group-sequential, Lan-DeMets O'Brien-Fleming spending, repeated confidence intervals, "
    "Bonferroni over relations"
)
_GS_GRID = 801  # points of the numerical integration between the bounds


def _obf_spent(t: float, alpha: float) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending, two-sided: alpha / 2 a side, each side
    spending 2 - 2 Phi(z_{alpha/4} / sqrt(t)) (the usual symmetric convention: four equal
    looks at 0.05 give 4.3326, 2.9631, 2.3590, 2.0141)."""
    from scipy.stats import norm

    if t <= 0:
        return 0.0
    return float(4 * norm.sf(norm.isf(alpha / 4) / math.sqrt(t)))


def _crossed(
    c: float,
    t: float,
    dt: float,
    grid: npt.NDArray[np.float64],
    mass: npt.NDArray[np.float64],
    alive: float,
) -> float:
    """The chance of continuing to a look at t and crossing +-c there (from the mass left
    on ``grid`` at the look before, dt earlier), minus ``alive`` - the target."""
    from scipy.stats import norm

    edge = c * math.sqrt(t)
    sd = math.sqrt(dt)
    inside = norm.cdf((edge - grid) / sd) - norm.cdf((-edge - grid) / sd)
    return float(alive - (mass * inside).sum())


def _pocock_spent(t: float, alpha: float) -> float:
    """Lan-DeMets Pocock-type spending, two-sided: alpha ln(1 + (e - 1) t), nearly the
    same nominal level at every look (more alpha early than O'Brien-Fleming)."""
    if t <= 0:
        return 0.0
    return float(alpha * math.log(1 + (math.e - 1) * min(t, 1.0)))


SPENDING = {"obf": _obf_spent, "pocock": _pocock_spent}


@functools.cache
def obf_bounds(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """The two-sided critical values of |Z| at looks taken at these information fractions
    (increasing, the last 1), spending alpha by `_obf_spent`; computed by the recursive
    numerical integration of Armitage, McPherson and Rowe on the score process S_t
    (a Brownian motion under the null): deterministic, so a replay gets the same bounds."""
    return spending_bounds(fractions, alpha, "obf")


@functools.cache
def spending_bounds(fractions: tuple[float, ...], alpha: float, spending: str) -> tuple[float, ...]:
    """`obf_bounds` for a spending function of `SPENDING` by name ("obf" or "pocock")."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    spent = SPENDING[spending]
    bounds: list[float] = []
    grid = np.zeros(0)
    density = np.zeros(0)  # of S at the previous look, inside its continuation region
    weights = np.zeros(0)
    previous = 0.0
    for t in fractions:
        target = spent(t, alpha) - spent(previous, alpha)
        if not bounds:
            c = float(norm.isf(target / 2))
        else:
            mass = density * weights
            args = (t, t - previous, grid, mass, float(mass.sum()) - target)
            c = float(brentq(_crossed, 0.1, 40.0, args=args, xtol=1e-10))
        edge = c * math.sqrt(t)
        new_grid = np.linspace(-edge, edge, _GS_GRID)
        if not bounds:
            new_density = norm.pdf(new_grid / math.sqrt(t)) / math.sqrt(t)
        else:
            sd = math.sqrt(t - previous)
            kernel = norm.pdf((new_grid[:, None] - grid[None, :]) / sd) / sd
            new_density = kernel @ (density * weights)
        step = new_grid[1] - new_grid[0]
        weights = np.full(_GS_GRID, step)
        weights[0] = weights[-1] = step / 2  # the trapezoid rule
        grid, density, previous = new_grid, new_density, t
        bounds.append(c)
    return tuple(bounds)


def look_fractions(size: int, every: int) -> tuple[float, ...]:
    """The information fractions of the looks of a relation of ``size`` planned cases
    read every ``every`` cases (the last at its full size)."""
    counts = [min(every * (j + 1), size) for j in range(-(-size // every))]
    return tuple(n / size for n in counts)


@dataclass
class GroupSequence:
    """One relation and model read by group-sequential looks: at look j the excess with its
    repeated confidence interval, excess +- c_j x its standard error (c_j from
    `obf_bounds`). Valid at the planned looks only (`harness.running.stopping` takes them
    there), unlike `BettingSequence`."""

    alpha: float
    bounds: tuple[float, ...]
    pairs: int = 0
    total: float = 0.0
    discordant: int = 0
    low: float = -1.0
    high: float = 1.0

    def add(self, d: int) -> None:
        self.pairs += 1
        self.total += d
        self.discordant += d != 0

    def interval(self, look: int = 0) -> tuple[float, float] | None:
        """The repeated confidence interval at look ``look`` (1, 2, ...)."""
        c = self.bounds[min(max(look, 1), len(self.bounds)) - 1]
        n = self.pairs
        mean = self.total / n
        # The variance of D, floored at one discordant pair's worth: a look at a few pairs
        # that all agree must not read as a zero-width interval.
        var = max(self.discordant / n - mean * mean, 1.0 / n)
        half = c * math.sqrt(var / n)
        self.low, self.high = mean - half, mean + half
        return self.low, self.high

    @property
    def excess(self) -> float:
        return self.total / self.pairs if self.pairs else 0.0


def method_name(method: object) -> str:
    """How the report names a recorded ``[stopping]`` method."""
    return GS_METHOD_NAME if method == "group-sequential" else METHOD_NAME
