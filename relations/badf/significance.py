"""Significant associations within one group of stories (an arm, an identity category and a
location category), by one of two rules.

The ``evidence`` rule (the default for new analyses, `identity_tests`): each identity
against the rest of its group, for each concept: a of N lists of the identity hold it,
against rest_a of rest_N lists of the other identities; score = a/N - rest_a/rest_N. The
unit is the story: the two characters of one story are written together, so their lists are
compared within the story (an exact test stratified by story, `compare_to_rest_stratified`:
one table per two-character story holding the identity and another; the lists of
single-character stories are independent and form one stratum). The test is exact (sparse
tables are the rule here: a concept named 3 times), its smallest attainable p is kept for
Tarone's rule, and the caller corrects every test of the analysis together
(Benjamini-Hochberg). A kept association's score gets an interval with the story as the unit
too (`score_interval`): the cluster-robust (sandwich) interval of the difference of the two
shares, stories as clusters.

The ``paper`` rule (`tested_concepts`), as the paper ran it:

For identity d and concept c: ``a`` = the concept lists of d that contain c, ``m`` = the
smallest such count among the other identities, and the score S = (a - m) / N, clipped at
0. ``N`` is, as in the paper, the number of concept lists of d (``denominator = "lists"``);
the authors' released code divided by d's total number of concepts instead
(``denominator = "concepts"``). The test is scipy's chi-squared test of independence on the
table identity x (c present, c absent); a 2 x 2 table gets Yates' continuity correction,
scipy's default (``yates = False`` turns it off). A concept present in every list or in none
cannot be tested (p is NaN). An association is kept when S > 0 and p < alpha; the caller
adjusts the p-values for the false discovery rate over every test of the analysis.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.family_api import compare_to_rest_stratified

Denominator = Literal["lists", "concepts"]
Rule = Literal["evidence", "paper"]
# The stratum of the lists that are alone in their story (single-character arms).
_ALONE = "\x00alone"


@dataclass(frozen=True)
class ConceptList:
    case_id: str
    concepts: frozenset[str]
    size: int  # concepts before deduplication by unification (the released denominator)


@dataclass(frozen=True)
class ConceptTest:
    """One concept's test in one group, with its counts per identity."""

    concept: str
    present: dict[str, int]  # identity -> a
    lists: dict[str, int]  # identity -> N (concept lists)
    totals: dict[str, int]  # identity -> total concepts
    p: float
    scores: dict[str, float] = field(default_factory=dict)

    def score(self, identity: str) -> float:
        return self.scores.get(identity, 0.0)


def distinctiveness(a: int, others: Sequence[int], denominator: int) -> float:
    """S = (a - min(others)) / denominator, clipped at 0 (0 when undefined)."""
    if denominator <= 0 or not others:
        return 0.0
    return max(0.0, (a - min(others)) / denominator)


def chi2_p(present: Sequence[int], lists: Sequence[int], *, yates: bool = True) -> float:
    """p of the chi-squared test of identity x (present, absent); NaN when it cannot run."""
    table = [[a, n - a] for a, n in zip(present, lists, strict=True) if n > 0]
    if len(table) < 2:
        return math.nan
    if sum(r[0] for r in table) == 0 or sum(r[1] for r in table) == 0:
        return math.nan
    # Imported here: scipy.stats takes seconds to import, and every command imports this family.
    from scipy.stats import chi2_contingency

    result = chi2_contingency(table, correction=yates)
    return float(result.pvalue)


def tested_concepts(
    by_identity: Mapping[str, Sequence[ConceptList]],
    *,
    denominator: Denominator = "lists",
    yates: bool = True,
) -> list[ConceptTest]:
    """Every concept of the group, tested, with each identity's score."""
    identities = sorted(d for d, lists in by_identity.items() if lists)
    lists = {d: len(by_identity[d]) for d in identities}
    totals = {d: sum(c.size for c in by_identity[d]) for d in identities}
    present: dict[str, dict[str, int]] = {}
    for d in identities:
        for concept_list in by_identity[d]:
            for c in concept_list.concepts:
                present.setdefault(c, dict.fromkeys(identities, 0))[d] += 1
    out = []
    for concept in sorted(present):
        counts = present[concept]
        p = chi2_p([counts[d] for d in identities], [lists[d] for d in identities], yates=yates)
        scores = {}
        for d in identities:
            den = lists[d] if denominator == "lists" else totals[d]
            others = [counts[o] for o in identities if o != d]
            scores[d] = distinctiveness(counts[d], others, den)
        out.append(ConceptTest(concept, counts, lists, totals, p, scores))
    return out


def is_kept(score: float, p: float, alpha: float) -> bool:
    return score > 0 and not math.isnan(p) and p < alpha


@dataclass(frozen=True)
class IdentityTest:
    """One (concept, identity) of a group, against the other identities of the group."""

    concept: str
    identity: str
    a: int  # lists of the identity holding the concept
    n: int  # lists of the identity
    rest_a: int
    rest_n: int
    score: float  # a / n - rest_a / rest_n (NaN when a side is empty)
    p: float  # exact, stratified by story; NaN when no story holds both sides
    p_min: float  # the smallest p these margins allow (Tarone's rule)
    test: str


def identity_tests(by_identity: Mapping[str, Sequence[ConceptList]]) -> list[IdentityTest]:
    """Every (concept, identity) of a group tested against the rest, stratified by story
    (`ConceptList.case_id`); see the module docstring.

    A concept is named in a few stories of the group, and a stratum without it has no
    choice (it changes neither the test nor, beyond its counts of lists, the pooled rates):
    so each test is given the strata holding the concept, in their order, and the other
    strata summed into one without it (two, one per side, when no stratum holds both the
    identity and another, so that the test still cannot run). The test is the one all the
    strata give, to the last bit (tests/families/badf checks it against them), at a cost
    that grows with the concept's stories, not the group's; the null control repeats this
    on every shuffle.
    """
    identities = sorted(d for d, lists in by_identity.items() if lists)
    # story -> [(identity, concepts)]
    stories: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for d in identities:
        for concept_list in by_identity[d]:
            stories.setdefault(concept_list.case_id, []).append((d, concept_list.concepts))
    strata: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for story, lists in stories.items():
        strata.setdefault(story if len(lists) > 1 else _ALONE, []).extend(lists)
    sizes: list[Counter[str]] = []  # per stratum: identity -> lists
    # concept -> stratum index -> identity -> lists holding the concept
    holding: dict[str, dict[int, Counter[str]]] = {}
    for index, lists in enumerate(strata.values()):
        sizes.append(Counter(d for d, _ in lists))
        for d, cs in lists:
            for c in cs:
                holding.setdefault(c, {}).setdefault(index, Counter())[d] += 1
    totals = {d: sum(size[d] for size in sizes) for d in identities}
    everyone = sum(totals.values())
    meets_rest = {d: any(0 < size[d] < size.total() for size in sizes) for d in identities}
    out = []
    for concept in sorted(holding):
        where = sorted(holding[concept].items())
        for d in identities:
            tables = []
            n_in = rest_in = 0
            for index, present in where:
                k, n = present[d], sizes[index][d]
                all_n = sizes[index].total()
                tables.append((k, n, present.total() - k, all_n - n))
                n_in += n
                rest_in += all_n - n
            n_out, rest_out = totals[d] - n_in, everyone - totals[d] - rest_in
            if meets_rest[d]:
                tables.append((0, n_out, 0, rest_out))
            else:
                tables += [(0, n_out, 0, 0), (0, 0, 0, rest_out)]
            g = compare_to_rest_stratified(tables)
            out.append(
                IdentityTest(concept, d, g.k, g.n, g.rest_k, g.rest_n, g.diff, g.p, g.p_min, g.test)
            )
    return out


@dataclass(frozen=True)
class ScoreInterval:
    """The score a/N - rest_a/rest_N with its cluster-robust interval (stories as clusters)."""

    score: float
    se: float  # the cluster-robust standard error, small-sample corrected
    low: float
    high: float
    clusters: int  # stories holding a list of the identity or of the rest
    level: float


def score_interval(
    by_identity: Mapping[str, Sequence[ConceptList]],
    concept: str,
    identity: str,
    *,
    level: float = 0.95,
) -> ScoreInterval | None:
    """The interval of a/N - rest_a/rest_N for ``identity`` against the rest of its group,
    with the story (`ConceptList.case_id`) as the unit; None when a side is empty or fewer
    than two stories or three lists leave no variance to estimate.

    The score is the slope of the least-squares fit of y (1 when a list names the concept)
    on the identity indicator, over the group's lists; its variance is the sandwich with
    stories as clusters (a list alone in its story is its own cluster), with statsmodels'
    small-sample correction for ``cov_type="cluster"``: G/(G-1) * (M-1)/(M-2) for G stories
    and M lists (two parameters). The slope is sum_i w_i y_i with w_i = 1/N for the
    identity's lists and -1/rest_N for the others', so each story contributes
    (sum over its lists of w_i e_i)^2, e_i = y_i minus its side's share. The interval uses
    Student's t with G - 1 degrees of freedom (statsmodels' with ``use_t=True``): few
    stories, a wider interval; it is cut to [-1, 1]. With one list per story this is HC1's
    variance.
    """
    sums: dict[str, list[int]] = {}  # story -> [identity lists, named, rest lists, named]
    for d, lists in by_identity.items():
        side = 0 if d == identity else 2
        for concept_list in lists:
            row = sums.setdefault(concept_list.case_id, [0, 0, 0, 0])
            row[side] += 1
            row[side + 1] += concept in concept_list.concepts
    n = sum(r[0] for r in sums.values())
    rest_n = sum(r[2] for r in sums.values())
    clusters = len(sums)
    if n == 0 or rest_n == 0 or clusters < 2 or n + rest_n < 3:
        return None
    rate = sum(r[1] for r in sums.values()) / n
    rest_rate = sum(r[3] for r in sums.values()) / rest_n
    # Per story: sum of w_i e_i = (named - lists * rate) / N - (named - lists * rest) / rest_N.
    meat = math.fsum(
        ((r[1] - r[0] * rate) / n - (r[3] - r[2] * rest_rate) / rest_n) ** 2 for r in sums.values()
    )
    total = n + rest_n
    variance = meat * clusters / (clusters - 1) * (total - 1) / (total - 2)
    se = math.sqrt(variance)
    # Imported here: scipy.stats takes seconds to import, and every command imports this family.
    from scipy.stats import t

    half = float(t.ppf(0.5 + level / 2, clusters - 1)) * se
    score = rate - rest_rate
    # A difference of shares lies in [-1, 1]: the interval is cut there (as Newcombe's is).
    low, high = max(-1.0, score - half), min(1.0, score + half)
    return ScoreInterval(score, se, low, high, clusters, level)
