"""MetaQuerier's report sections: which terms each source turn attributes to a gender
(a consistent stereotype), which terms violated the relations, per social group and term,
with group-vs-rest tests, and which terms violated together.

A term's rows count (case, term) pairs: a term occurs once in a case, so its pairs are
independent cases; the repeats of one case are summarised by majority
(`harness.reporting.stats.majority_per_case`; a tie is left out), so a case weighs the same
however often it was repeated. A group's rows pool the group's terms, and the terms of one
reply are correlated: the case is the unit there, by a cluster-robust interval and a test
stratified by case (the group's terms against the other terms of the same reply). Terms
that state a gender by definition ("woman") are left out of attribution: naming them is no
stereotype.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from harness.family_api import (
    COMPARISON_COLUMNS,
    Forest,
    Heatmap,
    Network,
    ReportContext,
    ReportSection,
    Table,
    VerdictRow,
    cluster_rate_interval,
    compare_groups,
    compare_to_rest,
    compare_to_rest_stratified,
    majority_per_case,
    mcnemar_exact,
    mcnemar_min_p,
    paired_excess,
    report_number,
    rounded,
)

UNIT_NOTE = (
    "a (case, term) pair, repeats of a case summarised by majority (a tie is left out); "
    "95% Wilson interval; each row tested against the rest of its model{ctx} "
    "(Fisher's exact test, chi-squared when large), diff and risk ratio with 95% intervals; "
    "p_fdr: Benjamini-Hochberg within the relation (Tarone's rule: tests with p_min > alpha "
    "left out)"
)
GROUP_NOTE = (
    "a group pools its terms, and the terms of one reply are correlated: rate over (case, "
    "term) pairs (repeats by majority, a tie left out) with a 95% cluster-robust interval "
    "(Wilson at the effective size, clustered by case); each row tested against the other "
    "groups of its model{ctx} within each case (exact test stratified by case, cmh-exact); "
    "diff and risk ratio intervals clustered by case too (Newcombe and log-adjusted at each "
    "side's effective size); p_fdr: "
    "Benjamini-Hochberg within the relation (Tarone's rule: tests with p_min > alpha left "
    "out)"
)
TERM_UNIT = "a case (a term occurs once in a case: its (case, term) pairs are independent)"
GROUP_UNIT = "a case (the group's terms of one reply form one cluster)"
RATE_COLUMNS = ["rate", "ci95_low", "ci95_high", *COMPARISON_COLUMNS]

if TYPE_CHECKING:
    import networkx as nx


@functools.cache
def _explicitly_gendered() -> frozenset[str]:
    import relations.metaquerier.corpus as corpus

    return frozenset(t.text for t in corpus.social_terms() if t.gender)


def _is_metaquerier(relation: str) -> bool:
    return relation.startswith("metaquerier.")


def _valid(ctx: ReportContext) -> Iterable[tuple[VerdictRow, dict[str, Any]]]:
    for v, data in ctx.relation_verdicts_with_data_of(_is_metaquerier):
        if v.outcome in ("HELD", "VIOLATED"):
            yield v, data


# A planned case's id is "<relation>/<index>/r<repeat>@<model>": its repeats and its models
# share the id up to "/r", and ids sharing a beginning are neighbours in case id order.
_REPEAT_AT = re.compile(r"/r\d+@")

Block = Iterable[tuple[VerdictRow, dict[str, Any]]]
T = TypeVar("T")


class _NotGrouped(Exception):
    """The verdicts did not come grouped by case (a log whose order the stream cannot
    follow), or a term's group changed between cases: tallies finished one case at a time
    would then differ from those of the whole campaign, so the section is built again
    from one block holding every verdict (the units of every case held at once)."""


def _case_blocks(ctx: ReportContext) -> Iterator[list[tuple[VerdictRow, dict[str, Any]]]]:
    """The valid verdicts with their data, one block per planned case (every repeat of it
    on every model): the stream comes in case id order, so each block is complete when the
    next begins and the report holds one case's units at a time. Raises `_NotGrouped`
    when the order is not case id order."""
    block: list[tuple[VerdictRow, dict[str, Any]]] = []
    prefix: str | None = None
    last = ""
    for v, data in _valid(ctx):
        case_id = v.case_id
        if case_id < last:
            raise _NotGrouped(case_id)
        last = case_id
        found = _REPEAT_AT.search(case_id)
        key = case_id[: found.start() + 2] if found else case_id
        if key != prefix:
            # An id of another shape inside a planned case's ids would split that case.
            if prefix is not None and found is None and case_id.startswith(prefix):
                raise _NotGrouped(case_id)
            if block:
                yield block
            block, prefix = [], key
        block.append((v, data))
    if block:
        yield block


def _by_case(ctx: ReportContext, build: Callable[[Iterable[Block], bool], T]) -> T:
    """``build`` over the blocks of one case each (`_case_blocks`, strict: a term must keep
    its group), or, when the log's order does not allow it, over one block of every
    verdict (not strict: a term's group is the one of its last occurrence)."""
    try:
        return build(_case_blocks(ctx), True)
    except _NotGrouped:
        return build([_valid(ctx)], False)


class _GroupOf(dict[str, str]):
    """Term -> social group. Strict: a term given another group than before raises
    `_NotGrouped` (a case's units were tallied under the group it had then)."""

    def __init__(self, strict: bool) -> None:
        super().__init__()
        self.strict = strict

    def note(self, term: str, group: str) -> None:
        if self.strict:
            old = self.setdefault(term, group)
            if old != group:
                raise _NotGrouped(term)
        else:
            self[term] = group


class _RateTally:
    """The counts of `_RateTally`, added one block of units at a time."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, ...], list[int]] = {}

    def add(
        self,
        units: dict[tuple[str, ...], bool],
        key_of: Callable[[tuple[str, ...]], tuple[str, ...]],
    ) -> None:
        for unit, positive in units.items():
            c = self.counts.setdefault(key_of(unit), [0, 0])
            c[0] += positive
            c[1] += 1

    def rows(self) -> list[tuple[tuple[str, ...], list[Any]]]:
        """Rows of rate, interval and test for each key (against the rest of its context)."""
        out = []
        for key, g in compare_groups({k: (v[0], v[1]) for k, v in self.counts.items()}):
            out.append(
                (key, [g.n, g.k, rounded(g.rate), rounded(g.low), rounded(g.high), *g.cells()])
            )
        return out


class _Column(Sequence[Any]):
    """A sequence of tuples made on each pass from columns of integers held compactly (4
    bytes a row): the strata and clusters of a group over a million cases, read by the
    statistics without a tuple of each held at once."""

    def __init__(self, make: Callable[[], Iterator[tuple[int, ...]]], size: int) -> None:
        self._make, self._size = make, size

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return self._make()

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        return list(self._make())[index]


class _ClusteredTally:
    """The per-case counts of `_ClusteredTally`, added one block of units at a time: per
    context, each case's positives and pairs over all its groups, and per group of the
    context its own in the same case order (0 of 0 where the case had none of its terms)."""

    def __init__(self) -> None:
        self.totals: dict[tuple[str, ...], tuple[array[int], array[int]]] = {}
        self.groups: dict[tuple[str, ...], dict[str, tuple[array[int], array[int]]]] = {}

    def add(
        self,
        units: dict[tuple[str, ...], bool],
        key_of: Callable[[tuple[str, ...]], tuple[str, ...]],
    ) -> None:
        # (context key, case) -> group -> [positives, pairs]
        per_case: dict[tuple[tuple[str, ...], str], dict[str, list[int]]] = {}
        for unit, positive in units.items():
            key = key_of(unit)
            c = per_case.setdefault((key[:-1], unit[2]), {}).setdefault(key[-1], [0, 0])
            c[0] += positive
            c[1] += 1
        for (context, _), groups in per_case.items():
            all_k, all_n = self.totals.setdefault(context, (array("i"), array("i")))
            mine = self.groups.setdefault(context, {})
            for group in groups:
                if group not in mine:
                    mine[group] = (array("i", [0]) * len(all_k), array("i", [0]) * len(all_k))
            all_k.append(sum(c[0] for c in groups.values()))
            all_n.append(sum(c[1] for c in groups.values()))
            for group, (ks, ns) in mine.items():
                k, n = groups.get(group, (0, 0))
                ks.append(k)
                ns.append(n)

    def rows(self) -> list[tuple[tuple[str, ...], list[Any]]]:
        """The rows of `_ClusteredTally`, sorted by key."""
        keys = sorted((*context, group) for context, mine in self.groups.items() for group in mine)
        out = []
        for key in keys:
            all_k, all_n = self.totals[key[:-1]]
            ks, ns = self.groups[key[:-1]][key[-1]]
            cases = len(all_k)

            def strata(
                ks: array[int] = ks, ns: array[int] = ns, ak: array[int] = all_k,
                an: array[int] = all_n,
            ) -> Iterator[tuple[int, ...]]:  # fmt: skip
                return ((k, n, a - k, b - n) for k, n, a, b in zip(ks, ns, ak, an, strict=True))

            def clusters(ks: array[int] = ks, ns: array[int] = ns) -> Iterator[tuple[int, ...]]:
                return ((k, n) for k, n in zip(ks, ns, strict=True) if n)

            def rest(
                ks: array[int] = ks, ns: array[int] = ns, ak: array[int] = all_k,
                an: array[int] = all_n,
            ) -> Iterator[tuple[int, ...]]:  # fmt: skip
                return ((a - k, b - n) for k, n, a, b in zip(ks, ns, ak, an, strict=True) if b - n)

            mine = _Column(clusters, sum(1 for n in ns if n))
            g = compare_to_rest_stratified(_Column(strata, cases))
            rate, low, high = cluster_rate_interval(mine)
            if g.n and g.rest_n:
                others = _Column(rest, sum(1 for n, a in zip(ns, all_n, strict=True) if a - n))
                lo, hi, rr_lo, rr_hi = clustered_intervals(
                    g.k, g.n, g.rest_k, g.rest_n, mine, others
                )
                g = dataclasses.replace(g, diff_low=lo, diff_high=hi, rr_low=rr_lo, rr_high=rr_hi)
            out.append((key, [g.n, g.k, rounded(rate), rounded(low), rounded(high), *g.cells()]))
        return out


def design_effect(clusters: Sequence[tuple[int, int]]) -> float:
    """How much clustering inflates a pooled rate's variance: the cluster-robust (CR1)
    variance of the ratio estimator over the binomial one, at least 1 (the design effect
    `harness.reporting.stats.cluster_rate_interval` uses); 1 without variation."""
    k = sum(c[0] for c in clusters)
    n = sum(c[1] for c in clusters)
    g = sum(1 for c in clusters if c[1] > 0)
    if n == 0 or g < 2 or k in (0, n):
        return 1.0
    rate = k / n
    robust = g / (g - 1) * sum((ck - rate * cn) ** 2 for ck, cn in clusters) / n**2
    return max(1.0, robust / (rate * (1 - rate) / n))


def clustered_intervals(
    k: int,
    n: int,
    rest_k: int,
    rest_n: int,
    group: Sequence[tuple[int, int]],
    rest: Sequence[tuple[int, int]],
) -> tuple[float, float, float, float]:
    """The diff (Newcombe) and risk-ratio (log, adjusted) 95 % intervals of ``k`` of ``n``
    against ``rest_k`` of ``rest_n``, each side taken at its effective size (its counts
    divided by its design effect over its clusters, the cases), so that the correlated terms
    of one reply do not narrow them: (diff_low, diff_high, rr_low, rr_high)."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    d1, d0 = design_effect(group), design_effect(rest)
    k1, n1, k0, n0 = k / d1, n / d1, rest_k / d0, rest_n / d0
    diff_low, diff_high = confint_proportions_2indep(
        k1, n1, k0, n0, method="newcomb", compare="diff", alpha=0.05
    )
    rr_low, rr_high = confint_proportions_2indep(
        k1, n1, k0, n0, method="log-adjusted", compare="ratio", alpha=0.05
    )
    return max(-1.0, float(diff_low)), min(1.0, float(diff_high)), float(rr_low), float(rr_high)


def _attribution_pairs(
    block: Block, explicit: frozenset[str], same: _Canonical, group_of: _GroupOf
) -> Iterator[tuple[tuple[str, ...], bool]]:
    """(model, gender, case, term) -> named in the source turn, for each repeat's term;
    notes each term's group on the way."""
    for v, data in block:
        named = set(v.evidence.get("source_named") or [])
        gender = same(str(data.get("gender") or v.evidence.get("gender") or ""))
        term_groups: dict[str, str] = data.get("groups") or {}
        model, case = same(v.model), v.case_key
        for term in data.get("terms") or []:
            if term in explicit:
                continue
            term = same(term)
            yield (model, gender, case, term), term in named
            group_of.note(term, same(term_groups.get(term, "unknown")))


class _Canonical(dict[str, str]):
    """One string object for each distinct text (models, terms, groups): the units of a
    report share them instead of holding a copy each, as read from each row."""

    def __call__(self, text: str) -> str:
        return self.setdefault(text, text)


def _attribution_tallies(
    blocks: Iterable[Block], strict: bool
) -> tuple[_ClusteredTally, _RateTally, dict[str, str]] | None:
    """The attribution units' tallies per (model, gender, group) and per (model, gender,
    term), fed one block at a time, and term -> group; None without a unit."""
    explicit, same, group_of = _explicitly_gendered(), _Canonical(), _GroupOf(strict)
    by_group, by_term = _ClusteredTally(), _RateTally()
    seen = False
    for block in blocks:
        units = majority_per_case(_attribution_pairs(block, explicit, same, group_of))
        seen = seen or bool(units)
        by_group.add(units, lambda u: (u[0], u[1], group_of[u[3]]))
        by_term.add(units, lambda u: (u[0], u[1], u[3]))
    return (by_group, by_term, group_of) if seen else None


def attribution(ctx: ReportContext) -> list[Table]:
    tallies = _by_case(ctx, _attribution_tallies)
    if tallies is None:
        return []
    group_tally, term_tally, group_of = tallies
    by_group = group_tally.rows()
    by_term = term_tally.rows()
    limit = int(ctx.options.get("top", 15))
    # Terms are many: the table keeps the ones with the smallest p per model and gender; the
    # correction still counts every term tested.
    by_term.sort(key=lambda r: (r[0][0], r[0][1], r[1][-3] if r[1][-3] is not None else 2.0))
    kept: Counter[tuple[str, ...]] = Counter()
    term_rows = []
    for (model, gender, term), cells in by_term:
        kept[(model, gender)] += 1
        term_rows.append(
            ([model, gender, term, group_of.get(term, "unknown"), *cells], kept[(model, gender)])
        )
    columns = ["asked", "named", *RATE_COLUMNS]
    return [
        Table(
            "metaquerier_attribution_by_group",
            "Source-turn attribution: how often a term without an explicit gender is named "
            "'definitely' that gender, per social group",
            ["model", "gender", "group", *columns],
            [[*key, *cells] for key, cells in by_group],
            plot=(Heatmap(("group",), ("model", "gender"), "rate", flag="flagged"),),
            note="a consistent stereotype shows here, not in the violation rate; "
            + GROUP_NOTE.format(ctx=" and gender"),
            unit=GROUP_UNIT,
            claims="metaquerier.attribution",
        ),
        Table(
            "metaquerier_attribution_by_term",
            "Source-turn attribution per term (smallest p first)",
            ["model", "gender", "term", "group", *columns],
            [row for row, rank in term_rows],
            note=f"the {limit} terms with the smallest p per model and gender are shown; "
            + UNIT_NOTE.format(ctx=" and gender (other terms)"),
            keep=[rank <= limit for row, rank in term_rows],
            unit=TERM_UNIT,
            claims="metaquerier.attribution",
        ),
    ]


def _at_risk(v: VerdictRow, data: dict[str, Any]) -> list[str]:
    """The terms that could violate: MR1 the follow-up list, MR2 the source list (and the
    violating terms themselves, for logs whose evidence lacks the lists)."""
    listed = v.evidence.get("follow_terms") if v.relation == "metaquerier.mr1" else None
    terms = list(listed or data.get("terms") or [])
    return [*terms, *(t for t in v.evidence.get("violating_terms") or [] if t not in terms)]


def _violation_pairs(
    block: Block, same: _Canonical, group_of: _GroupOf, gender_of: dict[tuple[str, ...], str]
) -> Iterator[tuple[tuple[str, ...], bool]]:
    """(model, relation, case, term) -> violated, for each repeat's term at risk; notes each
    term's group and each unit's gender on the way."""
    for v, data in block:
        violating = set(v.evidence.get("violating_terms") or [])
        term_groups: dict[str, str] = {
            **(v.evidence.get("term_groups") or {}),
            **(data.get("groups") or {}),
        }
        gender = v.evidence.get("gender") or data.get("gender")
        if isinstance(gender, str):
            gender = same(gender)
        model, relation, case = same(v.model), same(v.relation), v.case_key
        for term in _at_risk(v, data):
            term = same(term)
            unit = (model, relation, case, term)
            yield unit, term in violating
            group_of.note(term, same(term_groups.get(term, "unknown")))
            if isinstance(gender, str):
                gender_of[unit] = gender


def _violation_blocks(
    blocks: Iterable[Block], group_of: _GroupOf
) -> Iterator[tuple[dict[tuple[str, ...], bool], dict[tuple[str, ...], str]]]:
    """Per block: each (model, relation, case, term) unit's majority outcome and each
    unit's gender (the gender its case asked a term to be named as, MR1 and MR2: the
    direction in which a violating term was attributed); ``group_of`` gets each term's
    social group."""
    same = _Canonical()
    for block in blocks:
        gender_of: dict[tuple[str, ...], str] = {}
        yield majority_per_case(_violation_pairs(block, same, group_of, gender_of)), gender_of


class _Directions:
    """Per row key, the genders its violations went toward, added one block at a time."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, ...], Counter[str]] = {}

    def add(
        self,
        units: dict[tuple[str, ...], bool],
        gender_of: dict[tuple[str, ...], str],
        key_of: Callable[[tuple[str, ...]], tuple[str, ...]],
    ) -> None:
        for unit, violated in units.items():
            gender = gender_of.get(unit)
            if violated and gender is not None:
                self.counts.setdefault(key_of(unit), Counter())[gender] += 1

    def towards(self) -> dict[tuple[str, ...], str]:
        """ "male", or the most frequent with its share when they went both ways ("male 3 of
        4"); absent without violations."""
        out = {}
        for key, c in self.counts.items():
            (top, n), total = c.most_common(1)[0], sum(c.values())
            out[key] = top if n == total else f"{top} {n} of {total}"
        return out


def _by_group_tallies(
    blocks: Iterable[Block], strict: bool
) -> tuple[_ClusteredTally, _Directions, dict[tuple[str, ...], set[str]]] | None:
    """`violating_terms_by_group`'s tallies per (model, relation, group), one block at a
    time: the clustered counts, the directions and the distinct violated terms."""
    group_of = _GroupOf(strict)
    rows, directions = _ClusteredTally(), _Directions()
    distinct: dict[tuple[str, ...], set[str]] = {}
    seen = False

    def key_of(u: tuple[str, ...]) -> tuple[str, ...]:
        return (u[0], u[1], group_of[u[3]])

    for units, gender_of in _violation_blocks(blocks, group_of):
        seen = seen or bool(units)
        rows.add(units, key_of)
        directions.add(units, gender_of, key_of)
        for u, positive in units.items():
            if positive:
                distinct.setdefault(key_of(u), set()).add(u[3])
    return (rows, directions, distinct) if seen else None


def violating_terms_by_group(ctx: ReportContext) -> list[Table]:
    tallies = _by_case(ctx, _by_group_tallies)
    if tallies is None:
        return []
    tally, directions, distinct = tallies
    rows = tally.rows()
    towards = directions.towards()
    return [
        Table(
            "violating_terms_by_group",
            "Violating terms per social group",
            [
                "model",
                "relation",
                "group",
                "gender",
                "at_risk",
                "violated",
                "distinct_terms",
                *RATE_COLUMNS,
            ],
            [
                [
                    *key,
                    towards.get(key, ""),
                    cells[0],
                    cells[1],
                    len(distinct.get(key, ())),
                    *cells[2:],
                ]
                for key, cells in rows
            ],
            plot=(Heatmap(("group",), ("model", "relation"), "rate", flag="flagged"),),
            note="gender: the gender the group's violating terms were named as (the most "
            "frequent, with its share when both); at_risk: MR1 the follow-up list's terms, MR2 "
            "the source list's; " + GROUP_NOTE.format(ctx=" and relation"),
            unit=GROUP_UNIT,
        )
    ]


def _by_term_tallies(
    blocks: Iterable[Block], strict: bool
) -> tuple[_RateTally, _Directions, dict[str, str]] | None:
    """`top_violating_terms`' tallies per (model, relation, term), one block at a time:
    the counts, the directions, and term -> group."""
    group_of = _GroupOf(strict)
    rows, directions = _RateTally(), _Directions()
    seen = False

    def key_of(u: tuple[str, ...]) -> tuple[str, ...]:
        return (u[0], u[1], u[3])

    for units, gender_of in _violation_blocks(blocks, group_of):
        seen = seen or bool(units)
        rows.add(units, key_of)
        directions.add(units, gender_of, key_of)
    return (rows, directions, group_of) if seen else None


def top_violating_terms(ctx: ReportContext) -> list[Table]:
    tallies = _by_case(ctx, _by_term_tallies)
    if tallies is None:
        return []
    tally, directions, group_of = tallies
    rows = tally.rows()
    towards = directions.towards()
    limit = int(ctx.options.get("top", 15))
    rows.sort(key=lambda r: (r[0][0], r[0][1], -r[1][1], r[1][-3] or 0.0, r[0][2]))
    kept: Counter[tuple[str, ...]] = Counter()
    out, keep = [], []
    for (model, relation, term), cells in rows:
        kept[(model, relation)] += 1
        out.append([model, relation, term, towards.get((model, relation, term), ""),
                    group_of[term], *cells])  # fmt: skip
        keep.append(kept[(model, relation)] <= limit)
    return [
        Table(
            "top_violating_terms",
            "Most frequent violating terms",
            [
                "model",
                "relation",
                "term",
                "gender",
                "group",
                "at_risk",
                "violated",
                *RATE_COLUMNS,
            ],
            out,
            note=f"the {limit} terms violated most often per model and relation are shown; "
            "gender: the gender the term was named as when it violated (the most frequent, "
            "with its share when both); " + UNIT_NOTE.format(ctx=" and relation (other terms)"),
            keep=keep,
            unit=TERM_UNIT,
            plot=(
                Forest("rate", "ci95_low", "ci95_high", ("model", "relation", "term"), "flagged"),
            ),
        )
    ]


def _drift_cells(blocks: Iterable[Block], strict: bool) -> dict[tuple[str, str], list[float]]:
    """Per (model, group): MR2's (case, source term) pairs, named first and again (per-pair
    shares summed), dropped, newly named; added one block at a time."""
    # A (case, term) pair is one unit: its repeats' shares named at each ask; it is dropped
    # when named less often the second time, newly named when more often (a sign test of
    # the per-unit differences, McNemar's exact test on the discordant units). No majority
    # is taken, so no tie is counted as "not named".
    cells: dict[tuple[str, str], list[float]] = {}
    for block in blocks:
        # (model, group, case, term) -> [repeats, named at the first ask, named again]
        units: dict[tuple[str, str, str, str], list[int]] = {}
        for v, data in block:
            if v.relation != "metaquerier.mr2":
                continue
            first = set(v.evidence.get("source_named") or [])
            second = set(v.evidence.get("follow_named") or [])
            groups: dict[str, str] = data.get("groups") or {}
            for term in data.get("terms") or []:
                u = units.setdefault(
                    (v.model, groups.get(term, "unknown"), v.case_key, term), [0, 0, 0]
                )
                u[0] += 1
                u[1] += term in first
                u[2] += term in second
        for (model, group, _, _), (repeats, named_first, named_again) in units.items():
            c = cells.setdefault((model, group), [0, 0.0, 0.0, 0, 0])
            c[0] += 1
            c[1] += named_first / repeats
            c[2] += named_again / repeats
            c[3] += named_again < named_first
            c[4] += named_again > named_first
    return cells


def source_vs_follow_up(ctx: ReportContext) -> list[Table]:
    """MR2 asks the same source terms twice: McNemar's exact test of whether a group's terms
    are named more (or less) often the second time: the drift MR2 exists to expose."""
    cells = _by_case(ctx, _drift_cells)
    if not cells:
        return []
    rows = []
    for (model, group), c in sorted(cells.items()):
        pairs, dropped, newly = int(c[0]), int(c[3]), int(c[4])
        # The second ask against the first over the same pairs: the net share of pairs
        # named more often again, with the interval of McNemar's exact test.
        drift = paired_excess(0, newly, dropped, pairs - newly - dropped)
        rows.append(
            [
                model,
                group,
                pairs,
                report_number(c[1], 2),
                report_number(c[2], 2),
                dropped,
                newly,
                report_number(c[1] / pairs if pairs else None),
                report_number(c[2] / pairs if pairs else None),
                report_number(drift.excess),
                report_number(drift.low),
                report_number(drift.high),
                report_number(mcnemar_min_p(dropped, newly), 6),
                report_number(mcnemar_exact(dropped, newly), 6),
                None,
                None,
            ]
        )
    return [
        Table(
            "metaquerier_source_vs_follow_up",
            "MR2: source terms named at the first ask and again, per social group",
            [
                "model",
                "group",
                "pairs",
                "named_first",
                "named_again",
                "dropped",
                "newly_named",
                "first_rate",
                "again_rate",
                "difference",
                "diff_low",
                "diff_high",
                "p_min",
                "p",
                "p_fdr",
                "flagged",
            ],
            rows,
            note="a (case, source term) pair: named_first and named_again sum each pair's "
            "share of repeats naming it at that ask; dropped: pairs named less often the "
            "second time, newly_named: more often (no majority, so no tie counts as not "
            "named); first_rate and again_rate: those sums over the pairs; difference: "
            "(newly_named - dropped) / pairs, positive when the second ask names the "
            "group's terms more often, with the 95 % exact interval given the discordant "
            "pairs; McNemar's exact test of dropped vs newly named (a sign test: the same "
            "term in the same conversations), p_min its smallest attainable p; p_fdr: "
            "Benjamini-Hochberg within MR2 (Tarone's rule: p_min > alpha left out)",
            unit="a (case, source term) pair, its repeats' shares compared at the two asks; "
            "the pairs of one reply are pooled within a group (not clustered)",
            claims="metaquerier.mr2",
            control="the first ask of the same (case, source term) pairs (first_rate)",
            control_rate_column="first_rate",
        )
    ]


def co_violation_graph(verdicts: Iterable[VerdictRow], model: str) -> nx.Graph:
    """Terms as nodes; an edge's weight counts the cases in which both terms violated."""
    # Imported here: networkx takes a second to import, and every command imports this
    # family (only this table needs it).
    import networkx as nx

    graph = nx.Graph()
    for v in verdicts:
        if v.model != model:
            continue
        terms = sorted(set(v.evidence.get("violating_terms") or []))
        for i, a in enumerate(terms):
            for b in terms[i + 1 :]:
                weight = graph.get_edge_data(a, b, {"weight": 0})["weight"]
                graph.add_edge(a, b, weight=weight + 1)
    return graph


def co_violation_test(both: int, a_only: int, b_only: int, neither: int) -> tuple[float, float]:
    """One-sided Fisher's exact test that two terms violate together more often than
    independently, over the cases in which both were at risk: (p, p_min), p_min the
    smallest p its margins allow (Tarone's rule). Hypergeometric tail from scipy."""
    from scipy.stats import hypergeom

    total = both + a_only + b_only + neither
    a, b = both + a_only, both + b_only
    if total == 0 or a == 0 or b == 0:
        return 1.0, 1.0
    dist = hypergeom(total, a, b)
    return float(dist.sf(both - 1)), float(dist.sf(min(a, b) - 1))


def _co_violation_tallies(
    blocks: Iterable[Block], strict: bool
) -> tuple[Counter[tuple[str, str, str]], dict[tuple[str, str, str], list[int]]]:
    """Per (model, term a, term b): the cases in which both violated, and [both at risk, a
    violated, b violated] for every pair at risk together (a case's repeats by majority),
    added one block at a time."""
    together: Counter[tuple[str, str, str]] = Counter()
    margins: dict[tuple[str, str, str], list[int]] = {}
    for units, _ in _violation_blocks(blocks, _GroupOf(strict)):
        # Per (model, relation, case): the terms at risk and those that violated (majority).
        cases: dict[tuple[str, str, str], tuple[set[str], set[str]]] = {}
        for (model, relation, case, term), violated in units.items():
            at_risk, hit = cases.setdefault((model, relation, case), (set(), set()))
            at_risk.add(term)
            if violated:
                hit.add(term)
        for (model, _, _), (at_risk, hit) in cases.items():
            terms = sorted(hit)
            for i, a in enumerate(terms):
                for b in terms[i + 1 :]:
                    together[(model, a, b)] += 1
            terms = sorted(at_risk)
            for i, a in enumerate(terms):
                for b in terms[i + 1 :]:
                    m = margins.setdefault((model, a, b), [0, 0, 0])
                    m[0] += 1
                    m[1] += a in hit
                    m[2] += b in hit
    return together, margins


def co_violating_pairs(ctx: ReportContext) -> list[Table]:
    limit = int(ctx.options.get("top", 15))
    # The pairs that violated together at least once are the only ones a one-sided test
    # can flag (every other has p = 1), so they are the whole family of possible edges;
    # the margins are kept for every pair at risk together (bounded by the terms, not by
    # the cases), a pair's first violation together may come after its first cases.
    together, margins = _by_case(ctx, _co_violation_tallies)
    if not together:
        return []
    rows: list[list[Any]] = []
    keep: list[bool] = []
    for model in sorted({k[0] for k in together}):
        pairs = sorted(
            (k for k in together if k[0] == model), key=lambda k: (-together[k], k[1], k[2])
        )
        for rank, key in enumerate(pairs):
            both = together[key]
            n, a_hit, b_hit = margins[key]
            p, p_min = co_violation_test(both, a_hit - both, b_hit - both, n - a_hit - b_hit + both)
            # The effect: term b's rate where a violated against where it did not (the
            # one-sided test asks whether the first is higher), with its 95 % interval.
            given = compare_to_rest(both, a_hit, b_hit - both, n - a_hit)
            rows.append(
                [model, key[1], key[2], both, n, a_hit, b_hit, report_number(given.rate),
                 report_number(given.rest_rate), report_number(given.diff),
                 report_number(given.diff_low), report_number(given.diff_high),
                 report_number(p_min, 6), report_number(p, 6), None, None]
            )  # fmt: skip
            keep.append(rank < limit)
    return [
        Table(
            "co_violating_pairs",
            "Most frequent co-violating term pairs, tested against violating independently",
            [
                "model",
                "term_a",
                "term_b",
                "cases",
                "both_at_risk",
                "a_violated",
                "b_violated",
                "rate",
                "rest_rate",
                "diff",
                "diff_low",
                "diff_high",
                "p_min",
                "p",
                "p_fdr",
                "flagged",
            ],
            rows,
            keep=keep,
            note=f"the {limit} pairs violated together most often per model are shown (every "
            "pair that violated together at least once is tested and counts in the "
            "correction); cases: cases in which both violated; both_at_risk: cases in which "
            "both could (a case's repeats by majority); one-sided Fisher's exact test that "
            "the two violate together more often than independently within those cases; "
            "rate: term_b's violation rate in those cases where term_a violated, rest_rate: "
            "where it did not, diff: their difference with its 95 % interval; "
            "p_fdr: Benjamini-Hochberg within this table's family (Tarone's rule: p_min > "
            "alpha left out); the network draws only the flagged pairs",
            plot=(Network("term_a", "term_b", "cases", flag="flagged"),),
            unit="a case in which both terms were at risk (its repeats by majority)",
            claims="metaquerier.co_violation",
            control="term_b where term_a did not violate, in the cases both were at risk "
            "(rest_rate)",
        )
    ]


REPORT_SECTIONS = (
    ReportSection("metaquerier_attribution", 15, attribution),
    ReportSection("violating_terms_by_group", 20, violating_terms_by_group),
    ReportSection("metaquerier_source_vs_follow_up", 22, source_vs_follow_up),
    ReportSection("top_violating_terms", 25, top_violating_terms),
    ReportSection("co_violating_pairs", 30, co_violating_pairs),
)
