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

With several real gaps, or a matched control whose excess rows share the relation's
family, the level is BH's own rule (`bh_power`: a test is flagged when its p is below
alpha x (1 + the others' rejections) / family), the rest of a gapped group holds its share
of the other gaps, and the family holds the control's rows (`family_powers`); checked
against brute force of the report's own tests in the same file.

A relation tested per term (MetaQuerier: each term of a vocabulary against the other
terms, a term at risk in only some cases) is planned by `term_plan` / `term_power`: the
report's own test summed exactly over the term's binomial number of cases at risk, BH over
the terms Tarone's rule keeps; checked against brute force in
tests/core/running/test_planner.py.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
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
    """The per-test level of BH at ``alpha`` over ``family_size`` tests when ``gaps`` of
    them are real and each is found with probability ``power``: ``alpha x (1 + (gaps - 1)
    x power) / family_size``, at most ``alpha`` (the level of `bh_power`'s rule at the
    mean number of the others' rejections; one gap: ``alpha / family_size``)."""
    family_size = max(1, family_size)
    others = max(0, min(gaps, family_size) - 1)
    return min(alpha, alpha * (1 + others * power) / family_size)


PowerAt = Callable[[float], float]  # a test's power at a per-test level


BH_DEPTH = 32  # shifts of `bh_power`'s recursion computed; deeper ones start at the top


def bh_power(
    kinds: Sequence[tuple[int, PowerAt]], family: float, alpha: float = ALPHA
) -> list[float]:
    """The chance Benjamini-Hochberg at ``alpha`` over ``family`` tests flags a real effect
    of each kind, when the family holds ``count`` real effects of each ``(count, power at
    a level)`` of ``kinds`` and nulls for the rest.

    BH flags test i exactly when ``p_i <= alpha x (1 + R_i) / family``, R_i the rejections
    of the step-up procedure run on the other tests with each critical value moved up one
    rank (the identity behind BH's proof of FDR control): a real test counts itself, so
    with K real gaps its level is never the one-gap ``alpha / family`` times ``K x
    power`` (the expected-rejections approximation, which is below alpha / family while K
    x power < 1) but ``alpha x (1 + R_i) / family``. R_i is taken as the sum of
    independent binomials over the other real tests, each found with its own chance at one
    rank more (so the recursion runs over the shift s: ``p_t(s) = E[power_t(alpha (s + 1 +
    R) / family)]``, R over the others at ``p(s + 1)``), and the nulls' rare rejections are
    left out (conservative; one real test: exactly ``power(alpha / family)``). Checked
    against brute-force BH in tests/core/reporting/test_power.py."""
    import numpy as np
    from scipy.stats import binom

    family = max(1.0, float(family))
    counts = [max(0, int(c)) for c, _ in kinds]
    total = sum(counts)
    if total == 0:
        return [0.0] * len(kinds)
    cache: list[dict[int, float]] = [{} for _ in kinds]

    def at(kind: int, rank: int) -> float:
        found = cache[kind].get(rank)
        if found is None:
            found = cache[kind][rank] = float(kinds[kind][1](min(alpha, alpha * rank / family)))
        return found

    depth = min(total, BH_DEPTH)
    # Below the depth computed, no other real test is taken as found (conservative).
    deeper = [at(t, depth + 1) for t in range(len(kinds))]
    for shift in range(depth - 1, -1, -1):
        current = []
        for t, count in enumerate(counts):
            if count == 0:
                current.append(0.0)
                continue
            dist = np.ones(1)
            for u, other in enumerate(counts):
                k = other - (u == t)
                if k > 0:
                    dist = np.convolve(dist, binom.pmf(np.arange(k + 1), k, deeper[u]))
            current.append(
                float(sum(w * at(t, shift + 1 + r) for r, w in enumerate(dist) if w > 1e-12))
            )
        deeper = current
    return deeper


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


def _normal_power(
    gap: float, n_group: int, n_rest: int, baseline: float, rest_gap: float = 0.0
) -> PowerAt:
    """The two-sided normal test's power at a level (Cohen's h, statsmodels) of a group at
    ``baseline + gap`` against a rest at ``baseline + rest_gap``."""
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    h = float(proportion_effectsize(min(1.0, baseline + gap), min(1.0, baseline + rest_gap)))

    def at(level: float) -> float:
        return float(
            NormalIndPower().power(
                effect_size=h, nobs1=n_group, alpha=level, ratio=n_rest / n_group,
                alternative="two-sided",
            )
        )  # fmt: skip

    return at


def paired_power_at(test_only: float, control_only: float, pairs: int) -> PowerAt:
    """The power of a control's excess row (the exact McNemar test of
    `harness.reporting.excess.paired_excess` on ``pairs`` independent pairs, each
    violated in the test only / the control only with these chances) at a level: the
    discordant pairs are binomial, and given them the pairs going the test's way."""
    import numpy as np
    from scipy.stats import binom

    discordant = test_only + control_only
    if pairs <= 0 or discordant <= 0:
        return lambda level: 0.0
    share = test_only / discordant
    if pairs * discordant > PAIRED_EXACT_LIMIT:
        return _paired_normal_power(share, pairs * discordant)
    ds = np.arange(1, pairs + 1)
    weights = binom.pmf(ds, pairs, min(1.0, discordant))
    keep = weights > 1e-12
    ds, weights = ds[keep], weights[keep]
    # The central two-sided p of each (d, b): twice the smaller binomial tail, at most 1.
    cells = [(int(d), np.arange(d + 1)) for d in ds]
    ps = [np.minimum(1.0, 2 * np.minimum(binom.cdf(b, d, 0.5), binom.sf(b - 1, d, 0.5)))
          for d, b in cells]  # fmt: skip
    masses = [binom.pmf(b, d, share) for d, b in cells]

    def at(level: float) -> float:
        return float(
            sum(w * m[p <= level].sum() for w, m, p in zip(weights, masses, ps, strict=True))
        )

    return at


PAIRED_EXACT_LIMIT = 60  # expected discordant pairs past which the normal model serves


def _paired_normal_power(share: float, discordant: float) -> PowerAt:
    """McNemar's test on about ``discordant`` pairs, ``share`` of them the test's way, in
    the normal model (z = (2b - d) / sqrt(d))."""
    from scipy.stats import norm

    mean = abs(2 * share - 1) * math.sqrt(discordant)
    spread = max(1e-9, 2 * math.sqrt(share * (1 - share)))

    def at(level: float) -> float:
        z = float(norm.isf(level / 2))
        return float(norm.sf((z - mean) / spread) + norm.cdf((-z - mean) / spread))

    return at


def paired_testable(pairs: int, baseline: float, alpha: float = ALPHA) -> float:
    """The chance a null excess row (test and control both at ``baseline``) has enough
    discordant pairs for its smallest attainable p (``2 x 0.5^d``) to reach ``alpha``, so
    Tarone's rule keeps it in the family."""
    from scipy.stats import binom

    d_min = math.ceil(math.log2(2 / alpha))
    return float(binom.sf(d_min - 1, max(0, pairs), 2 * baseline * (1 - baseline)))


def family_powers(
    gap: float,
    groups: int,
    group_power: PowerAt,
    *,
    gaps: int = 1,
    baseline: float = DEFAULT_BASELINE,
    control_pairs: int = 0,
    alpha: float = ALPHA,
    null_power: PowerAt | None = None,
) -> float:
    """A real gap's chance of being flagged in its relation's family (`bh_power`): the
    relation's ``groups`` group-vs-rest tests, ``gaps`` of them real at this ``gap`` (and
    the others, whose rest holds the real gaps, rejected below it with ``null_power``:
    BH counts those rejections too), and,
    when the relation runs a matched control (``control_pairs`` pairs per group: its cases
    x repeats), the control's excess rows the report corrects in the same family: one per
    group (the ``gaps`` real ones at the gap over the control's rate, here the baseline)
    and one for the relation (its rate raised by gaps x gap / groups), the null rows those
    Tarone's rule keeps (`paired_testable`)."""
    real = max(1, min(gaps, groups - 1))  # at least one group without a gap: its rest
    kinds: list[tuple[int, PowerAt]] = [(real, group_power)]
    if null_power is not None and groups > real:
        kinds.append((groups - real, null_power))
    family = float(groups)
    if control_pairs > 0:
        rate = min(1.0, baseline + gap)
        overall = min(1.0, baseline + gap * real / groups)
        kinds.append(
            (real, paired_power_at(rate * (1 - baseline), baseline * (1 - rate), control_pairs))
        )
        kinds.append(
            (
                1,
                paired_power_at(
                    overall * (1 - baseline), baseline * (1 - overall), control_pairs * groups
                ),
            )
        )
        family += real + 1 + (groups - real) * paired_testable(control_pairs, baseline, alpha)
    return bh_power(kinds, family, alpha)[0]


@functools.lru_cache(maxsize=4096)
def minimum_detectable_effect(
    n_group: int,
    n_rest: int,
    family_size: int = 1,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
    control_pairs: int = 0,
) -> Detectable:
    """The smallest rise over ``baseline`` in one group's rate that a two-sided test at
    ``alpha / family_size`` detects with probability ``power``; with ``gaps`` > 1 real gaps
    of that size among the family, or the control's excess rows in it (``control_pairs``),
    the smallest gap `power_at` finds with that probability (BH's rule, `bh_power`)."""
    family_size = max(1, family_size)
    if n_group < 2 or n_rest < 2:
        mde = math.inf
    elif gaps <= 1 and control_pairs <= 0:
        h = _h_needed(n_group, n_rest, alpha / family_size, power)
        angle = math.asin(math.sqrt(baseline)) + h / 2
        mde = math.inf if angle >= math.pi / 2 else math.sin(angle) ** 2 - baseline
    else:

        def reaches(gap: float) -> bool:
            return power_at(gap, n_group, n_rest, family_size, alpha=alpha, baseline=baseline,
                            gaps=gaps, control_pairs=control_pairs) >= power  # fmt: skip

        top = 1.0 - baseline - 1e-9
        if not reaches(top):
            mde = math.inf
        else:
            low, high = 0.0, top
            while high - low > 0.0005:  # power rises with the gap: bisect to 0.05 points
                mid = (low + high) / 2
                low, high = (low, mid) if reaches(mid) else (mid, high)
            mde = high
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
    control_pairs: int = 0,
) -> float:
    """The model's power to detect a ``gap`` over ``baseline`` (the inverse view of
    `minimum_detectable_effect`, for comparing with measured power): the two-sided normal
    test of ``n_group`` against ``n_rest`` (whose rate holds its share of the other real
    gaps) at BH's level in the relation's family
    (`family_powers`: ``gaps`` real gaps among ``family_size`` groups, and the control's
    excess rows when ``control_pairs`` > 0; one gap and no control: ``alpha /
    family_size``)."""
    if gaps <= 1 and control_pairs <= 0:
        return _normal_power(gap, n_group, n_rest, baseline)(alpha / max(1, family_size))
    # A group is tested against the rest of the groups, and with several real gaps the
    # rest holds the others: on average (gaps - 1) of the other (groups - 1) groups, so
    # the rest's rate is raised by that share of the gap (the test sees less of it).
    real = max(1, min(gaps, family_size - 1))  # as `family_powers`
    diluted = gap * (real - 1) / (family_size - 1) if family_size > 1 else 0.0
    one = _normal_power(gap, n_group, n_rest, baseline, diluted)
    # A group without a gap has all of them in its rest: it sits below the rest, and the
    # two-sided test rejects it at times (the report marks it below, BH still counts it).
    below = _normal_power(0.0, n_group, n_rest, baseline, gap * real / max(1, family_size - 1))
    return family_powers(gap, max(1, family_size), one, gaps=gaps, baseline=baseline,
                         control_pairs=control_pairs, alpha=alpha, null_power=below)  # fmt: skip


@functools.lru_cache(maxsize=256)
def cases_to_detect(
    target: float,
    groups: int,
    *,
    alpha: float = ALPHA,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
    repeats: int = 0,
    rest_groups: float | None = None,
    units_per_case: float = 1.0,
) -> int | None:
    """The fewest cases (split evenly over ``groups`` groups, each tested against the rest
    of ``rest_groups`` groups' cases, all the others by default; a family of ``groups``
    tests, ``gaps`` of them real, and with ``repeats`` > 0 the control's excess rows of
    cases x repeats pairs) whose MDE is at most ``target``; None past `MAX_CASES`. A case
    gives ``units_per_case`` units of the test (the groups split the units)."""

    def mde(cases: int) -> float:
        units = round(cases * units_per_case)
        n_group = units // groups
        n_rest = units - n_group if rest_groups is None else round(n_group * rest_groups)
        return minimum_detectable_effect(
            n_group,
            n_rest,
            groups,
            alpha=alpha,
            power=power,
            baseline=baseline,
            gaps=gaps,
            control_pairs=n_group * repeats,
        ).mde

    low, high = groups * 2, groups * 2
    while mde(high) > target:
        low, high = high, high * 2
        if high > MAX_CASES:
            return None
    step = 1 if gaps <= 1 and repeats <= 0 else max(1, high // 100)
    while high - low > step:  # MDE falls as cases grow: bisect for the first that reaches target
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
    real = min(gaps, family)
    return bh_power([(real, lambda level: tests.power(gap, level, alpha))], family, alpha)[0]


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
