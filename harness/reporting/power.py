"""The power model the planner reads: the smallest group-vs-rest gap a campaign can detect.

A relation's claims are group-vs-rest comparisons of per-case violation rates, corrected
with Benjamini-Hochberg within the relation (its family of ``family_size`` tests). With one
real gap among the family, BH flags it when its p-value is below ``alpha / family_size``
(its rank is 1), so the model asks: at that level, two-sided, which gap ``d`` above a
``baseline`` rate does a test of two independent proportions (``n_group`` cases against
``n_rest``) find with probability ``power``? It uses Cohen's arcsine effect size h and
statsmodels' normal power for two independent samples, and inverts h exactly
(``p1 = sin(asin(sqrt(p0)) + h/2)^2``). The report's own test is Fisher's exact test on
small tables, a little more conservative than this normal model: the planner's figure is a
floor to plan with, checked against simulation in tests/core/reporting/test_power.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.reporting.stats import ALPHA

DEFAULT_POWER = 0.8
DEFAULT_BASELINE = 0.1  # the violation rate of the rest: a model that is mostly consistent
DEFAULT_TARGET = 0.10  # 10 points: the gap a plan should be able to see
MAX_CASES = 1_000_000


@dataclass(frozen=True)
class Detectable:
    """The minimum detectable effect of one relation's group-vs-rest test at its plan."""

    n_group: int
    n_rest: int
    family_size: int
    alpha: float
    power: float
    baseline: float
    mde: float  # in rate points (0.12 = 12 points); math.inf when nothing is detectable


def bh_level(family_size: int, gaps: int, power: float, alpha: float = ALPHA) -> float:
    """The per-test level at which Benjamini-Hochberg at ``alpha`` over ``family_size``
    tests rejects a real gap, when ``gaps`` of them are real and each is found with
    probability ``power``.

    One real gap (the planner's default) is found when its p is below ``alpha /
    family_size``. With more, BH's step-up is more lenient: it rejects every p below
    ``alpha x R / family_size``, R the rejections, and R is about ``gaps x power`` real
    ones plus ``nulls x level`` false ones; solving ``level = alpha x (gaps x power + nulls
    x level) / family_size`` gives ``gaps x power x alpha / (family_size - alpha x
    nulls)`` (the expected-rejections approximation of sample-size methods for FDR control,
    e.g. Jung 2005, Bioinformatics 21:3097, written for BH's own level), between ``alpha /
    family_size`` and ``alpha``. It treats R as fixed, so it overstates a little when R is
    small and variable (checked against brute force in tests)."""
    family_size = max(1, family_size)
    if gaps <= 1 or family_size <= 1:
        return alpha / family_size
    nulls = family_size - min(gaps, family_size)
    # Never below alpha / family_size: BH rejects the smallest p at that level whatever else.
    lenient = gaps * power * alpha / (family_size - alpha * nulls)
    return max(alpha / family_size, min(alpha, lenient))


def _h_needed(n_group: int, n_rest: int, level: float, power: float) -> float:
    from statsmodels.stats.power import NormalIndPower

    solved = NormalIndPower().solve_power(
        effect_size=None,
        nobs1=n_group,
        alpha=level,
        power=power,
        ratio=n_rest / n_group,
        alternative="two-sided",
    )
    return float(solved)


def minimum_detectable_effect(
    n_group: int,
    n_rest: int,
    family_size: int = 1,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> Detectable:
    """The smallest rise over ``baseline`` in one group's rate that a two-sided test at
    ``alpha / family_size`` detects with probability ``power``; with ``gaps`` > 1 real gaps
    of that size among the family, at BH's more lenient level for them (`bh_level`)."""
    family_size = max(1, family_size)
    level = bh_level(family_size, gaps, power, alpha)
    if n_group < 2 or n_rest < 2:
        mde = math.inf
    else:
        h = _h_needed(n_group, n_rest, level, power)
        angle = math.asin(math.sqrt(baseline)) + h / 2
        mde = math.inf if angle >= math.pi / 2 else math.sin(angle) ** 2 - baseline
    return Detectable(n_group, n_rest, family_size, alpha, power, baseline, mde)


def power_at(
    gap: float,
    n_group: int,
    n_rest: int,
    family_size: int = 1,
    *,
    alpha: float = ALPHA,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> float:
    """The model's power to detect a ``gap`` over ``baseline`` (the inverse view of
    `minimum_detectable_effect`, for comparing with measured power). With ``gaps`` > 1
    real gaps of this size in the family, the power ``p`` solves ``p = power at
    bh_level(family_size, gaps, p)`` (the fixed point, found by iteration from the
    one-gap power, which it can only raise)."""
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    h = float(proportion_effectsize(min(1.0, baseline + gap), baseline))

    def at(level: float) -> float:
        return float(
            NormalIndPower().power(
                effect_size=h,
                nobs1=n_group,
                alpha=level,
                ratio=n_rest / n_group,
                alternative="two-sided",
            )
        )

    found = at(alpha / max(1, family_size))
    if gaps <= 1:
        return found
    for _ in range(100):  # increasing and bounded: converges
        more = at(max(alpha / max(1, family_size), bh_level(family_size, gaps, found, alpha)))
        if abs(more - found) < 1e-6:
            return more
        found = more
    return found


def cases_to_detect(
    target: float,
    groups: int,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> int | None:
    """The fewest cases (split evenly over ``groups`` groups, each tested against the rest,
    a family of ``groups`` tests, ``gaps`` of them real) whose MDE is at most ``target``;
    None past `MAX_CASES`."""

    def mde(cases: int) -> float:
        n_group = cases // groups
        return minimum_detectable_effect(
            n_group,
            cases - n_group,
            groups,
            alpha=alpha,
            power=power,
            baseline=baseline,
            gaps=gaps,
        ).mde

    low, high = groups * 2, groups * 2
    while mde(high) > target:
        low, high = high, high * 2
        if high > MAX_CASES:
            return None
    while high - low > 1:  # MDE falls as cases grow: bisect for the first that reaches target
        mid = (low + high) // 2
        if mde(mid) <= target:
            high = mid
        else:
            low = mid
    return high


def cases_in_closed_form(
    effect: float,
    n_group: int,
    n_rest: int,
    family_size: int = 1,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
) -> int | None:
    """`cases_to_decide` without its last step: the normal model's size in closed form, at
    most a case short (microseconds, where `cases_to_decide` takes milliseconds): for
    figures stated about many cells at once."""
    from scipy.stats import norm

    if effect <= 0 or baseline + effect >= 1:
        return None
    ratio = max(n_rest, 1) / max(n_group, 1)
    level = alpha / max(1, family_size)
    h = 2 * math.asin(math.sqrt(baseline + effect)) - 2 * math.asin(math.sqrt(baseline))
    z = float(norm.ppf(1 - level / 2) + norm.ppf(power))
    return max(2, math.ceil((z / h) ** 2 * (1 + ratio) / ratio))


def cases_to_decide(
    effect: float,
    n_group: int,
    n_rest: int,
    family_size: int = 1,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
) -> int | None:
    """The fewest cases of one group (its rest growing in proportion, as more of the same
    campaign would give) whose MDE is at most ``effect``: what an inconclusive cell of
    ``n_group`` against ``n_rest`` needs to be decided; None past `MAX_CASES` or when no
    rate can rise by ``effect`` over ``baseline``.

    The normal model's size in closed form (effective size ``((z_alpha + z_power) / h)^2``,
    h Cohen's arcsine effect, split as the cell's group and rest are), then moved to the
    first size whose `minimum_detectable_effect` reaches ``effect`` (the closed form leaves
    out the test's far tail, so it is off by a case at most)."""
    cases = cases_in_closed_form(
        effect, n_group, n_rest, family_size, alpha=alpha, power=power, baseline=baseline
    )
    if cases is None:
        return None
    ratio = max(n_rest, 1) / max(n_group, 1)

    def reaches(n: int) -> bool:
        rest = max(2, round(n * ratio))
        mde = minimum_detectable_effect(
            n, rest, family_size, alpha=alpha, power=power, baseline=baseline
        ).mde
        return mde <= effect

    if cases > MAX_CASES:
        return None
    while not reaches(cases):
        cases += 1
        if cases > MAX_CASES:
            return None
    while cases > 2 and reaches(cases - 1):
        cases -= 1
    return cases
