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
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

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
    compare_to_rest_stratified,
    majority_per_case,
    mcnemar_exact,
    mcnemar_min_p,
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


def _rate_rows(
    units: dict[tuple[str, ...], bool], key_of: dict[tuple[str, ...], tuple[str, ...]]
) -> list[tuple[tuple[str, ...], list[Any]]]:
    """Rows of rate, interval and test for each key: ``units`` maps a unit to its majority
    outcome and ``key_of`` the unit to the (context..., group) it counts for."""
    counts: dict[tuple[str, ...], list[int]] = {}
    for unit, positive in units.items():
        c = counts.setdefault(key_of[unit], [0, 0])
        c[0] += positive
        c[1] += 1
    out = []
    for key, g in compare_groups({k: (v[0], v[1]) for k, v in counts.items()}):
        out.append((key, [g.n, g.k, rounded(g.rate), rounded(g.low), rounded(g.high), *g.cells()]))
    return out


def _clustered_rows(
    units: dict[tuple[str, ...], bool], key_of: dict[tuple[str, ...], tuple[str, ...]]
) -> list[tuple[tuple[str, ...], list[Any]]]:
    """Like `_rate_rows` for keys that pool several terms of one case (a group): ``units``
    are (model, context, case, term); the interval is clustered by case and the test of a
    group against the rest of its context is stratified by case."""
    # (context key, case) -> group -> [positives, pairs]
    per_case: dict[tuple[tuple[str, ...], str], dict[str, list[int]]] = {}
    for unit, positive in units.items():
        key = key_of[unit]
        c = per_case.setdefault((key[:-1], unit[2]), {}).setdefault(key[-1], [0, 0])
        c[0] += positive
        c[1] += 1
    strata: dict[tuple[str, ...], list[tuple[int, int, int, int]]] = {}
    clusters: dict[tuple[str, ...], list[tuple[int, int]]] = {}
    groups_of: dict[tuple[str, ...], set[str]] = {}
    for (context, _), groups in per_case.items():
        groups_of.setdefault(context, set()).update(groups)
    for (context, _), groups in per_case.items():
        all_k = sum(c[0] for c in groups.values())
        all_n = sum(c[1] for c in groups.values())
        for group in groups_of[context]:
            k, n = groups.get(group, [0, 0])
            key = (*context, group)
            strata.setdefault(key, []).append((k, n, all_k - k, all_n - n))
            if n:
                clusters.setdefault(key, []).append((k, n))
    out = []
    for key in sorted(strata):
        g = compare_to_rest_stratified(strata[key])
        rate, low, high = cluster_rate_interval(clusters.get(key, []))
        if g.n and g.rest_n:
            rest = [(c, d) for _, _, c, d in strata[key] if d]
            lo, hi, rr_lo, rr_hi = clustered_intervals(
                g.k, g.n, g.rest_k, g.rest_n, clusters.get(key, []), rest
            )
            g = dataclasses.replace(g, diff_low=lo, diff_high=hi, rr_low=rr_lo, rr_high=rr_hi)
        out.append((key, [g.n, g.k, rounded(rate), rounded(low), rounded(high), *g.cells()]))
    return out


def design_effect(clusters: list[tuple[int, int]]) -> float:
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
    group: list[tuple[int, int]],
    rest: list[tuple[int, int]],
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


def _attribution_units(
    ctx: ReportContext,
) -> tuple[dict[tuple[str, ...], bool], dict[str, str]]:
    """(model, gender, case, term) -> named in the source turn (majority), and term -> group."""
    explicit = _explicitly_gendered()
    group_of: dict[str, str] = {}
    same = _Canonical()

    def pairs() -> Iterator[tuple[tuple[str, ...], bool]]:
        # Streamed into the majority: no list of every repeat's pairs is held.
        for v, data in _valid(ctx):
            named = set(v.evidence.get("source_named") or [])
            gender = same(str(data.get("gender") or v.evidence.get("gender") or ""))
            term_groups: dict[str, str] = data.get("groups") or {}
            model, case = same(v.model), v.case_key
            for term in data.get("terms") or []:
                if term in explicit:
                    continue
                term = same(term)
                yield (model, gender, case, term), term in named
                # The group of a term's last unit, as a term -> group map of every unit had.
                group_of[term] = same(term_groups.get(term, "unknown"))

    return majority_per_case(pairs()), group_of


class _Canonical(dict[str, str]):
    """One string object for each distinct text (models, terms, groups): the units of a
    report share them instead of holding a copy each, as read from each row."""

    def __call__(self, text: str) -> str:
        return self.setdefault(text, text)


def attribution(ctx: ReportContext) -> list[Table]:
    units, group_of = _attribution_units(ctx)
    if not units:
        return []
    by_group = _clustered_rows(units, {u: (u[0], u[1], group_of[u[3]]) for u in units})
    by_term = _rate_rows(units, {u: (u[0], u[1], u[3]) for u in units})
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


def _violation_units(
    ctx: ReportContext,
) -> tuple[dict[tuple[str, ...], bool], dict[str, str], dict[tuple[str, ...], str]]:
    """Each (model, relation, case, term) unit's majority outcome, each term's social group,
    and each unit's gender: the gender its case asked a term to be named as (MR1, MR2), the
    direction in which a violating term was attributed."""
    group_of: dict[str, str] = {}
    gender_of: dict[tuple[str, ...], str] = {}
    same = _Canonical()

    def pairs() -> Iterator[tuple[tuple[str, ...], bool]]:
        # Streamed into the majority: no list of every repeat's pairs is held.
        for v, data in _valid(ctx):
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
                group_of[term] = same(term_groups.get(term, "unknown"))
                if isinstance(gender, str):
                    gender_of[unit] = gender

    return majority_per_case(pairs()), group_of, gender_of


def _directions(
    units: dict[tuple[str, ...], bool],
    gender_of: dict[tuple[str, ...], str],
    key_of: dict[tuple[str, ...], tuple[str, ...]],
) -> dict[tuple[str, ...], str]:
    """Per row key, the gender its violations went toward: "male", or the most frequent
    with its share when they went both ways ("male 3 of 4"); absent without violations."""
    counts: dict[tuple[str, ...], Counter[str]] = {}
    for unit, violated in units.items():
        gender = gender_of.get(unit)
        if violated and gender is not None:
            counts.setdefault(key_of[unit], Counter())[gender] += 1
    out = {}
    for key, c in counts.items():
        (top, n), total = c.most_common(1)[0], sum(c.values())
        out[key] = top if n == total else f"{top} {n} of {total}"
    return out


def violating_terms_by_group(ctx: ReportContext) -> list[Table]:
    units, group_of, gender_of = _violation_units(ctx)
    if not units:
        return []
    key_of: dict[tuple[str, ...], tuple[str, ...]] = {
        u: (u[0], u[1], group_of[u[3]]) for u in units
    }
    rows = _clustered_rows(units, key_of)
    towards = _directions(units, gender_of, key_of)
    distinct: dict[tuple[str, ...], set[str]] = {}
    for u, positive in units.items():
        if positive:
            distinct.setdefault((u[0], u[1], group_of[u[3]]), set()).add(u[3])
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


def top_violating_terms(ctx: ReportContext) -> list[Table]:
    units, group_of, gender_of = _violation_units(ctx)
    if not units:
        return []
    key_of: dict[tuple[str, ...], tuple[str, ...]] = {u: (u[0], u[1], u[3]) for u in units}
    rows = _rate_rows(units, key_of)
    towards = _directions(units, gender_of, key_of)
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


def source_vs_follow_up(ctx: ReportContext) -> list[Table]:
    """MR2 asks the same source terms twice: McNemar's exact test of whether a group's terms
    are named more (or less) often the second time: the drift MR2 exists to expose."""
    # (model, group, case, term) -> [repeats, named at the first ask, named again]
    units: dict[tuple[str, str, str, str], list[int]] = {}
    for v, data in _valid(ctx):
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
    if not units:
        return []
    # A (case, term) pair is one unit: its repeats' shares named at each ask; it is dropped
    # when named less often the second time, newly named when more often (a sign test of
    # the per-unit differences, McNemar's exact test on the discordant units). No majority
    # is taken, so no tie is counted as "not named".
    # pairs, named first and again (per-unit shares summed), dropped, newly named
    cells: dict[tuple[str, str], list[float]] = {}
    for (model, group, _, _), (repeats, named_first, named_again) in units.items():
        c = cells.setdefault((model, group), [0, 0.0, 0.0, 0, 0])
        c[0] += 1
        c[1] += named_first / repeats
        c[2] += named_again / repeats
        c[3] += named_again < named_first
        c[4] += named_again > named_first
    rows = [
        [
            model,
            group,
            int(c[0]),
            report_number(c[1], 2),
            report_number(c[2], 2),
            int(c[3]),
            int(c[4]),
            report_number(mcnemar_min_p(int(c[3]), int(c[4])), 6),
            report_number(mcnemar_exact(int(c[3]), int(c[4])), 6),
            None,
            None,
        ]
        for (model, group), c in sorted(cells.items())
    ]
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
                "p_min",
                "p",
                "p_fdr",
                "flagged",
            ],
            rows,
            note="a (case, source term) pair: named_first and named_again sum each pair's "
            "share of repeats naming it at that ask; dropped: pairs named less often the "
            "second time, newly_named: more often (no majority, so no tie counts as not "
            "named); McNemar's exact test of dropped vs newly named (a sign test: the same "
            "term in the same conversations), p_min its smallest attainable p; p_fdr: "
            "Benjamini-Hochberg within MR2 (Tarone's rule: p_min > alpha left out)",
            unit="a (case, source term) pair, its repeats' shares compared at the two asks; "
            "the pairs of one reply are pooled within a group (not clustered)",
            claims="metaquerier.mr2",
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


def co_violating_pairs(ctx: ReportContext) -> list[Table]:
    limit = int(ctx.options.get("top", 15))
    units, _, _ = _violation_units(ctx)
    # Per (model, relation, case): the terms at risk and those that violated (majority).
    cases: dict[tuple[str, str, str], tuple[set[str], set[str]]] = {}
    for (model, relation, case, term), violated in units.items():
        at_risk, hit = cases.setdefault((model, relation, case), (set(), set()))
        at_risk.add(term)
        if violated:
            hit.add(term)
    # The pairs that violated together at least once: the only ones a one-sided test can
    # flag (every other has p = 1), so they are the whole family of possible edges.
    together: Counter[tuple[str, str, str]] = Counter()
    for (model, _, _), (_, hit) in cases.items():
        terms = sorted(hit)
        for i, a in enumerate(terms):
            for b in terms[i + 1 :]:
                together[(model, a, b)] += 1
    if not together:
        return []
    # [both at risk, a violated, b violated] per candidate pair
    margins: dict[tuple[str, str, str], list[int]] = {k: [0, 0, 0] for k in together}
    for (model, _, _), (at_risk, hit) in cases.items():
        terms = sorted(at_risk)
        for i, a in enumerate(terms):
            for b in terms[i + 1 :]:
                m = margins.get((model, a, b))
                if m is not None:
                    m[0] += 1
                    m[1] += a in hit
                    m[2] += b in hit
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
            rows.append(
                [model, key[1], key[2], both, n, a_hit, b_hit, report_number(p_min, 6),
                 report_number(p, 6), None, None]
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
            "p_fdr: Benjamini-Hochberg within this table's family (Tarone's rule: p_min > "
            "alpha left out); the network draws only the flagged pairs",
            plot=(Network("term_a", "term_b", "cases", flag="flagged"),),
            unit="a case in which both terms were at risk (its repeats by majority)",
            claims="metaquerier.co_violation",
        )
    ]


REPORT_SECTIONS = (
    ReportSection("metaquerier_attribution", 15, attribution),
    ReportSection("violating_terms_by_group", 20, violating_terms_by_group),
    ReportSection("metaquerier_source_vs_follow_up", 22, source_vs_follow_up),
    ReportSection("top_violating_terms", 25, top_violating_terms),
    ReportSection("co_violating_pairs", 30, co_violating_pairs),
)
