"""Rendering shared by commands: summaries and report tables."""

from __future__ import annotations

import contextlib
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from harness.cli.exit_codes import campaign_exit_code, unfinished_reason
from harness.plugins.assembly import build_report
from harness.reporting.campaign_status import report_header
from harness.reporting.findings import (
    EFFECTS,
    FINDINGS_TABLE,
    SIZE_COLUMNS,
    findings_lines,
    is_test_table,
    label_count,
)
from harness.reporting.tables import Bars, Forest, Heatmap, Network, Paired, Table
from harness.reporting.terminal_text import printable, rich_text
from harness.running.engine import RunSummary
from harness.store.log import Log, LogLike
from harness.store.open import open_reader
from harness.vocabulary.errors import (
    CampaignAbortedError,
    ConcurrencyError,
    NotAHarnessLogError,
    StoreError,
)


@contextlib.contextmanager
def abort_names_log(db: Log) -> Iterator[None]:
    """An abort's fix (``harness resume LOG ...``) names this log, ready to run."""
    try:
        yield
    except CampaignAbortedError as exc:
        raise CampaignAbortedError(
            str(exc).replace("harness resume LOG", f"harness resume {db}")
        ) from exc


@contextlib.contextmanager
def resume_hint_if_the_database_goes(db: Log) -> Iterator[None]:
    """A PostgreSQL log lost while a campaign runs (the server restarted, the network went)
    ends the command with one line and the command that continues it, not the driver's
    paragraph: every step committed before is in the log (invariant 1)."""
    try:
        yield
    except StoreError as exc:
        if not db.is_postgres or isinstance(exc, (NotAHarnessLogError, ConcurrencyError)):
            raise
        first = str(exc).strip().splitlines()[0].rstrip(" .:")
        # Said here, as a stopped run says it: the error line has credentials (and with
        # them the user) taken out of every URL, and resume needs the user.
        click.echo(f"resume with: harness resume {db}", err=True)
        raise StoreError(
            f"{first}; the connection to the PostgreSQL log was lost mid-run (the server "
            "restarted or the network failed): every committed step is kept; resume once "
            "the server is back"
        ) from exc


def finish(summary: RunSummary, cases_to_close: int | None) -> None:
    """End `run`/`resume` with the exit status of the table in `harness.cli.exit_codes`."""
    why = unfinished_reason(summary, cases_to_close) if summary.status == "completed" else ""
    if why:
        click.echo(f"unfinished: {why}", err=True)
    code = campaign_exit_code(summary, cases_to_close)
    if code:
        sys.exit(code)


def echo_summary(summary: RunSummary, db: Log, html: str | None = None) -> None:
    """The run's end in one line, and how to resume a stopped one (``html``: the page the
    run wrote, which the resume then refreshes)."""
    page = f" --html {html}" if html is not None else ""
    outcomes = ", ".join(f"{k.lower()} {v}" for k, v in sorted(summary.outcomes.items()))
    click.echo(
        f"{summary.status}: {summary.cases_closed} cases closed ({outcomes or 'none'}); "
        f"{summary.calls} calls, {summary.failures} failed attempts, "
        f"{summary.resent_in_flight} in-flight calls re-sent, {summary.elapsed_s:.1f}s",
        err=True,
    )
    if summary.reason:
        click.echo(f"reason: {printable(summary.reason)}", err=True)
    if summary.status == "stopped" and summary.ceiling_usd is not None:
        # Resuming with the same ceiling would stop again at once: say how to raise it.
        click.echo(
            f"resume with a higher ceiling (it was ${summary.ceiling_usd:g}): "
            f"harness resume {db} --spend-ceiling {max(2 * summary.ceiling_usd, 1):g}{page}",
            err=True,
        )
    elif summary.status == "stopped":
        click.echo(f"resume with: harness resume {db}{page}", err=True)


# Rows of one table shown in a text report unless --all: a large log has tables of
# hundreds of thousands of rows (every disagreement, every unreadable answer).
TEXT_ROW_LIMIT = 100


FILE_WIDTH = 1000
"""Width of text written to a file or a pipe: wide enough that no table folds."""

REPORT_WIDTH = 100
"""Width of the default text report (`render_summary`): the findings and a summary of each
table fit it; ``--all`` shows every row and column at the tables' natural width."""

SUMMARY_ROWS = 10
"""Rows of a table in the default text report: its flagged rows first, then its order."""


def render_tables(
    tables: list[Table],
    console: Console | None = None,
    *,
    row_limit: int | None = None,
    empty: str = "(no verdicts in this log yet)",
) -> None:
    """Tables as text. ``row_limit``: rows shown per table, the rest counted in a line
    that names the option showing them all (None: every row)."""
    if console is None:
        console = Console()
        if not console.is_terminal:
            # A file or a pipe has no width: print each table at its natural width rather
            # than folding identifiers like "sim:planted" over two lines.
            console = Console(width=FILE_WIDTH)
    if not [t for t in tables if t.name != "campaign"]:
        tables = [*tables, Table("", "", [], [], note=empty)]
    for t in tables:
        if not t.columns:
            console.print(rich_text(t.note))
            continue
        if t.name == FINDINGS_TABLE:
            _print_findings(t, console)
            continue
        rows = t.rows if row_limit is None else t.rows[:row_limit]
        # Cells hold model text: Text objects are never parsed as markup.
        table = RichTable(
            title=rich_text(f"{t.title}\nunit: {t.unit}" if t.unit else t.title),
            caption=rich_text(t.note) if t.note else None,
            title_justify="left",
        )
        for col in t.columns:
            table.add_column(rich_text(col), overflow="fold")
        for row in rows:
            table.add_row(*(rich_text("" if v is None else v) for v in row))
        console.print(table)
        if len(rows) < len(t.rows):
            console.print(
                rich_text(
                    f"... {len(t.rows) - len(rows)} more rows of {len(t.rows)} in "
                    f"{t.name!r} not shown: harness report --all shows every row; "
                    "--format json or csv always has them all"
                )
            )


def _print_findings(table: Table, console: Console) -> None:
    width = min(console.width, REPORT_WIDTH)
    for line in findings_lines(table, width):
        console.print(rich_text(line), overflow="fold", crop=False, soft_wrap=True)


def terminal_console(width: int = REPORT_WIDTH) -> Console:
    """A console for the default text report: at most ``width`` columns on a terminal
    (fewer if the terminal is narrower), exactly ``width`` for a file or a pipe."""
    console = Console()
    if not console.is_terminal or console.width > width:
        console = Console(width=width)
    return console


def render_summary(
    tables: list[Table], console: Console | None = None, *, whole: str = "harness report --all"
) -> None:
    """The default text report, at most `REPORT_WIDTH` columns: the campaign header in a few
    lines, the findings block (`harness.reporting.findings`), then each table summarised:
    its flagged rows first, at most `SUMMARY_ROWS` rows, and the columns that fit (its
    labels, size, rate, effect, the columns its plots draw and its test's outcome are kept;
    others are left out from the right). A line under each names what was left out and
    ``whole``, the command that shows everything."""
    console = console or terminal_console()
    width = min(console.width, REPORT_WIDTH)
    if not [t for t in tables if t.name not in ("campaign", FINDINGS_TABLE)]:
        tables = [*tables, Table("", "", [], [], note="(no verdicts in this log yet)")]
    for t in tables:
        if not t.columns:
            console.print(rich_text(t.note))
        elif t.name == FINDINGS_TABLE:
            _print_findings(t, console)
        elif t.columns == ["field", "value"]:
            console.print(rich_text(t.title))
            items = [
                printable(f"{k}: {'' if v is None else v}", keep_layout=False) for k, v in t.rows
            ]
            for line in _item_lines(items, width):
                console.print(rich_text(line), crop=False)
        else:
            console.print()
            _print_summary(t, console, width, whole)


def _item_lines(items: list[str], width: int) -> list[str]:
    """``items`` joined by " · " into lines of at most ``width``, an item broken only when
    it is longer than a line by itself (a value such as a time stays whole on its line)."""
    lines: list[str] = []
    line = ""
    for item in items:
        joined = f"{line} · {item}" if line else item
        if len(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        parts = textwrap.wrap(item, width) or [""]
        lines.extend(parts[:-1])
        line = parts[-1]
    if line:
        lines.append(line)
    return lines


# Columns a summary keeps whatever its width: they say what a row is and what it found.
KEPT = ("p_fdr", "flagged", "kappa", "kappa_low", "kappa_high")


def plotted_columns(table: Table) -> set[str]:
    """The columns a table's plot hints draw: its text summary shows them, so that the
    plot and the table show the same measure."""
    out: set[str] = set()
    for hint in table.plot:
        if isinstance(hint, Forest):
            out |= {hint.rate, hint.low, hint.high}
        elif isinstance(hint, Heatmap):
            out.add(hint.value)
        elif isinstance(hint, Network):
            out.add(hint.weight)
        elif isinstance(hint, Paired):
            out |= {hint.first, hint.second}
        elif isinstance(hint, Bars):
            out.add(hint.value)
    return out


def _short(value: Any, column: str) -> str:
    """A cell of a summary: numbers to 3 decimals (p-values to 2 significant digits)."""
    if value is None:
        return ""
    if isinstance(value, float):
        if column.startswith("p"):
            return f"{value:.2g}" if value > 0 else "<1e-06"
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def summary_columns(cols: Sequence[str]) -> list[tuple[str, tuple[int, ...]]]:
    """The columns of a summary: a value followed by its interval (``x, x_low, x_high`` or
    ``rate, ci95_low, ci95_high``) becomes one column "x [95% CI]"; others stay as they are."""
    out: list[tuple[str, tuple[int, ...]]] = []
    i = 0
    while i < len(cols):
        if i + 2 < len(cols) and cols[i + 1].endswith("low") and cols[i + 2].endswith("high"):
            out.append((f"{cols[i]} [95% CI]", (i, i + 1, i + 2)))
            i += 3
        else:
            out.append((cols[i], (i,)))
            i += 1
    return out


def _summary_cell(row: Sequence[Any], cols: Sequence[str], at: tuple[int, ...]) -> str:
    if len(at) == 1:
        return _short(row[at[0]], cols[at[0]])
    value, low, high = (row[i] for i in at)
    if value is None:
        return ""
    if low is None or high is None:
        return _short(value, cols[at[0]])
    return f"{_short(value, '')} [{low:.2f}, {high:.2f}]"


def _print_summary(t: Table, console: Console, width: int, whole: str) -> None:
    cols = t.columns
    order = list(range(len(t.rows)))
    if is_test_table(t):
        flag = cols.index("flagged")
        order.sort(key=lambda i: t.rows[i][flag] != "yes")  # stable: flagged rows first
    shown = [t.rows[i] for i in order[:SUMMARY_ROWS]]
    labels = label_count(t)
    # A label with one value in every row is said once, above the table.
    same = {i for i in range(labels) if len(t.rows) > 1 and len({str(r[i]) for r in t.rows}) == 1}
    keep = set(range(labels)) | {
        i for i, c in enumerate(cols) if c in KEPT or c in plotted_columns(t)
    }
    size = next((c for c in SIZE_COLUMNS if c in cols), None)
    if size is not None:
        keep.add(cols.index(size))
    effect = next((e for e in EFFECTS if e.value in cols), None)
    if effect is not None:
        keep |= {cols.index(c) for c in (effect.value, effect.low, effect.high) if c in cols}
    elif "rate" in cols:
        keep.add(cols.index("rate"))
    merged = [(h, at) for h, at in summary_columns(cols) if at[0] not in same]
    chosen = list(range(len(merged)))

    def build(which: list[int]) -> RichTable:
        table = RichTable(
            title=rich_text(t.title),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        for j in which:
            table.add_column(rich_text(merged[j][0]), overflow="fold")
        for row in shown:
            table.add_row(*(rich_text(_summary_cell(row, cols, merged[j][1])) for j in which))
        return table

    wide = console.options.update_width(FILE_WIDTH)
    for j in reversed(range(len(merged))):
        if console.measure(build(chosen), options=wide).maximum <= width:
            break
        if merged[j][1][0] not in keep:
            chosen.remove(j)
    said = [f"{cols[i]}: {t.rows[0][i]}" for i in sorted(same)]
    head = "; ".join([*said, *([f"unit: {t.unit}"] if t.unit else [])])
    for line in textwrap.wrap(printable(head, keep_layout=False), width):
        console.print(rich_text(line), crop=False)
    console.print(build(chosen), width=width)
    left = []
    if len(shown) < len(t.rows):
        left.append(f"{len(t.rows) - len(shown)} more rows of {len(t.rows)} in {t.name!r}")
    dropped = [merged[j][0] for j in range(len(merged)) if j not in chosen]
    if dropped:
        left.append("columns " + ", ".join(dropped))
    line = ("not shown: " + "; ".join(left) + "; " if left else "") + (
        f"the note and every row and column: {whole}"
    )
    for part in textwrap.wrap(printable(line, keep_layout=False), width):
        console.print(rich_text(part), crop=False)


def echo_report(db: LogLike, campaign: str | None = None) -> None:
    with open_reader(db) as log:
        tables = [*report_header(log, campaign), *build_report(log, campaign)]
    render_summary(tables)
