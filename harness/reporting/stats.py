"""The statistics behind a report's claims: intervals, tests, effect sizes and the false
discovery rate, all from scipy and statsmodels.

The stable API (families import these; nothing else here is public):

- `wilson_interval(k, n)`: 95 % Wilson interval of a proportion.
- `majority_per_case(pairs)`: repeats of one case summarised to one outcome per case.
- `compare_to_rest(k, n, rest_k, rest_n)`: one group against the rest of its table:
  Fisher's exact test (chi-squared with Yates' correction when every expected count is at
  least `CHI2_MIN_EXPECTED` and the table holds more than `CHI2_MIN_TOTAL` observations),
  the difference of rates (Newcombe) and the risk ratio (log, with 0.5 added to empty
  cells) with 95 % intervals. Returns a `GroupComparison`.
- `compare_groups(counts)`: every group against the rest of its context (e.g. the other
  groups of the same model), from ``{(*context, group): (k, n)}``.
- `compare_to_rest_stratified(strata)`: one group against the rest within each stratum
  (e.g. question type, template), combined: the exact conditional test given the strata
  (`stratified_exact_test`; one stratum: Fisher's), effect sizes of the pooled counts.
  Returns a `GroupComparison`.
- `mcnemar_exact(b, c)`: McNemar's exact test of paired outcomes from the discordant
  counts (b: positive only in the first variant, c: only in the second).
- `fdr_adjust(pvalues)`: Benjamini-Hochberg adjusted p-values and which are flagged.
- `TEST_COLUMNS` = ("p", "p_fdr", "flagged"): a report table that ends with these columns
  takes part in the report-wide correction (`harness.reporting.report.apply_fdr`); a section fills
  ``p`` and leaves ``p_fdr`` and ``flagged`` as None.
- `COMPARISON_COLUMNS` and `GroupComparison.cells()`: the columns every group-vs-rest row
  carries, in one order, rounded for a report.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import math
import re
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    NDArrayFloat = npt.NDArray[np.float64]

# numpy, scipy and statsmodels (with pandas) are imported by the functions that use them:
# every command imports this module through the harness package, and their imports take
# seconds of a process start that most commands (import, run, show) do not need.

K = TypeVar("K", bound=Hashable)

ALPHA = 0.05
CHI2_MIN_EXPECTED = 5.0
CHI2_MIN_TOTAL = 1000
TEST_COLUMNS = ("p", "p_fdr", "flagged")
COMPARISON_COLUMNS = (
    "rest_rate",
    "diff",
    "diff_low",
    "diff_high",
    "risk_ratio",
    "rr_low",
    "rr_high",
    "test",
    "p_min",
    *TEST_COLUMNS,
)


def report_number(x: float | None, digits: int = 4) -> float | None:
    """A number as a report shows it: rounded; None when undefined (NaN, infinite)."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits)


def load() -> None:
    """Imports the libraries the tests below come from (statsmodels pulls in pandas: about
    1.5-2 s), each of which imports them itself on first use: for a caller with a second
    process to wait for, so that the wait is not idle."""
    import scipy.stats  # noqa: F401
    import statsmodels.stats.contingency_tables
    import statsmodels.stats.multitest
    import statsmodels.stats.proportion  # noqa: F401


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """95 % Wilson score interval of ``successes`` out of ``n`` (NaN, NaN when n = 0)."""
    if n == 0:
        return (math.nan, math.nan)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=ALPHA, method="wilson")
    # Exact at the edges: rounding would otherwise leave 0/n or n/n outside its own interval.
    low = 0.0 if successes == 0 else max(0.0, float(low))
    high = 1.0 if successes == n else min(1.0, float(high))
    return (low, high)


def majority_per_case(outcomes: Iterable[tuple[K, bool]]) -> dict[K, bool]:
    """One outcome per case from its repeats: True when more than half of them are True,
    False when fewer; a tie (e.g. 1 of 2 repeats) is left out (`tied_cases` counts them).

    Repeats of one case are not independent observations (same prompt, same model), so a
    report counts each case once. A tie is no evidence either way: counting it as False
    (as this once did) biased every rate down whenever the number of repeats was even.
    """
    return {case: share > 0.5 for case, share in mean_per_case(outcomes).items() if share != 0.5}


class NotInCaseOrder(Exception):
    """Outcomes given to `majority_per_case_in_order` did not come in case id order: the
    caller tallies them again with `majority_per_case`, holding every case at once."""


# A planned case's id is "<relation>/<index>/r<repeat>@<model>" (`harness.running.plan`).
_REPEAT_AT = re.compile(r"/r\d+@")


def case_block(case_id: str) -> str:
    """What the ids of one planned case's repeats on every model share ("<relation>/<index>
    /r"): ids with a common beginning are neighbours in case id order, so a stream in that
    order holds each case's repeats together. An id of another shape is its own block."""
    found = _REPEAT_AT.search(case_id)
    return case_id[: found.start() + 2] if found else case_id


def majority_per_case_in_order(outcomes: Iterable[tuple[str, K, bool]]) -> Iterator[tuple[K, bool]]:
    """`majority_per_case` of (case id, case, positive) given in case id order, yielded as
    each block of one planned case (`case_block`) ends: the same pairs in the same order,
    with one case's repeats held at a time instead of every case's. Raises
    `NotInCaseOrder` when the ids are not in order (the caller then uses
    `majority_per_case`)."""
    tally: dict[K, list[int]] = {}
    block: str | None = None
    last = ""
    for case_id, case, positive in outcomes:
        if case_id < last:
            raise NotInCaseOrder(case_id)
        last = case_id
        here = case_block(case_id)
        if here != block:
            # An id of another shape among a planned case's ids would split that case.
            if block is not None and here == case_id and case_id.startswith(block):
                raise NotInCaseOrder(case_id)
            yield from _majorities(tally)
            tally, block = {}, here
        counts = tally.setdefault(case, [0, 0])
        counts[0 if positive else 1] += 1
    yield from _majorities(tally)


def _majorities(tally: dict[K, list[int]]) -> Iterator[tuple[K, bool]]:
    for case, (pos, neg) in tally.items():
        share = pos / (pos + neg)
        if share != 0.5:
            yield case, share > 0.5


def tied_cases(outcomes: Iterable[tuple[K, bool]]) -> int:
    """How many cases `majority_per_case` leaves out: as many True repeats as False."""
    return sum(1 for share in mean_per_case(outcomes).values() if share == 0.5)


def mean_per_case(outcomes: Iterable[tuple[K, bool]]) -> dict[K, float]:
    """Each case's share of True repeats: the per-case summary that keeps a tie as 0.5."""
    tally: dict[K, list[int]] = {}
    for case, positive in outcomes:
        counts = tally.setdefault(case, [0, 0])
        counts[0 if positive else 1] += 1
    return {case: pos / (pos + neg) for case, (pos, neg) in tally.items()}


def mean_of_shares_interval(total: float, n: int) -> tuple[float, float, float]:
    """The mean of ``n`` per-unit shares summing to ``total`` (each share in [0, 1], one per
    independent unit, e.g. a case's share of violated repeats) with a 95 % interval: the
    Wilson interval with the units as n. Conservative: a [0, 1] variable of mean m has
    variance at most m(1 - m), the binomial variance Wilson assumes (equal when every share
    is 0 or 1, where it is the interval of a proportion). (NaN, NaN, NaN) without a unit."""
    if n == 0:
        return (math.nan, math.nan, math.nan)
    total = float(total)
    mean = total / n
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(total, n, alpha=ALPHA, method="wilson")
    low = 0.0 if total == 0 else max(0.0, float(low))
    high = 1.0 if total == n else min(1.0, float(high))
    return (mean, low, high)


def cluster_rate_interval(clusters: Sequence[tuple[int, int]]) -> tuple[float, float, float]:
    """A rate pooled over correlated rows (k positives of n rows per cluster: the terms of
    one reply) with a cluster-robust 95 % interval: the Wilson interval at the effective
    sample size n / deff, where the design effect deff (at least 1) is the cluster-robust
    (CR1) variance of the ratio estimator over the binomial one. Clusters alike (deff = 1)
    give the Wilson interval of the pooled rows. (NaN, NaN, NaN) without a row."""
    k = sum(c[0] for c in clusters)
    n = sum(c[1] for c in clusters)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    rate = k / n
    g = sum(1 for c in clusters if c[1] > 0)
    deff = 1.0
    if 0 < rate < 1 and g > 1:
        robust = g / (g - 1) * sum((ck - rate * cn) ** 2 for ck, cn in clusters) / n**2
        deff = max(1.0, robust / (rate * (1 - rate) / n))
    n_eff = n / deff
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(rate * n_eff, n_eff, alpha=ALPHA, method="wilson")
    low = 0.0 if k == 0 else max(0.0, float(low))
    high = 1.0 if k == n else min(1.0, float(high))
    return (rate, low, high)


@dataclass(frozen=True)
class GroupComparison:
    """A group's rate against the rest of its table, with the test and effect sizes."""

    k: int
    n: int
    rest_k: int
    rest_n: int
    rate: float
    low: float
    high: float
    rest_rate: float
    diff: float
    diff_low: float
    diff_high: float
    risk_ratio: float
    rr_low: float
    rr_high: float
    test: str  # "fisher", "chi2" or "none" (a side without observations)
    p: float
    # The smallest p the test could give with these margins (Tarone's rule: a test whose
    # smallest attainable p exceeds alpha can never be significant and is left out of the
    # correction); NaN when the test could not run.
    p_min: float = 0.0

    def cells(self) -> list[float | str | None]:
        """The values of `COMPARISON_COLUMNS` for a report row (p_fdr/flagged left None)."""
        return [
            report_number(self.rest_rate),
            report_number(self.diff),
            report_number(self.diff_low),
            report_number(self.diff_high),
            report_number(self.risk_ratio),
            report_number(self.rr_low),
            report_number(self.rr_high),
            self.test,
            report_number(self.p_min, 6),
            report_number(self.p, 6),
            None,
            None,
        ]


def two_by_two_test(table: Sequence[Sequence[int]]) -> tuple[str, float]:
    """Two-sided test of independence of a 2x2 table: Fisher's exact test, or chi-squared
    (Yates' correction) when the table is large and no expected count is small."""
    from scipy.stats import chi2_contingency, fisher_exact

    (a, b), (c, d) = table
    total = a + b + c + d
    rows, cols = (a + b, c + d), (a + c, b + d)
    if total > CHI2_MIN_TOTAL and min(rows) * min(cols) / total >= CHI2_MIN_EXPECTED:
        result = chi2_contingency([[a, b], [c, d]], correction=True)
        return "chi2", float(result.pvalue)
    return "fisher", float(fisher_exact([[a, b], [c, d]], alternative="two-sided").pvalue)


# Pure in its four counts, and reports repeat them (a long tail of terms named 0 of 3
# times): cached, the term tables of a large report build several times faster.
@functools.lru_cache(maxsize=1 << 16)
def compare_to_rest(k: int, n: int, rest_k: int, rest_n: int) -> GroupComparison:
    """``k`` of ``n`` in the group against ``rest_k`` of ``rest_n`` in the rest."""
    effects = _pooled_effects(k, n, rest_k, rest_n)
    if n == 0 or rest_n == 0:
        return effects
    test, p = two_by_two_test([[k, n - k], [rest_k, rest_n - rest_k]])
    return dataclasses.replace(
        effects, test=test, p=p, p_min=exact_min_p([((k, n - k), (rest_k, rest_n - rest_k))])
    )


@functools.lru_cache(maxsize=1 << 16)
def _pooled_effects(k: int, n: int, rest_k: int, rest_n: int) -> GroupComparison:
    """`compare_to_rest` without its test (test "none", p and p_min NaN): the rates and
    effect sizes, which the stratified test keeps while it replaces the pooled test."""
    rate = k / n if n else math.nan
    rest_rate = rest_k / rest_n if rest_n else math.nan
    low, high = wilson_interval(k, n)
    nan = math.nan
    if n == 0 or rest_n == 0:
        return GroupComparison(
            k, n, rest_k, rest_n, rate, low, high, rest_rate, nan, nan, nan, nan, nan, nan,
            "none", nan, nan,
        )  # fmt: skip
    from statsmodels.stats.proportion import confint_proportions_2indep

    diff_low, diff_high = confint_proportions_2indep(
        k, n, rest_k, rest_n, method="newcomb", compare="diff", alpha=ALPHA
    )
    rr_low, rr_high = confint_proportions_2indep(
        k, n, rest_k, rest_n, method="log-adjusted", compare="ratio", alpha=ALPHA
    )
    ratio = rate / rest_rate if rest_rate > 0 else (math.nan if rate == 0 else math.inf)
    return GroupComparison(
        k, n, rest_k, rest_n, rate, low, high, rest_rate, rate - rest_rate,
        max(-1.0, float(diff_low)), min(1.0, float(diff_high)),
        ratio, float(rr_low), float(rr_high), "none", nan, nan,
    )  # fmt: skip


def compare_groups(
    counts: dict[tuple[str, ...], tuple[int, int]],
) -> list[tuple[tuple[str, ...], GroupComparison]]:
    """Each ``(*context, group)`` against the other groups of the same context, sorted by key.

    ``counts`` maps a key to (positives, observations); the rest of a group is the sum over
    the other groups sharing its context (the key without its last element).
    """
    totals: dict[tuple[str, ...], list[int]] = {}
    for key, (k, n) in counts.items():
        total = totals.setdefault(key[:-1], [0, 0])
        total[0] += k
        total[1] += n
    out = []
    for key, (k, n) in sorted(counts.items()):
        all_k, all_n = totals[key[:-1]]
        out.append((key, compare_to_rest(k, n, all_k - k, all_n - n)))
    return out


def compare_to_rest_stratified(strata: Sequence[tuple[int, int, int, int]]) -> GroupComparison:
    """A group against the rest within strata, each given as (k, n, rest_k, rest_n).

    For groups that meet the rest inside strata with their own base rates (a question type,
    a template): pooling the counts would mix the stratum effect into the group effect
    whenever the group's share differs between strata, and would throw away the matching.
    The test is the exact conditional test of no association given the strata (the
    Mantel-Haenszel setting, `stratified_exact_test`); p = 1.0 when no stratum holding both
    sides has both outcomes, NaN and test "none" when no stratum holds both sides. Rates
    and effect sizes are those of the pooled counts (`compare_to_rest`).
    """
    k, n, rest_k, rest_n = (sum(s[i] for s in strata) for i in range(4))
    # The pooled rates and effects only: the pooled test would be computed for nothing.
    pooled = _pooled_effects(k, n, rest_k, rest_n)
    tables = [((a, b - a), (c, d - c)) for a, b, c, d in strata if b > 0 and d > 0]
    if not tables:
        return dataclasses.replace(pooled, test="none", p=math.nan, p_min=math.nan)
    p, p_min = stratified_exact_p_and_min(tables)
    return dataclasses.replace(pooled, test="cmh-exact", p=p, p_min=p_min)


def stratified_exact_p_and_min(
    tables: Sequence[Sequence[Sequence[int]]],
) -> tuple[float, float]:
    """(`stratified_exact_test`, `exact_min_p`) of ``tables`` from one conditional
    distribution: the same values as the two calls, at half the cost.

    Only the tables with a choice enter the distribution (the others change nothing), and
    they repeat (BADF's shuffles test thousands of concepts named in one or two stories of
    the same shape): the pair is cached by those tables, in their order (the convolution's
    order fixes the last bits of p). Only small keys are cached: a test over a large
    campaign's strata (a stratum a case) would keep every one of its tables in the cache,
    and such a key seldom repeats.
    """
    key = _with_choice(tables)
    if len(key) > CACHED_STRATA:
        return _exact_p_and_min.__wrapped__(key)
    return _exact_p_and_min(key)


# The most tables with a choice a cached `_exact_p_and_min` key holds (see above).
CACHED_STRATA = 64


def _with_choice(
    tables: Sequence[Sequence[Sequence[int]]],
) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """The tables `_conditional_distribution` uses (not empty, more than one possible count),
    in order, as a hashable key."""
    out = []
    for (a, b), (c, d) in tables:
        group, positives = a + b, a + c
        if group + c + d == 0 or max(0, positives - (c + d)) == min(group, positives):
            continue
        out.append(((int(a), int(b)), (int(c), int(d))))
    return tuple(out)


@functools.lru_cache(maxsize=1 << 16)
def _exact_p_and_min(
    tables: tuple[tuple[tuple[int, int], tuple[int, int]], ...],
) -> tuple[float, float]:
    found = _conditional_distribution(tables)
    if found is None:
        return 1.0, 1.0
    dist, observed = found
    return _p_of(dist, observed), _p_min_of(dist)


def _p_of(dist: NDArrayFloat, observed: int) -> float:
    """Fisher's rule: the probability of the sums no more likely than the observed one."""
    return float(min(1.0, dist[dist <= dist[observed] * (1 + 1e-7)].sum()))


def _p_min_of(dist: NDArrayFloat) -> float:
    """The p of the least likely sum."""
    return float(min(1.0, dist[dist <= dist.min() * (1 + 1e-7)].sum()))


def stratified_exact_test(tables: Sequence[Sequence[Sequence[int]]]) -> float:
    """Two-sided exact p-value of no association in 2x2 tables given their strata.

    Conditional on every table's margins, the count in each table's top-left cell is
    hypergeometric (scipy), and their sum, the Mantel-Haenszel statistic, has the
    convolution of those distributions; p sums the probabilities of the sums no more
    likely than the observed one (Fisher's rule, with scipy's relative tolerance), so one
    table gives Fisher's exact test. Exact where the chi-squared approximation of
    Cochran-Mantel-Haenszel's test is not: on sparse strata (2 positives of 6 against 0 of
    60) it gives p ~ 1e-5 where the exact p is ~ 1e-2.
    """
    found = _conditional_distribution(tables)
    if found is None:
        return 1.0
    dist, observed = found
    return _p_of(dist, observed)


def exact_min_p(tables: Sequence[Sequence[Sequence[int]]]) -> float:
    """The smallest p `stratified_exact_test` (one table: Fisher's exact test) can give for
    tables with these margins: the p of the least likely sum. Tarone's rule leaves a test
    whose smallest attainable p exceeds alpha out of a correction (it can never be
    significant, and counting it only costs the others power). 1.0 when no table has a
    choice (every margin fixes the count)."""
    found = _conditional_distribution(tables)
    if found is None:
        return 1.0
    dist, _ = found
    return _p_min_of(dist)


def _conditional_distribution(
    tables: Sequence[Sequence[Sequence[int]]],
) -> tuple[NDArrayFloat, int] | None:
    """The distribution of the Mantel-Haenszel statistic given every table's margins, and
    the index of the observed sum in it (None when no table has a choice: p is then 1)."""
    import numpy as np
    from scipy.stats import hypergeom

    # Every table's support in one call: scipy's per-call overhead (argument checks,
    # broadcasting) is most of the cost of a small table, and the values are elementwise.
    # exp(logpmf), not pmf (bench/RESULTS.md has the timings): logpmf (log-beta terms)
    # agrees to about 1e-13 relative, far inside the 1e-7 tie tolerance of the callers.
    # Each table's values cover its whole support, so they are scaled to sum to 1: a
    # one-point support is then certain (p = 1.0) rather than 1 - 2e-16.
    counts, margins, sizes = [], [], []
    observed = 0
    for (a, b), (c, d) in tables:
        group, total, positives = a + b, a + b + c + d, a + c
        if total == 0:
            continue  # an empty table says nothing
        low, high = max(0, positives - (c + d)), min(group, positives)
        if low == high:
            # One possible count (no positive, say): its distribution is certain and
            # convolving with it changes nothing, so it is left out (the same p; a stratum
            # without a choice is most strata of a large campaign).
            continue
        counts.append(np.arange(low, high + 1))
        margins.append((total, group, positives))
        sizes.append(high - low + 1)
        observed += a - low
    if not counts:
        return None
    total_, group_, positives_ = (np.repeat([m[i] for m in margins], sizes) for i in range(3))
    pmf = np.exp(hypergeom.logpmf(np.concatenate(counts), total_, group_, positives_))
    dist = np.ones(1)
    for part in np.split(pmf, np.cumsum(sizes)[:-1]):
        dist = np.convolve(dist, part / part.sum())
    return dist, observed


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (1.0 when there are none)."""
    from statsmodels.stats.contingency_tables import mcnemar

    if b + c == 0:
        return 1.0
    return float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)


def mcnemar_min_p(b: int, c: int) -> float:
    """The smallest p `mcnemar_exact` can give with ``b + c`` discordant pairs (all on one
    side): 2 * 0.5 ** (b + c), at most 1."""
    return min(1.0, 2 * 0.5 ** (b + c))


@dataclass(frozen=True)
class FamilyCorrection:
    """Benjamini-Hochberg within one family of hypotheses, after Tarone's rule."""

    adjusted: list[float]  # NaN: not in the correction (could not run, or dropped)
    flagged: list[bool]
    tested: int  # tests in the correction
    dropped: int  # tests left out by Tarone's rule (smallest attainable p > alpha)


# Which tests Tarone's rule keeps in a family (`fdr_adjust_tarone`): "alpha" (the default)
# those whose smallest attainable p is at most alpha; "gilbert" Tarone's 1990 iterative
# family size, as Gilbert (2005) uses it before Benjamini-Hochberg.
TARONE_RULES = ("alpha", "gilbert")


def tarone_family_size(min_pvalues: Sequence[float], alpha: float = ALPHA) -> int:
    """Tarone's (1990) family size K: the smallest K >= 1 such that at most K of the tests
    can reach alpha / K (smallest attainable p <= alpha / K). The count of such tests only
    falls as K grows, so the first K that holds is found by walking K up."""
    lows = sorted(m for m in min_pvalues if not math.isnan(m))
    k = 1
    while True:
        # lows is sorted: the tests that can reach alpha / k are a prefix of it.
        reach = bisect.bisect_right(lows, alpha / k)
        if reach <= k:
            return k
        k += 1


def fdr_adjust_tarone(
    pvalues: Sequence[float],
    min_pvalues: Sequence[float],
    alpha: float = ALPHA,
    rule: str = "alpha",
) -> FamilyCorrection:
    """Benjamini-Hochberg over the tests of one family that can reach significance.

    Tarone's rule: a discrete test whose smallest attainable p (``min_pvalues``, given its
    margins; 0 for a continuous test) exceeds ``alpha`` can never be significant, even
    uncorrected; it is dropped before the correction, so it does not dilute the others'.
    Which tests are dropped depends on the margins only, not on the observed p-values, so
    BH over the rest keeps its false discovery rate. NaN p-values (tests that could not
    run) are neither tested nor dropped.

    ``rule`` "gilbert" drops more: Tarone's (1990) iterative rule finds the family size K
    (`tarone_family_size`) and keeps only the tests that can reach alpha / K; BH then runs
    over those at alpha (Gilbert 2005). Still a function of the margins only.
    """
    if rule not in TARONE_RULES:
        raise ValueError(f"unknown Tarone rule {rule!r}: one of {', '.join(TARONE_RULES)}")
    runnable = [m for p, m in zip(pvalues, min_pvalues, strict=True) if not math.isnan(p)]
    bar = alpha if rule == "alpha" else alpha / tarone_family_size(runnable, alpha)
    keep = [
        i
        for i, (p, m) in enumerate(zip(pvalues, min_pvalues, strict=True))
        if not math.isnan(p) and not (m > bar)
    ]
    dropped = sum(
        1 for p, m in zip(pvalues, min_pvalues, strict=True) if not math.isnan(p) and m > bar
    )
    adjusted = [math.nan] * len(pvalues)
    flagged = [False] * len(pvalues)
    sub_adjusted, sub_flagged = fdr_adjust([pvalues[i] for i in keep], alpha)
    for i, q, f in zip(keep, sub_adjusted, sub_flagged, strict=True):
        adjusted[i], flagged[i] = q, f
    return FamilyCorrection(adjusted, flagged, len(keep), dropped)


def fdr_adjust(pvalues: Sequence[float], alpha: float = ALPHA) -> tuple[list[float], list[bool]]:
    """Benjamini-Hochberg adjusted p-values and which are significant at ``alpha``.

    NaN p-values (tests that could not run) stay NaN, are never flagged and do not count
    as tests.
    """
    index = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    adjusted = [math.nan] * len(pvalues)
    flagged = [False] * len(pvalues)
    if index:
        from statsmodels.stats.multitest import multipletests

        reject, corrected, _, _ = multipletests(
            [pvalues[i] for i in index], alpha=alpha, method="fdr_bh"
        )
        for i, r, q in zip(index, reject, corrected, strict=True):
            adjusted[i], flagged[i] = float(q), bool(r)
    return adjusted, flagged
