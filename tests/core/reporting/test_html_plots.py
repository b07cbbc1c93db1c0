"""The SVG plots of the HTML report: well-formed XML for any table (missing values,
negatives, one row, hostile labels), nothing drawn from nothing, and the marks the hints ask
for (flagged cells, interval lines, one graph per facet)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting.html.heatmap import heatmaps
from harness.reporting.html.network import networks
from harness.reporting.html.page import plots_of
from harness.reporting.html.plots import MAX_ROWS, bars, forest, paired
from harness.reporting.tables import Bars, Forest, Heatmap, Network, Paired, Table

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '</svg><script>alert(1)</script> & "q" <!-- ]]>'
COLUMNS = ["model", "group", "rate", "low", "high", "other", "flagged"]
VALUES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.integers(-5, 5),
)
LABELS = st.one_of(st.sampled_from(["m1", "m2", HOSTILE, ""]), st.text(max_size=8))


def parse(svg: str) -> ET.Element:
    # Inline SVG in HTML, but our drawings are also well-formed XML (with the namespace).
    root = ET.fromstring(
        svg.replace('<svg class="plot"', f'<svg xmlns="{SVG[1:-1]}" class="plot"', 1)
    )
    assert root.find(f"{SVG}title") is not None and root.find(f"{SVG}desc") is not None
    return root


def table(rows: list[list[Any]], *hints: Any) -> Table:
    return Table("t", "T " + HOSTILE, COLUMNS, rows, plot=tuple(hints))


HINTS = (
    Forest("rate", "low", "high", ("model", "group"), "flagged"),
    Heatmap(("group",), ("model",), "rate", "flagged"),
    Paired("rate", "other", ("model", "group"), "flagged"),
    Bars("rate", ("model", "group")),
    Network("model", "group", "rate", facet=()),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            LABELS, LABELS, VALUES, VALUES, VALUES, VALUES, st.sampled_from(["yes", "no", None])
        ),
        max_size=12,
    )
)
def test_any_table_draws_well_formed_svg(rows: list[tuple[Any, ...]]) -> None:
    drawn = plots_of(table([list(r) for r in rows], *HINTS), "x")
    for svg in drawn:
        root = parse(svg)
        assert not any(e.tag == "script" or e.tag.endswith("}script") for e in root.iter())
        for element in root.iter():
            for name, value in element.attrib.items():
                if name in ("data-label", "data-row", "data-column"):
                    continue  # a row's labels, as text (a label may read "NaN")
                assert "nan" not in value.lower() and "inf" not in value.lower(), value


def test_nothing_is_drawn_from_no_numbers() -> None:
    empty = table([["m1", "g", None, None, None, None, None]])
    assert forest(empty, HINTS[0], "a") is None
    assert heatmaps(empty, HINTS[1], "b") == []
    assert paired(empty, HINTS[2], "c") is None
    assert bars(empty, HINTS[3], "d") is None
    assert networks(empty, HINTS[4], "e") == []


def test_the_marks_the_hints_ask_for() -> None:
    rows = [
        ["m1", "a", 0.2, 0.1, 0.3, 0.5, "yes"],
        ["m1", "b", 0.4, 0.3, 0.5, 0.1, "no"],
        ["m2", "a", 0.6, 0.5, 0.7, 0.2, "no"],
    ]
    t = table(rows)
    f = parse(forest(t, HINTS[0], "f") or "")
    assert len(f.findall(f".//{SVG}line[@class='ci']")) == 3
    assert len(f.findall(f".//{SVG}circle[@class='pt flag']")) == 1
    (h,) = heatmaps(t, HINTS[1], "h")
    cells = parse(h).findall(f".//{SVG}rect")
    assert len(cells) == 3 and sum(c.get("class") == "cell flag" for c in cells) == 1
    faceted = heatmaps(t, Heatmap(("group",), ("model",), "rate", facet=("model",)), "hf")
    assert len(faceted) == 2
    graphs = networks(t, Network("model", "group", "rate", facet=()), "n")
    assert len(graphs) == 1 and len(parse(graphs[0]).findall(f".//{SVG}line")) == 3
    negative = table(
        [["m1", "a", -0.3, None, None, None, None], ["m1", "b", 0.5, None, None, None, None]]
    )
    assert len(parse(bars(negative, HINTS[3], "b") or "").findall(f".//{SVG}rect")) == 2


@pytest.mark.parametrize("n", [MAX_ROWS + 5])
def test_a_long_table_draws_its_first_rows_and_says_so(n: int) -> None:
    rows = [["m", f"g{i}", i / (2 * n), 0.0, 1.0, 0.1, "no"] for i in range(n)]
    svg = forest(table(rows), HINTS[0], "long") or ""
    assert len(parse(svg).findall(f".//{SVG}circle")) == MAX_ROWS
    assert f"the first {MAX_ROWS} of {n} rows" in svg
    assert math.isfinite(float(parse(svg).get("height") or "nan"))


def test_a_network_with_a_flag_draws_only_the_edges_its_test_supports() -> None:
    rows = [
        ["m1", "nurse", 5, None, None, None, "yes"],
        ["m1", "pilot", 1, None, None, None, "no"],
    ]
    hint = Network("model", "group", "rate", facet=(), flag="flagged")
    (svg,) = networks(table(rows, hint), hint, "n")
    root = parse(svg)
    edges = [e for e in root.iter() if e.get("class") == "edge"]
    assert len(edges) == 1
    assert "only pairs flagged" in svg
    # Without the flag every row with a weight is an edge.
    (both,) = networks(table(rows, HINTS[4]), HINTS[4], "m")
    assert len([e for e in parse(both).iter() if e.get("class") == "edge"]) == 2
    # Nothing flagged: nothing drawn.
    unflagged = [[*r[:-1], "no"] for r in rows]
    assert networks(table(unflagged, hint), hint, "o") == []


def test_heatmap_labels_are_whole_and_inside_the_drawing() -> None:
    from harness.reporting.html.heatmap import CHAR_W

    long_row = "a social group with a rather long descriptive name here"  # 55 characters
    long_column = "sim:planted · metaquerier.mr1 (free)"
    rows = [[long_column, long_row, 0.5, None, None, None, "no"], ["m2", "g", 0.1, 0, 0, 0, "no"]]
    (svg,) = heatmaps(table(rows, HINTS[1]), HINTS[1], "h")
    root = parse(svg)
    width, height = (float(v) for v in root.get("viewBox", "").split()[2:])
    labels = [e for e in root.iter() if e.get("class") == "label"]
    texts = {e.text for e in labels}
    assert long_row in texts and long_column in texts  # not shortened
    for e in labels:
        x, y, length = float(e.get("x", 0)), float(e.get("y", 0)), len(e.text or "") * CHAR_W
        if e.get("transform"):  # a column label, slanted 30 degrees up and right
            assert y - length * 0.5 >= 0 and x + length * 0.87 <= width
        else:  # a row label, right-aligned before the grid
            assert x - length >= 0 and y <= height
