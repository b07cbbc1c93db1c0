"""Heatmaps of report tables (`harness.reporting.tables.Heatmap` hints): a grid of one value with
labels down and across, one grid per facet, cells flagged by the report-wide FDR
correction outlined and starred; the fill is a sequential blue and each cell's text takes
the ink (white or black) with the higher contrast on it."""

from __future__ import annotations

from typing import Any

from harness.reporting.html.plots import (
    LABEL_W,
    MAX_ROWS,
    escape,
    fraction,
    is_flagged,
    label_of,
    number,
    rows_of,
    shorten,
    svg,
)
from harness.reporting.tables import Heatmap, Table

CHAR_W = 7  # px per character of an 11px label, generous: a label is never cut
COLUMN_LABEL_CHARS = 40
ROW_LABEL_CHARS = 60


def _luminance(rgb: tuple[int, ...]) -> float:
    """WCAG relative luminance of an sRGB colour."""
    linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def colour(t: float) -> tuple[str, str]:
    """A sequential fill for t in [0, 1] (pale to deep blue) and the ink (white or black
    text class) with the higher contrast on it: at least 4.5:1 for any t."""
    t = min(max(t, 0.0), 1.0)
    pale, deep = (239, 243, 255), (8, 48, 107)
    rgb = tuple(round(a + (b - a) * t) for a, b in zip(pale, deep, strict=True))
    lum = _luminance(rgb)
    on_white, on_black = 1.05 / (lum + 0.05), (lum + 0.05) / 0.05
    fill = "#" + "".join(f"{c:02x}" for c in rgb)
    return fill, "ink-light" if on_white > on_black else "ink-dark"


def heatmaps(table: Table, hint: Heatmap, plot_id: str) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows_of(table):
        groups.setdefault(label_of(r, hint.facet), []).append(r)
    return [
        drawn
        for i, (facet, rows) in enumerate(groups.items())
        if (drawn := _heatmap(table, hint, rows, facet, f"{plot_id}-{i}"))
    ]


def _heatmap(
    table: Table, hint: Heatmap, rows: list[dict[str, Any]], facet: str, plot_id: str
) -> str | None:
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    row_keys: list[str] = []
    col_keys: list[str] = []
    for r in rows:
        if number(r.get(hint.value)) is None:
            continue
        rk, ck = label_of(r, hint.row), label_of(r, hint.column)
        if rk not in row_keys:
            row_keys.append(rk)
        if ck not in col_keys:
            col_keys.append(ck)
        cells.setdefault((rk, ck), r)  # the first row of a cell wins
    if not cells:
        return None
    capped = ""
    if len(row_keys) > MAX_ROWS:
        capped = f" (the first {MAX_ROWS} of {len(row_keys)} rows; the table has all)"
        row_keys = row_keys[:MAX_ROWS]
    col_keys = col_keys[:24]
    values = [number(c[hint.value]) or 0.0 for c in cells.values()]
    low, high = min(min(values), 0.0), max(max(values), 1e-9)
    # Room for every label, whole: the row labels at the left, the column labels slanted
    # 30 degrees above the grid (their height is half their length, their reach to the
    # right 0.87 of it), at `CHAR_W` per character of the 11px font.
    col_labels = [shorten(ck, COLUMN_LABEL_CHARS) for ck in col_keys]
    row_labels = [shorten(rk, ROW_LABEL_CHARS) for rk in row_keys]
    longest_col = max(len(label) for label in col_labels) * CHAR_W
    label_w = max(LABEL_W, max(len(label) for label in row_labels) * CHAR_W + 12)
    cw, ch = 86, 22
    top = max(90, round(longest_col * 0.5) + 24)
    width = label_w + cw * len(col_keys) + max(150, round(longest_col * 0.87) + 12)
    height = top + ch * len(row_keys) + 8
    body = []
    for j, label in enumerate(col_labels):
        x = label_w + j * cw + cw / 2
        body.append(
            f'<text class="label" x="{x:.1f}" y="{top - 8}" text-anchor="start" '
            f'transform="rotate(-30 {x:.1f} {top - 8})">{escape(label)}</text>'
        )
    flagged = 0
    for i, rk in enumerate(row_keys):
        y = top + i * ch
        body.append(
            f'<text class="label" x="{label_w - 6}" y="{y + 15}" text-anchor="end">'
            f"{escape(row_labels[i])}</text>"
        )
        for j, ck in enumerate(col_keys):
            cell = cells.get((rk, ck))
            if cell is None:
                continue
            value = number(cell[hint.value]) or 0.0
            fill, ink = colour(fraction(value, low, high))
            flag = is_flagged(cell, hint.flag)
            flagged += flag
            x = label_w + j * cw
            tip = f"{rk} × {ck}: {hint.value} {value:.4g}" + (" (flagged)" if flag else "")
            body.append(
                f'<g data-row="{escape(rk)}" data-column="{escape(ck)}" data-value="{value!r}">'
                f'<title>{escape(tip)}</title><rect class="{"cell flag" if flag else "cell"}" '
                f'x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" fill="{fill}"/>'
                f'<text class="{ink}" x="{x + cw / 2:.1f}" y="{y + 15}" text-anchor="middle">'
                f"{value:.3g}{' ★' if flag else ''}</text></g>"
            )
    title = table.title + (f" — {facet}" if facet else "")
    desc = (
        f"Heatmap of {hint.value}: rows {', '.join(hint.row)}, columns "
        f"{', '.join(hint.column)}; darker is higher, from {low:.3g} to {high:.3g}{capped}"
        + (f"; {flagged} cells flagged after the FDR correction (★, outlined)" if hint.flag else "")
    )
    return svg(width, height, title, desc, body, plot_id)
