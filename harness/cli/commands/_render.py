"""Rendering shared by commands: summaries and report tables."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import click
from rich.console import Console
from rich.table import Table as RichTable

from harness.cli.exit_codes import campaign_exit_code, unfinished_reason
from harness.plugins.assembly import build_report
from harness.reporting.campaign_status import report_header
from harness.reporting.tables import Table
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


def echo_report(db: LogLike, campaign: str | None = None) -> None:
    with open_reader(db) as log:
        tables = [*report_header(log, campaign), *build_report(log, campaign)]
    render_tables(tables, row_limit=TEXT_ROW_LIMIT)
