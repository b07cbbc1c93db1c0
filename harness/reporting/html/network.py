"""The co-violation graph (MetaQuerier's Table 5) as a static SVG: from a table with a
`harness.reporting.tables.Network` hint, one drawing per facet (model), laid out by networkx's
spring layout with a fixed seed (the same log draws the same picture)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from harness.reporting.html.plots import (
    escape,
    is_flagged,
    label_of,
    number,
    rows_of,
    shorten,
    svg,
)
from harness.reporting.tables import Network, Table

if TYPE_CHECKING:
    import networkx as nx

SIZE_W, SIZE_H, MARGIN = 640, 440, 70
MAX_EDGES = 60


def networks(table: Table, hint: Network, plot_id: str) -> list[str]:
    # Imported here: networkx takes a second to import, and every command imports the
    # report command's modules (only a report with a co-violation table draws one).
    import networkx as nx

    groups: dict[str, nx.Graph] = {}
    for r in rows_of(table):
        weight = number(r.get(hint.weight))
        a, b = r.get(hint.source), r.get(hint.target)
        if weight is None or weight <= 0 or a in (None, "") or b in (None, ""):
            continue  # no pair, or no case in common: no edge
        if hint.flag is not None and not is_flagged(r, hint.flag):
            continue  # an edge its test does not support is not drawn
        graph = groups.setdefault(label_of(r, hint.facet), nx.Graph())
        if graph.number_of_edges() < MAX_EDGES:
            graph.add_edge(str(a), str(b), weight=weight)
    return [
        _draw(table, facet, g, f"{plot_id}-{i}", hint)
        for i, (facet, g) in enumerate(groups.items())
    ]


def _draw(table: Table, facet: str, graph: nx.Graph, plot_id: str, hint: Network) -> str:
    # k wider than the default: the labels need room between connected terms.
    import networkx as nx

    k = 3.0 / max(graph.number_of_nodes(), 1) ** 0.5
    positions = nx.spring_layout(graph, seed=1, weight="weight", k=k, iterations=100)
    if not all(math.isfinite(c) for p in positions.values() for c in p):
        positions = nx.circular_layout(graph)  # extreme weights can defeat the spring model
    xs = [p[0] for p in positions.values()] or [0.0]
    ys = [p[1] for p in positions.values()] or [0.0]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0

    def at(node: str) -> tuple[float, float]:
        px, py = positions[node]
        return (
            MARGIN + (px - min(xs)) / span_x * (SIZE_W - 2 * MARGIN),
            MARGIN / 2 + (py - min(ys)) / span_y * (SIZE_H - MARGIN),
        )

    heaviest = max((w for _, _, w in graph.edges(data="weight")), default=1.0) or 1.0
    body = []
    for a, b, w in sorted(graph.edges(data="weight"), key=lambda e: e[2]):
        (x1, y1), (x2, y2) = at(a), at(b)
        body.append(
            f"<g><title>{escape(f'{a} and {b}: violated together in {w:g} cases')}</title>"
            f'<line class="edge" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke-width="{1 + 5 * w / heaviest:.1f}"/></g>'
        )
    for node in sorted(graph.nodes):
        x, y = at(node)
        degree = graph.degree(node, weight="weight")
        body.append(
            f"<g><title>{escape(f'{node}: {degree:g} co-violations')}</title>"
            f'<circle class="node" cx="{x:.1f}" cy="{y:.1f}" r="6"/>'
            f'<text class="label halo" x="{x:.1f}" y="{y - 9:.1f}" text-anchor="middle">'
            f"{escape(shorten(node, 28))}</text></g>"
        )
    strongest = sorted(graph.edges(data="weight"), key=lambda e: -e[2])[:5]
    desc = (
        f"Co-violation network{' of ' + facet if facet else ''}: {graph.number_of_nodes()} "
        f"terms, {graph.number_of_edges()} pairs; an edge joins two terms that violated in "
        "the same case, thicker for more cases"
        + (
            f" (only pairs flagged by their test, column {hint.flag})"
            if hint.flag is not None
            else ""
        )
        + "; strongest: "
        + "; ".join(f"{a} and {b} ({w:g})" for a, b, w in strongest)
    )
    title = table.title + (f" — {facet}" if facet else "")
    return svg(SIZE_W, SIZE_H, title, desc, body, plot_id)
