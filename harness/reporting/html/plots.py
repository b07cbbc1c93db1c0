"""Static SVG drawings of report tables, from the plot hints a table carries
(`harness.reporting.tables.Forest`, `Paired`, `Bars`; heatmaps are
`harness.reporting.html.heatmap`, the graph `harness.reporting.html.network`).

Drawn here rather than by a plotting runtime: the page needs no script to show them, they
print, they scale, and they weigh a few kilobytes. Colours come from CSS classes
(``report.css``), so light, dark and print follow the page; every drawing is a
``role="img"`` with a title and a text description for screen readers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape as escape_html
from typing import Any

from harness.reporting.tables import Bars, Forest, Paired, Table
from harness.reporting.terminal_text import printable

MAX_ROWS = 60  # rows drawn per plot; the table below it has them all
ROW_H = 18
LABEL_W = 300
PLOT_W = 360


def escape(text: object) -> str:
    """Text for SVG: escaped, and control characters shown as escapes (``\\x1f``), which
    XML could not hold."""
    return escape_html(printable(text))


def fraction(value: float, low: float, high: float) -> float:
    """Where ``value`` lies between ``low`` and ``high``, kept within [0, 1] (a degenerate
    or overflowing span puts it in the middle)."""
    span = high - low
    if not (span > 0 and math.isfinite(span)):
        return 0.5
    return min(max((value - low) / span, 0.0), 1.0)


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def label_of(row: dict[str, Any], columns: Sequence[str]) -> str:
    return " · ".join(str(row[c]) for c in columns if c in row and row[c] not in (None, ""))


def shorten(text: str, limit: int = 46) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_flagged(row: dict[str, Any], flag: str | None) -> bool:
    return flag is not None and str(row.get(flag, "")).lower() == "yes"


def rows_of(table: Table) -> list[dict[str, Any]]:
    return [dict(zip(table.columns, r, strict=True)) for r in table.rows]


def svg(width: int, height: int, title: str, desc: str, body: list[str], plot_id: str) -> str:
    return (
        f'<svg class="plot" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" aria-labelledby="{plot_id}-t {plot_id}-d">'
        f'<title id="{plot_id}-t">{escape(title)}</title>'
        f'<desc id="{plot_id}-d">{escape(desc)}</desc>{"".join(body)}</svg>'
    )


def _scale(values: list[float]) -> tuple[float, float]:
    """The axis range: [0, 1] for rates, else the data's range widened to include 0."""
    if not values:
        return 0.0, 1.0
    low, high = min([*values, 0.0]), max([*values, 0.0])
    if low >= 0 and high <= 1:
        # Rates: from 0 to a round ceiling above the largest, so small rates stay apart.
        step = 0.05 if high < 0.3 else 0.1 if high < 0.6 else 0.25
        return 0.0, min(1.0, max(step, math.ceil(high * 1.05 / step) * step))
    return low, high


def _axis(x0: int, y: int, low: float, high: float) -> list[str]:
    out = [f'<line class="axis" x1="{x0}" y1="{y}" x2="{x0 + PLOT_W}" y2="{y}"/>']
    for i in range(5):
        value = low + (high - low) * i / 4
        x = x0 + PLOT_W * i / 4
        if not math.isfinite(value):
            continue
        out.append(f'<line class="grid" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{y}"/>')
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{y + 13}" text-anchor="middle">{value:.3g}</text>'
        )
    return out


def _capped(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    if len(rows) <= MAX_ROWS:
        return rows, ""
    return rows[:MAX_ROWS], f" (the first {MAX_ROWS} of {len(rows)} rows; the table has all)"


def forest(table: Table, hint: Forest, plot_id: str) -> str | None:
    rows = [r for r in rows_of(table) if number(r.get(hint.rate)) is not None]
    if not rows:
        return None
    rows, capped = _capped(rows)
    values = [v for r in rows for c in (hint.rate, hint.low, hint.high) if (v := number(r.get(c)))]
    low, high = _scale([v for v in values if v is not None])
    height = len(rows) * ROW_H + 24

    def x(v: float) -> float:
        return LABEL_W + fraction(v, low, high) * PLOT_W

    body = _axis(LABEL_W, height - 20, low, high)
    flagged = 0
    for i, r in enumerate(rows):
        y = i * ROW_H + ROW_H / 2
        label = label_of(r, hint.label)
        rate = number(r[hint.rate]) or 0.0
        lo, hi = number(r.get(hint.low)), number(r.get(hint.high))
        flag = is_flagged(r, hint.flag)
        flagged += flag
        tip = f"{label}: {rate:.4g}" + (
            f" [{lo:.4g}, {hi:.4g}]" if lo is not None and hi is not None else ""
        )
        data = f' data-label="{escape(label)}" data-value="{rate!r}"'
        body.append(f"<g{data}><title>{escape(tip + (' (flagged)' if flag else ''))}</title>")
        body.append(
            f'<text class="label" x="{LABEL_W - 6}" y="{y + 4}" text-anchor="end">'
            f"{escape(shorten(label))}</text>"
        )
        if lo is not None and hi is not None:
            body.append(f'<line class="ci" x1="{x(lo):.1f}" y1="{y}" x2="{x(hi):.1f}" y2="{y}"/>')
        mark = "pt flag" if flag else "pt"
        body.append(f'<circle class="{mark}" cx="{x(rate):.1f}" cy="{y}" r="{5 if flag else 4}"/>')
        body.append("</g>")
    desc = (
        f"Forest plot of {hint.rate} with its interval {hint.low} to {hint.high} per "
        f"{', '.join(hint.label)}: {len(rows)} rows{capped}"
        + (f", {flagged} flagged (larger filled marks)" if hint.flag else "")
    )
    return svg(LABEL_W + PLOT_W + 20, height, table.title, desc, body, plot_id)


def paired(table: Table, hint: Paired, plot_id: str) -> str | None:
    rows = [
        r
        for r in rows_of(table)
        if number(r.get(hint.first)) is not None and number(r.get(hint.second)) is not None
    ]
    if not rows:
        return None
    rows, capped = _capped(rows)
    low, high = _scale([number(r[c]) or 0.0 for r in rows for c in (hint.first, hint.second)])
    height = len(rows) * ROW_H + 44

    def x(v: float) -> float:
        return LABEL_W + fraction(v, low, high) * PLOT_W

    body = _axis(LABEL_W, height - 40, low, high)
    for i, r in enumerate(rows):
        y = i * ROW_H + ROW_H / 2
        a, b = number(r[hint.first]) or 0.0, number(r[hint.second]) or 0.0
        label = label_of(r, hint.label)
        flag = is_flagged(r, hint.flag)
        tip = f"{label}: {hint.first} {a:.4g} → {hint.second} {b:.4g}" + (
            " (flagged)" if flag else ""
        )
        body.append(
            f"<g><title>{escape(tip)}</title>"
            f'<text class="label" x="{LABEL_W - 6}" y="{y + 4}" text-anchor="end">'
            f"{escape(shorten(label))}</text>"
            f'<line class="{"pair flag" if flag else "pair"}" x1="{x(a):.1f}" y1="{y}" '
            f'x2="{x(b):.1f}" y2="{y}"/>'
            f'<circle class="pt open" cx="{x(a):.1f}" cy="{y}" r="4"/>'
            f'<circle class="pt" cx="{x(b):.1f}" cy="{y}" r="4"/></g>'
        )
    ly = height - 10
    body.append(
        f'<circle class="pt open" cx="{LABEL_W + 6}" cy="{ly - 4}" r="4"/>'
        f'<text class="tick" x="{LABEL_W + 14}" y="{ly}">{escape(hint.first)}</text>'
        f'<circle class="pt" cx="{LABEL_W + 146}" cy="{ly - 4}" r="4"/>'
        f'<text class="tick" x="{LABEL_W + 154}" y="{ly}">{escape(hint.second)}</text>'
    )
    desc = (
        f"Paired plot: per {', '.join(hint.label)}, {hint.first} (open circle) joined to "
        f"{hint.second} (filled circle); {len(rows)} rows{capped}"
    )
    return svg(LABEL_W + PLOT_W + 20, height, table.title, desc, body, plot_id)


def bars(table: Table, hint: Bars, plot_id: str) -> str | None:
    rows = [r for r in rows_of(table) if number(r.get(hint.value)) is not None]
    if not rows:
        return None
    rows, capped = _capped(rows)
    values = [number(r[hint.value]) or 0.0 for r in rows]
    low, high = min(min(values), 0.0), max(max(values), 0.0)
    high = high if high > low else low + 1
    height = len(rows) * ROW_H + 24

    def x(v: float) -> float:
        return LABEL_W + fraction(v, low, high) * PLOT_W

    body = _axis(LABEL_W, height - 20, low, high)
    for i, (r, v) in enumerate(zip(rows, values, strict=True)):
        y = i * ROW_H
        label = label_of(r, hint.label)
        left, right = sorted((x(0.0), x(v)))
        body.append(
            f"<g><title>{escape(f'{label}: {hint.value} {v:.4g}')}</title>"
            f'<text class="label" x="{LABEL_W - 6}" y="{y + 13}" text-anchor="end">'
            f"{escape(shorten(label))}</text>"
            f'<rect class="bar" x="{left:.1f}" y="{y + 3}" width="{max(right - left, 1):.1f}" '
            f'height="{ROW_H - 6}"/></g>'
        )
    desc = f"Bar chart of {hint.value} per {', '.join(hint.label)}: {len(rows)} rows{capped}"
    return svg(LABEL_W + PLOT_W + 20, height, table.title, desc, body, plot_id)
