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

A relation tested per term (MetaQuerier: each term of a vocabulary against the other
terms, a term at risk in only some cases) is planned by `term_plan` / `term_power`: the
report's own test summed exactly over the term's binomial number of cases at risk, BH over
the terms Tarone's rule keeps; checked against brute force in
tests/core/running/test_planner.py.
"""

from __future__ import annotations

import functools
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


TERM_EXACT_LIMIT = 40  # past this many cases at risk per term, the normal model serves


@dataclass(frozen=True)
class TermPlan:
    """A relation tested per term (each term of a vocabulary against the other terms'
    (case, term) pairs, BH over the terms Tarone's rule keeps), at a planned size."""

    cases: int
    terms: int  # the vocabulary a case draws its at-risk terms from
    per_case: float  # terms at risk in one case
    at_risk: float  # cases a term is expected to be at risk in: cases x per_case / terms
    testable: float  # the share of terms whose smallest attainable p is at most alpha
    family: int  # the terms expected in the BH family (terms x testable, at least 1)
    mde: float  # the typical term's gap over baseline found with the planned power


class _TermTests:
    """The report's test of one term row at every count it can show: ``m`` cases at risk,
    ``k`` of them violated, against the rest's pairs at the baseline rate (the rest is the
    other terms' pairs of the relation: far larger than a term, so held at its mean). The
    number of cases at risk per term is binomial: each case draws its terms uniformly."""

    def __init__(self, cases: int, terms: int, per_case: float, baseline: float) -> None:
        from scipy.stats import binom

        self.q = min(1.0, per_case / max(1, terms))
        self.total = cases * per_case
        self.baseline = baseline
        low = int(binom.ppf(1e-9, cases, self.q))
        high = int(binom.isf(1e-9, cases, self.q))
        self.m_pmf = [(m, float(binom.pmf(m, cases, self.q))) for m in range(low, high + 1)]
        self._tests: dict[tuple[int, int], tuple[float, float]] = {}

    def test(self, m: int, k: int) -> tuple[float, float]:
        """(p, p_min) of the row with ``k`` of ``m`` violated, as the report computes them."""
        from harness.reporting.stats import exact_min_p, two_by_two_test

        found = self._tests.get((m, k))
        if found is None:
            rest_n = max(2, round(self.total - m))
            rest_k = round(self.baseline * rest_n)
            table = ((k, m - k), (rest_k, rest_n - rest_k))
            found = (two_by_two_test(table)[1], exact_min_p([table]))
            self._tests[(m, k)] = found
        return found

    def _mass(self, m: int, rate: float) -> list[tuple[int, float]]:
        from scipy.stats import binom

        ks = range(m + 1)
        return [(k, p) for k, p in zip(ks, binom.pmf(ks, m, rate), strict=True) if p > 1e-12]

    def testable(self, alpha: float) -> float:
        """The share of null terms Tarone's rule keeps (p_min at most ``alpha``)."""
        return sum(
            pm * pk
            for m, pm in self.m_pmf
            if m >= 1
            for k, pk in self._mass(m, self.baseline)
            if self.test(m, k)[1] <= alpha
        )

    def power(self, gap: float, level: float, alpha: float) -> float:
        """The chance a term whose rate is ``gap`` over the baseline is flagged at
        ``level`` (and kept by Tarone's rule), over its binomial number of cases."""
        rate = min(1.0, self.baseline + gap)
        return sum(
            pm * pk
            for m, pm in self.m_pmf
            if m >= 1
            for k, pk in self._mass(m, rate)
            if self.test(m, k)[1] <= alpha and self.test(m, k)[0] <= level
        )


def _term_family(tests: _TermTests, terms: int, alpha: float) -> tuple[float, int]:
    share = tests.testable(alpha)
    return share, max(1, round(terms * share))


def _power_of_terms(tests: _TermTests, family: int, gap: float, alpha: float, gaps: int) -> float:
    found = tests.power(gap, alpha / family, alpha)
    if gaps <= 1:
        return found
    for _ in range(50):  # increasing and bounded, as in `power_at`
        more = tests.power(gap, bh_level(family, gaps, found, alpha), alpha)
        if abs(more - found) < 1e-6:
            return more
        found = more
    return found


@functools.lru_cache(maxsize=64)
def _term_tests(cases: int, terms: int, per_case: float, baseline: float) -> _TermTests:
    return _TermTests(cases, terms, per_case, baseline)


def term_power(
    gap: float,
    cases: int,
    terms: int,
    per_case: float,
    *,
    alpha: float = ALPHA,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> float:
    """The power to flag one term whose rate is ``gap`` over ``baseline`` when a relation
    is tested per term (`TermPlan`): the report's own test (Fisher's exact test, chi-squared
    when large) summed over the term's binomial number of cases at risk, at BH's level for
    ``gaps`` real gaps (`bh_level`) over the terms Tarone's rule keeps. Past
    `TERM_EXACT_LIMIT` cases per term, the normal model at the mean (`power_at`)."""
    at_risk = cases * per_case / max(1, terms)
    if at_risk > TERM_EXACT_LIMIT:
        n = round(at_risk)
        return power_at(
            gap, n, max(2, round(cases * per_case) - n), terms, alpha=alpha,
            baseline=baseline, gaps=gaps,
        )  # fmt: skip
    tests = _term_tests(cases, terms, per_case, baseline)
    _, family = _term_family(tests, terms, alpha)
    return _power_of_terms(tests, family, gap, alpha, gaps)


@functools.lru_cache(maxsize=64)
def term_plan(
    cases: int,
    terms: int,
    per_case: float,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> TermPlan:
    """What a per-term relation can detect at ``cases``: the cases a term is at risk in,
    the share of terms Tarone's rule keeps, and the typical term's MDE (the smallest gap
    `term_power` finds with probability ``power``; inf when none is)."""
    at_risk = cases * per_case / max(1, terms)
    if at_risk > TERM_EXACT_LIMIT:
        n = round(at_risk)
        mde = minimum_detectable_effect(
            n, max(2, round(cases * per_case) - n), terms, alpha=alpha, power=power,
            baseline=baseline, gaps=gaps,
        ).mde  # fmt: skip
        return TermPlan(cases, terms, per_case, at_risk, 1.0, terms, mde)
    tests = _term_tests(cases, terms, per_case, baseline)
    share, family = _term_family(tests, terms, alpha)

    def reaches(gap: float) -> bool:
        return _power_of_terms(tests, family, gap, alpha, gaps) >= power

    top = 1.0 - baseline
    if not reaches(top):
        return TermPlan(cases, terms, per_case, at_risk, share, family, math.inf)
    low, high = 0.0, top
    while high - low > 0.001:  # power rises with the gap: bisect to a tenth of a point
        mid = (low + high) / 2
        if reaches(mid):
            high = mid
        else:
            low = mid
    return TermPlan(cases, terms, per_case, at_risk, share, family, high)


@functools.lru_cache(maxsize=64)
def cases_to_detect_terms(
    target: float,
    terms: int,
    per_case: float,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> int | None:
    """The fewest cases at which a per-term relation's typical term has an MDE of at most
    ``target`` (`term_plan`); None past `MAX_CASES`."""

    def reaches(cases: int) -> bool:
        return term_power(target, cases, terms, per_case, alpha=alpha, baseline=baseline,
                          gaps=gaps) >= power  # fmt: skip

    low = high = max(2, math.ceil(2 * terms / max(per_case, 1e-9)))
    while not reaches(high):
        low, high = high, high * 2
        if high > MAX_CASES:
            return None
    while high - low > max(1, high // 100):  # to a percent: the model is not finer than that
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid
    return high
