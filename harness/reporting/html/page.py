"""``harness report DB --html OUT.html``: one self-contained page (styles, script, plots and
cases inline; nothing is fetched when it is viewed) with the campaign's header, every
report table as an accessible table drawn by its plot hints, and a case browser that every
count of a table opens on the cases behind it.

Every string from the log (model text above all) reaches the page through `html.escape`
or inside the base64 case pack (`harness.reporting.html.cases`); the script shows it with
``textContent``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from html import escape
from importlib import resources
from typing import Any, TextIO

from harness.reporting.campaign_status import campaign_status, header_table, paid_replies
from harness.reporting.findings import FINDINGS_TABLE
from harness.reporting.html.cases import CaseIndex, case_index, packed_pieces
from harness.reporting.html.heatmap import heatmaps
from harness.reporting.html.network import networks
from harness.reporting.html.plots import bars, forest, number, paired
from harness.reporting.report import build_tables
from harness.reporting.tables import (
    Forest,
    Heatmap,
    Network,
    Paired,
    PlotHint,
    ReportContext,
    ReportSection,
    Table,
)
from harness.store.reader import EventReader

# A count in these columns opens the cases with that outcome (other counts open them all).
OUTCOME_COLUMNS = {
    "violated": "VIOLATED",
    "held": "HELD",
    "invalid": "INVALID",
    "refused": "REFUSED",
}
NO_LINK_TABLES = {"campaign", "statistical_tests"}


def _asset(name: str) -> str:
    return (
        resources.files("harness.reporting.html")
        .joinpath("assets", name)
        .read_text(encoding="utf-8")
    )


def plots_for(table: Table, hint: PlotHint, plot_id: str) -> list[str]:
    """The SVG drawings one hint asks for (none when it has nothing to draw)."""
    if isinstance(hint, Forest):
        return [d for d in [forest(table, hint, plot_id)] if d]
    if isinstance(hint, Heatmap):
        return heatmaps(table, hint, plot_id)
    if isinstance(hint, Network):
        return networks(table, hint, plot_id)
    if isinstance(hint, Paired):
        return [d for d in [paired(table, hint, plot_id)] if d]
    return [d for d in [bars(table, hint, plot_id)] if d]


def plots_of(table: Table, anchor: str) -> list[str]:
    """The SVG drawings a table's hints ask for (a hint with nothing to draw gives none)."""
    return [
        d for i, hint in enumerate(table.plot) for d in plots_for(table, hint, f"{anchor}-p{i}")
    ]


def drawn_columns(hint: PlotHint) -> tuple[str, ...]:
    """The table columns a hint draws, the measure first: the plot's caption names them and
    the table marks them, so that plot and table are read as the same measure."""
    if isinstance(hint, Forest):
        return (hint.rate, hint.low, hint.high)
    if isinstance(hint, Heatmap):
        return (hint.value,)
    if isinstance(hint, Network):
        return (hint.weight,)
    if isinstance(hint, Paired):
        return (hint.first, hint.second)
    return (hint.value,)


def measure_caption(hint: PlotHint) -> str:
    """What a plot draws, in the words of the table's columns."""
    cols = drawn_columns(hint)
    if isinstance(hint, Forest):
        text = f"Drawn: {cols[0]}, with its interval {cols[1]} to {cols[2]}"
    elif isinstance(hint, Heatmap):
        text = f"Drawn: {cols[0]} per {' · '.join(hint.row)} × {' · '.join(hint.column)}"
    elif isinstance(hint, Network):
        text = f"Edges: {cols[0]}" + (
            f"; only the rows flagged by their test ({hint.flag} = yes) are drawn"
            if hint.flag is not None
            else ""
        )
    elif isinstance(hint, Paired):
        text = f"Drawn: {cols[0]} and {cols[1]}"
    else:
        text = f"Drawn: {cols[0]}"
    return text + " (the table's columns of these names, marked ◆)."


def key_columns(table: Table) -> int:
    """How many leading columns name a row (model, relation, group, term...): those before
    the first column holding a number. Later strings are results (a test's name, a flag, a
    verdict), never labels to filter cases by."""
    for i, _ in enumerate(table.columns):
        if any(number(row[i]) is not None for row in table.rows):
            return i
    return len(table.columns)


def row_filter(
    table: Table, row: list[Any], index: CaseIndex, keys: int | None = None
) -> dict[str, Any] | None:
    """What a number of this row links to: the cases of its model and relation carrying
    every other label the row's key columns name (its group, attribute, term...), when the
    log knows them; None when the row names nothing the cases carry."""
    keys = key_columns(table) if keys is None else keys
    found: dict[str, Any] = {"tags": []}
    for column, value in list(zip(table.columns, row, strict=True))[:keys]:
        if not isinstance(value, str) or not value:
            continue
        if column == "model" and index.known("models", value):
            found["model"] = value
        elif column == "relation" and index.known("relations", value):
            found["relation"] = value
        elif column not in ("model", "relation") and index.known("tags", value.lower()):
            found["tags"].append(value.lower())
    if len(found) == 1 and not found["tags"]:
        return None
    return found


def _cell(value: Any) -> str:
    if value is None:
        return '<td class="none">–</td>'
    if number(value) is not None:
        return f'<td class="num">{escape(str(value))}</td>'
    return f"<td>{escape(str(value))}</td>"


def _linked(value: Any, column: str, linked: bool) -> str:
    if not linked or number(value) is None:
        return _cell(value)
    outcome = OUTCOME_COLUMNS.get(column)
    extra = f' data-outcome="{outcome}"' if outcome else ""
    return f'<td class="num"><a href="#cases" class="drill"{extra}>{escape(str(value))}</a></td>'


def table_html(table: Table, index: CaseIndex | None) -> str:
    """The table itself; a row whose cases the log can name carries their filter, and each
    of its numbers is a link to them."""
    drawn = {c for hint in table.plot for c in drawn_columns(hint)}
    head = "".join(
        f'<th scope="col" class="drawn" title="drawn in the plot above">{escape(c)} ◆</th>'
        if c in drawn
        else f'<th scope="col">{escape(c)}</th>'
        for c in table.columns
    )
    body = []
    keys = key_columns(table)
    for row in table.rows:
        base = None
        if index is not None and table.name not in NO_LINK_TABLES:
            base = row_filter(table, row, index, keys)
        cells = "".join(
            _linked(v, c, base is not None) for c, v in zip(table.columns, row, strict=True)
        )
        attr = ""
        if base is not None:
            attr = f' data-filter="{escape(json.dumps(base, ensure_ascii=False), quote=True)}"'
        body.append(f"<tr{attr}>{cells}</tr>")
    return (
        f'<div class="table-wrap" tabindex="0" role="region" '
        f'aria-label="{escape(table.title, quote=True)} (scrollable table)">'
        f"<table><caption>{escape(table.title)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def section_html(table: Table, index: CaseIndex | None) -> str:
    anchor = f"t-{table.name}"
    plots = "".join(
        f'<figure class="figure">{drawing}<figcaption class="measure" '
        f'data-measure="{escape(drawn_columns(hint)[0], quote=True)}">'
        f"{escape(measure_caption(hint))}</figcaption></figure>"
        for i, hint in enumerate(table.plot)
        for drawing in plots_for(table, hint, f"{anchor}-p{i}")
    )
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    if table.unit:
        note = f'<p class="unit">unit: {escape(table.unit)}</p>{note}'
    count = f'<p class="rows">{len(table.rows)} rows</p>'
    return (
        f'<section id="{anchor}" class="report-table" aria-labelledby="{anchor}-h">'
        f'<h2 id="{anchor}-h">{escape(table.title)}</h2>{plots}{note}{count}'
        f"{table_html(table, index)}</section>"
    )


FINDING_PARTS = (
    ("flagged", "Flagged", "ul"),
    ("inconclusive", "Inconclusive: too few cases to decide", "ul"),
    ("more_inconclusive", "", "ul"),
    ("other_inconclusive", "", "ul"),
    ("undetected", "Nothing flagged", "ul"),
    ("health", "Health of the run", "ul"),
)


def findings_html(table: Table) -> str:
    """The findings block (`harness.reporting.findings`) as sentences, first on the page:
    each flagged claim with links that open its example conversations in the case browser
    (every case of the campaign is in its index); the full table of its values follows in a
    closed ``details``."""
    at = {c: i for i, c in enumerate(table.columns)}
    parts: dict[str, list[str]] = {}
    headline = ""
    for row in table.rows:
        kind, text = str(row[at["kind"]]), str(row[at["text"]])
        if kind == "headline":
            headline = text
            continue
        examples = row[at["examples"]] or []
        links = ", ".join(
            f'<a href="#cases" class="case-link" data-case="{escape(str(e), quote=True)}">'
            f"{escape(str(e))}</a>"
            for e in examples
        )
        item = escape(text.split("; e.g. cases ")[0]) + (
            f"; example conversations: {links}" if links else ""
        )
        parts.setdefault(kind.split(":")[0], []).append(
            f'<li class="finding {escape(kind.split(":")[0])}">{item}</li>'
        )
    body = [f'<p class="headline">{escape(headline)}</p>']
    for kind, title, tag in FINDING_PARTS:
        items = parts.get(kind)
        if not items:
            continue
        if title:
            body.append(f"<h3>{escape(title)}</h3>")
        body.append(f'<{tag} class="findings-{kind}">{"".join(items)}</{tag}>')
    note = f'<p class="note">{escape(table.note)}</p>'
    return (
        f'<section id="t-{table.name}" class="findings" aria-labelledby="t-{table.name}-h">'
        f'<h2 id="t-{table.name}-h">{escape(table.title)}</h2>{"".join(body)}{note}'
        f"<details><summary>Every value of the findings</summary>{table_html(table, None)}"
        "</details></section>"
    )


def header_html(log: EventReader, campaign: str) -> tuple[str, str]:
    status = campaign_status(log, campaign)
    table = header_table(status)
    rows = list(table.rows)
    cost, priced, tokens_in, tokens_out = log.connection.execute(
        # json_extract is TEXT on PostgreSQL: the casts make the sums one SQL for both.
        "SELECT SUM(CAST(json_extract(payload, '$.reply.cost_usd') AS DOUBLE PRECISION)),"
        " COUNT(json_extract(payload, '$.reply.cost_usd')),"
        " SUM(CAST(json_extract(payload, '$.reply.usage.input_tokens') AS BIGINT)),"
        " SUM(CAST(json_extract(payload, '$.reply.usage.output_tokens') AS BIGINT))"
        " FROM events WHERE campaign = ? AND kind = 'ReplyReceived'"
        # JSON false is 0 in SQLite and 'false' in PostgreSQL: compared as text, both stores.
        " AND COALESCE(CAST(json_extract(payload, '$.cached') AS TEXT), '0') IN ('0', 'false')",
        (campaign,),
    ).fetchone()
    config = status.started.config if status.started else {}
    for relation in config.get("relations") or []:
        options = json.dumps(relation.get("options") or {}, ensure_ascii=False, sort_keys=True)
        rows.append(["relation", f"{relation.get('name', '?')} {options}"])
    rows.append(["repeats", config.get("repeats")])
    rows.append(["paid replies", paid_replies(log, campaign)])
    rows.append(["tokens in / out", f"{tokens_in or 0} / {tokens_out or 0}"])
    rows.append(
        ["cost", f"${cost:.4f} ({priced} priced replies)" if priced else "no priced replies"]
    )
    items = "".join(
        f'<tr><th scope="row">{escape(str(k))}</th><td>{escape("" if v is None else str(v))}'
        "</td></tr>"
        for k, v in rows
    )
    state = escape(status.status)
    html = (
        '<section id="campaign" aria-labelledby="campaign-h">'
        f'<h2 id="campaign-h">Campaign {escape(status.name)} '
        f'<span class="status status-{state}">{state}</span></h2>'
        f'<table class="header"><caption class="sr-only">Campaign header</caption>'
        f"<tbody>{items}</tbody></table></section>"
    )
    return html, status.name


def cases_html(index: CaseIndex) -> str:
    shown = index.shown
    cap = (
        f" Conversations embedded: {shown} of {index.total} (capped by --html-max-cases: "
        "violations first, then INVALID, then the rest; 'harness export' has every one)."
        if shown < index.total
        else ""
    )
    return (
        '<section id="cases" aria-labelledby="cases-h"><h2 id="cases-h">Cases</h2>'
        f'<p class="note">{index.total} cases. A count in a table above opens the cases it '
        "counts over (its model, relation and the labels its row names); the count itself "
        f"may count other units (terms, answers, repeats).{escape(cap)}</p>"
        '<noscript><p class="note">The case browser needs JavaScript; the tables and plots '
        "above do not.</p></noscript>"
        '<form id="filters" class="filters" role="search" aria-label="Filter cases">'
        '<label>Model <select id="f-model"><option value="">all</option></select></label>'
        '<label>Relation <select id="f-relation"><option value="">all</option></select>'
        "</label>"
        '<label>Outcome <select id="f-outcome"><option value="">all</option></select></label>'
        '<label>Group / label <input id="f-tag" list="f-tags" autocomplete="off" '
        'placeholder="e.g. profession"><datalist id="f-tags"></datalist></label>'
        '<label>Search <input id="f-search" type="search" placeholder="id, prompt or reply">'
        "</label>"
        '<span id="f-row" class="row-filter" hidden></span>'
        '<button type="button" id="f-clear">Clear filters</button></form>'
        '<p id="case-count" role="status" aria-live="polite"></p>'
        '<div class="browser"><ol id="case-list" class="case-list" aria-label="Matching cases">'
        "</ol>"
        '<article id="conversation" class="conversation" tabindex="-1" aria-live="polite">'
        '<p class="note">Choose a case to read its conversation.</p></article></div>'
        '<button type="button" id="more" hidden>Show more cases</button></section>'
    )


CAMPAIGN_META = "harness-campaign"


def render_html(
    log: EventReader,
    campaign: str | None = None,
    *,
    sections: Sequence[ReportSection],
    max_cases: int | None = None,
    tables: list[Table] | None = None,
    **options: Any,
) -> str:
    """The whole page for ``campaign`` of ``log`` (its latest by default), as one string:
    `write_page` into memory (a file is written in pieces by `write_page` itself)."""
    out = io.StringIO()
    write_page(out, log, campaign, sections=sections, max_cases=max_cases, tables=tables, **options)
    return out.getvalue()


def write_page(
    out: TextIO,
    log: EventReader,
    campaign: str | None = None,
    *,
    sections: Sequence[ReportSection],
    max_cases: int | None = None,
    tables: list[Table] | None = None,
    **options: Any,
) -> None:
    """Write the whole page for ``campaign`` of ``log`` (its latest by default) to ``out``
    piece by piece: the tables of ``sections``, or ``tables`` if the caller built them
    already with these ``options``. Each section and each piece of the case pack is written
    as it is made: the page is never held whole (a million cases' pack is tens of MB)."""
    campaign = log.campaign_id(campaign)
    if tables is None:
        tables = build_tables(log, campaign, sections=sections, **options)
    index = case_index(ReportContext(log, campaign), max_cases)
    header, name = header_html(log, campaign)
    nav = "".join(f'<li><a href="#t-{escape(t.name)}">{escape(t.title)}</a></li>' for t in tables)
    out.write(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # No request may leave the page: scripts and styles inline only, no fetches.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
        'connect-src data:">'
        '<meta name="color-scheme" content="light dark">'
        # Which campaign the page shows: `harness resume --html` refreshes a page of its own
        # campaign without --force (harness.reporting.html.page_campaign).
        f'<meta name="{CAMPAIGN_META}" content="{escape(campaign)}">'
        f"<title>bias-harness report: {escape(name)}</title>"
        f"<style>{_asset('report.css')}</style></head><body>"
        '<a class="skip" href="#main">Skip to the report</a>'
        f"<header><h1>bias-harness report: {escape(name)}</h1></header>"
        f'<nav aria-label="Report sections"><ol><li><a href="#campaign">Campaign</a></li>{nav}'
        '<li><a href="#cases">Cases</a></li></ol></nav>'
        f'<main id="main">{header}'
    )
    for t in tables:
        out.write(findings_html(t) if t.name == FINDINGS_TABLE else section_html(t, index))
    out.write(f"{cases_html(index)}</main>")
    out.write('<script type="application/octet-stream" id="case-pack">')
    for piece in packed_pieces(index):
        out.write(piece)
    out.write(f"</script><script>{_asset('report.js')}</script></body></html>\n")
