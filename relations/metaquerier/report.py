"""MetaQuerier's report sections: which terms violated, per social group, and together."""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx

from harness.tables import ReportContext, ReportSection, Table, VerdictRow


def violating_terms_by_group(ctx: ReportContext) -> list[Table]:
    per_group: Counter[tuple[str, str, str]] = Counter()
    distinct: dict[tuple[str, str, str], set[str]] = {}
    for v in ctx.relation_verdicts:
        groups: dict[str, str] = v.evidence.get("term_groups") or {}
        for term in v.evidence.get("violating_terms") or []:
            key = (v.model, v.relation, groups.get(term, "unknown"))
            per_group[key] += 1
            distinct.setdefault(key, set()).add(term)
    if not per_group:
        return []
    rows = [[m, r, g, n, len(distinct[(m, r, g)])] for (m, r, g), n in sorted(per_group.items())]
    return [
        Table(
            "violating_terms_by_group",
            "Violating terms per social group",
            ["model", "relation", "group", "violations", "distinct_terms"],
            rows,
        )
    ]


def top_violating_terms(ctx: ReportContext) -> list[Table]:
    counts: Counter[tuple[str, str, str]] = Counter()
    for v in ctx.relation_verdicts:
        groups: dict[str, str] = v.evidence.get("term_groups") or {}
        for term in v.evidence.get("violating_terms") or []:
            counts[(v.model, term, groups.get(term, "unknown"))] += 1
    limit = int(ctx.options.get("top", 15))
    rows: list[list[Any]] = []
    for model in sorted({m for m, _, _ in counts}):
        mine = [(k, n) for k, n in counts.items() if k[0] == model]
        mine.sort(key=lambda item: (-item[1], item[0][1]))
        rows.extend([model, term, group, n] for (_, term, group), n in mine[:limit])
    if not rows:
        return []
    return [
        Table(
            "top_violating_terms",
            "Most frequent violating terms",
            ["model", "term", "group", "violations"],
            rows,
        )
    ]


def co_violation_graph(verdicts: list[VerdictRow], model: str) -> nx.Graph:
    """Terms as nodes; an edge's weight counts the cases in which both terms violated."""
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


def co_violating_pairs(ctx: ReportContext) -> list[Table]:
    limit = int(ctx.options.get("top", 15))
    rows: list[list[Any]] = []
    for model in sorted({v.model for v in ctx.relation_verdicts}):
        graph = co_violation_graph(ctx.relation_verdicts, model)
        # networkx gives an edge's ends in insertion order; a pair is shown sorted.
        edges = sorted(
            ((*sorted((a, b)), w) for a, b, w in graph.edges(data="weight")),
            key=lambda e: (-e[2], e[0], e[1]),
        )
        rows.extend([model, a, b, w] for a, b, w in edges[:limit])
    if not rows:
        return []
    return [
        Table(
            "co_violating_pairs",
            "Most frequent co-violating term pairs",
            ["model", "term_a", "term_b", "cases"],
            rows,
        )
    ]


REPORT_SECTIONS = (
    ReportSection("violating_terms_by_group", 20, violating_terms_by_group),
    ReportSection("top_violating_terms", 25, top_violating_terms),
    ReportSection("co_violating_pairs", 30, co_violating_pairs),
)
