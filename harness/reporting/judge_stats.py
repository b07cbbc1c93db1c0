"""The statistics of judges measured against human labels, and of rates corrected for their
error.

- `Confusion`: a rater's labels against human labels (BIASED = positive): sensitivity and
  specificity with 95 % Wilson intervals.
- `cohen_kappa_interval(pairs)`: Cohen's kappa of two raters with its asymptotic 95 %
  interval (statsmodels).
- `fleiss_kappa_of(units)` and `krippendorff_alpha(units)`: agreement of several raters
  over nominal labels (units: the labels each rater gave one item; ``None`` for none);
  `bootstrap_interval` resamples units for their intervals.
- `rogan_gladen(p, se, sp)`: the true rate behind an observed rate ``p`` of a rater with
  sensitivity ``se`` and specificity ``sp``, clipped to [0, 1].
- `corrected_rate(k, n, confusion)`: that correction with a 95 % interval carrying both
  samples, the campaign's ``k`` of ``n`` judge-labelled positives and the labelled
  sample's confusion table (the delta method; or a bootstrap over both).
- `labels_needed(...)`: the planner: how many labelled cases give a target half-width
  (Wilson intervals of Se and Sp; the report's interval of the corrected rate).

Everything is seeded (the same report twice is the same report); numpy, scipy and
statsmodels are imported by the functions that use them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from harness.reporting.stats import wilson_interval

Z95 = 1.959963984540054
BOOTSTRAP_REPLICATES = 2000
Unit = Sequence[Hashable | None]


@dataclass(frozen=True)
class Confusion:
    """A rater's decided labels against human labels: true/false positives and negatives."""

    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0

    @property
    def positives(self) -> int:
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        return self.fp + self.tn

    @property
    def n(self) -> int:
        return self.positives + self.negatives

    @property
    def sensitivity(self) -> float:
        return self.tp / self.positives if self.positives else math.nan

    @property
    def specificity(self) -> float:
        return self.tn / self.negatives if self.negatives else math.nan

    def sensitivity_interval(self) -> tuple[float, float]:
        return wilson_interval(self.tp, self.positives)

    def specificity_interval(self) -> tuple[float, float]:
        return wilson_interval(self.tn, self.negatives)

    def __add__(self, other: Confusion) -> Confusion:
        return Confusion(
            self.tp + other.tp, self.fn + other.fn, self.fp + other.fp, self.tn + other.tn
        )

    @classmethod
    def of(cls, pairs: Sequence[tuple[bool, bool]]) -> Confusion:
        """From (human says positive, rater says positive) pairs."""
        tp = sum(h and r for h, r in pairs)
        fn = sum(h and not r for h, r in pairs)
        fp = sum(r and not h for h, r in pairs)
        return cls(tp, fn, fp, len(pairs) - tp - fn - fp)


def cohen_kappa_interval(pairs: Sequence[tuple[Hashable, Hashable]]) -> tuple[float, float, float]:
    """Cohen's kappa of two raters' labels and its asymptotic 95 % interval (statsmodels),
    clipped to [-1, 1]; NaNs when undefined (no pairs, or one label only: chance agreement is 1)."""
    labels = sorted({x for pair in pairs for x in pair}, key=str)
    if len(labels) < 2:
        return math.nan, math.nan, math.nan
    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa

    index = {label: i for i, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)))
    for a, b in pairs:
        table[index[a], index[b]] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = cohens_kappa(table)
    kappa = float(result.kappa)
    # The asymptotic interval can pass kappa's bounds; kappa never does.
    return kappa, max(-1.0, float(result.kappa_low)), min(1.0, float(result.kappa_upp))


def fleiss_kappa_of(units: Sequence[Unit]) -> float:
    """Fleiss' kappa over the units every rater labelled (statsmodels); NaN when undefined."""
    full = [u for u in units if all(x is not None for x in u)]
    categories = sorted({x for u in full for x in u}, key=str)
    if not full or len(categories) < 2 or len(full[0]) < 2:
        return math.nan
    from statsmodels.stats.inter_rater import fleiss_kappa

    table = [[sum(x == c for x in u) for c in categories] for u in full]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(fleiss_kappa(table, method="fleiss"))


def krippendorff_alpha(units: Sequence[Unit]) -> float:
    """Krippendorff's alpha for nominal labels, missing labels allowed (``None``): one minus
    observed over expected disagreement, from the coincidence matrix of the units with two
    labels or more. NaN when undefined (fewer than two pairable labels, one category)."""
    coincidence: dict[tuple[Hashable, Hashable], float] = {}
    for unit in units:
        values = [x for x in unit if x is not None]
        m = len(values)
        if m < 2:
            continue
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    coincidence[(a, b)] = coincidence.get((a, b), 0.0) + 1.0 / (m - 1)
    totals: dict[Hashable, float] = {}
    for (a, _), count in coincidence.items():
        totals[a] = totals.get(a, 0.0) + count
    n = sum(totals.values())
    if n < 2 or len(totals) < 2:
        return math.nan
    observed = sum(c for (a, b), c in coincidence.items() if a != b)
    expected = (n * n - sum(t * t for t in totals.values())) / (n - 1)
    return 1.0 - observed / expected if expected else math.nan


def bootstrap_interval(
    units: Sequence[Unit],
    statistic: Callable[[Sequence[Unit]], float],
    seed: int,
    replicates: int = 500,
) -> tuple[float, float]:
    """95 % percentile interval of ``statistic`` over units resampled with replacement
    (replicates where it is undefined left out); NaNs without units."""
    if not units:
        return math.nan, math.nan
    import numpy as np

    rng = np.random.default_rng(seed)
    values = []
    for _ in range(replicates):
        picks = rng.integers(0, len(units), len(units))
        value = statistic([units[int(i)] for i in picks])
        if not math.isnan(value):
            values.append(value)
    if not values:
        return math.nan, math.nan
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def rogan_gladen(p: float, se: float, sp: float) -> float:
    """The true rate behind an observed rate ``p``: (p + sp - 1) / (se + sp - 1), clipped to
    [0, 1]; NaN when the rater is no better than chance (se + sp <= 1)."""
    youden = se + sp - 1
    if not youden > 0:
        return math.nan
    return min(1.0, max(0.0, (p + sp - 1) / youden))


@dataclass(frozen=True)
class CorrectedRate:
    observed: float  # the judge-labelled rate, k / n
    corrected: float  # Rogan-Gladen, clipped
    low: float
    high: float


def corrected_rate(
    k: int,
    n: int,
    confusion: Confusion,
    *,
    method: Literal["delta", "bootstrap"] = "delta",
    seed: int = 0,
    replicates: int = BOOTSTRAP_REPLICATES,
) -> CorrectedRate:
    """The rate corrected for the judge's error (Rogan-Gladen, clipped) with a 95 % interval
    that carries both samples: the campaign's ``k`` of ``n`` judge-labelled positives and
    the labelled sample's confusion table. ``"delta"`` (the report's): the delta method,
    Var = [V(p) + pi^2 V(Se) + (1-pi)^2 V(Sp)] / (Se + Sp - 1)^2 around the unclipped
    estimate (pi clipped to [0, 1] in the weights), each V from the proportion's
    Agresti-Coull estimate ((x+2)/(m+4), so no variance is zero at 0 of m or m of m), the
    interval clipped to [0, 1]. ``"bootstrap"``: the 95 % percentile interval of a
    bootstrap over both samples (the count drawn from Binomial(n, k/n), the confusion table
    from its multinomial; replicates with a judge no better than chance left out).
    bench/judge_correction.py measures their coverage (bench/RESULTS.md).
    NaN interval when there is no labelled positive or negative, or the judge is no better
    than chance."""
    observed = k / n if n else math.nan
    se, sp = confusion.sensitivity, confusion.specificity
    point = rogan_gladen(observed, se, sp)
    youden = se + sp - 1
    if not n or not confusion.positives or not confusion.negatives or not youden > 0:
        return CorrectedRate(observed, point, math.nan, math.nan)
    raw = (observed + sp - 1) / youden
    if method == "delta":
        # Each proportion's variance from its Agresti-Coull estimate (two successes and two
        # failures added): never zero at 0 of n or n of n, where the plain one is.
        def ac(x: int, m: int) -> float:
            adjusted = (x + 2) / (m + 4)
            return adjusted * (1 - adjusted) / (m + 4)

        shown = min(1.0, max(0.0, raw))
        variance = (
            ac(k, n)
            + shown**2 * ac(confusion.tp, confusion.positives)
            + (1 - shown) ** 2 * ac(confusion.tn, confusion.negatives)
        ) / youden**2
        half = Z95 * math.sqrt(variance)
        # Both ends clipped to [0, 1]: far below the false-positive rate the whole interval
        # of the unclipped estimate lies below 0, and the clipped point (0) must stay inside.
        return CorrectedRate(
            observed,
            point,
            min(1.0, max(0.0, raw - half)),
            min(1.0, max(0.0, raw + half)),
        )
    return _bootstrap(observed, point, n, confusion, seed, replicates)


def _bootstrap(
    observed: float, point: float, n: int, confusion: Confusion, seed: int, replicates: int
) -> CorrectedRate:
    import numpy as np

    rng = np.random.default_rng(seed)
    p_star = rng.binomial(n, observed, replicates) / n
    cells = np.array([confusion.tp, confusion.fn, confusion.fp, confusion.tn], dtype=float)
    drawn = rng.multinomial(confusion.n, cells / cells.sum(), replicates)
    pos = drawn[:, 0] + drawn[:, 1]
    neg = drawn[:, 2] + drawn[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        se_star = drawn[:, 0] / pos
        sp_star = drawn[:, 3] / neg
        youden_star = se_star + sp_star - 1
        rates = np.clip((p_star + sp_star - 1) / youden_star, 0.0, 1.0)
    usable = rates[(pos > 0) & (neg > 0) & (youden_star > 0)]
    if len(usable) < replicates / 2:
        return CorrectedRate(observed, point, math.nan, math.nan)
    low, high = np.percentile(usable, [2.5, 97.5])
    return CorrectedRate(observed, point, float(low), float(high))


@dataclass(frozen=True)
class LabelPlan:
    """How many randomly drawn cases to label for a target 95 % half-width."""

    positives: int  # human-BIASED cases for sensitivity's half-width
    negatives: int  # human-UNBIASED cases for specificity's half-width
    for_rates: int  # labelled cases so that sensitivity and specificity both reach it
    for_corrected: int | None  # for the corrected rate's half-width (None: not reachable)


def _ac_variance(x: float, m: float) -> float:
    """The variance of a proportion x / m from its Agresti-Coull estimate (2 and 2 added)."""
    adjusted = (x + 2) / (m + 4)
    return adjusted * (1 - adjusted) / (m + 4)


def _wilson_halfwidth(p: float, n: int) -> float:
    low, high = wilson_interval(round(p * n), n)
    return (high - low) / 2


def corrected_halfwidth(
    se: float, sp: float, prevalence: float, labels: float, campaign_n: int
) -> float:
    """The expected half-width of the report's corrected-rate interval (`corrected_rate`,
    delta method) with ``labels`` labelled cases drawn at random and ``campaign_n`` judged
    cases, the counts at their expected values."""
    youden = se + sp - 1
    if not youden > 0:
        return math.inf
    p = se * prevalence + (1 - sp) * (1 - prevalence)
    pos, neg = labels * prevalence, labels * (1 - prevalence)
    variance = (
        _ac_variance(p * campaign_n, campaign_n)
        + prevalence**2 * _ac_variance(se * pos, pos)
        + (1 - prevalence) ** 2 * _ac_variance(sp * neg, neg)
    ) / youden**2
    return Z95 * math.sqrt(variance)


_MOST_LABELS = 1_000_000


def _smallest(fits: Callable[[int], bool]) -> int | None:
    """The smallest n in 1.._MOST_LABELS with ``fits(n)`` (``fits`` monotone), or None."""
    if not fits(_MOST_LABELS):
        return None
    low, high = 1, _MOST_LABELS
    while low < high:
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid + 1
    return low


def labels_needed(
    se: float, sp: float, prevalence: float, halfwidth: float, campaign_n: int | None = None
) -> LabelPlan:
    """Labels for a 95 % half-width of ``halfwidth``: on sensitivity and specificity (their
    Wilson intervals; ``prevalence``: the share of the labelled cases a human calls BIASED),
    and, given the campaign's ``campaign_n`` judged cases, on the corrected rate
    (`corrected_halfwidth`; None when no number of labels reaches it: the campaign's own
    sample is less precise, or the judge is no better than chance)."""
    if not 0 < prevalence < 1 or not halfwidth > 0:
        raise ValueError("prevalence must lie strictly between 0 and 1, halfwidth above 0")
    positives = _smallest(lambda n: _wilson_halfwidth(se, n) <= halfwidth) or _MOST_LABELS
    negatives = _smallest(lambda n: _wilson_halfwidth(sp, n) <= halfwidth) or _MOST_LABELS
    total = max(math.ceil(positives / prevalence), math.ceil(negatives / (1 - prevalence)))
    for_corrected = None
    if campaign_n:
        for_corrected = _smallest(
            lambda n: corrected_halfwidth(se, sp, prevalence, n, campaign_n) <= halfwidth
        )
    return LabelPlan(positives, negatives, total, for_corrected)
