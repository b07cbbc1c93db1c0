"""``harness report``: tables from the log as text, JSON or CSV."""

from __future__ import annotations

from io import StringIO

import click
from rich.console import Console

from harness.campaign_status import campaign_status, header_table
from harness.commands._render import FILE_WIDTH, TEXT_ROW_LIMIT, render_tables
from harness.output_files import check_output, write_output, write_stdout
from harness.report import build_report, to_csv, to_json
from harness.store.open import open_reader
from harness.terminal_text import printable


@click.command("report")
@click.argument("db", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text")
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Rows in the top-N tables.",
)
@click.option(
    "--mode", default=None, help="Oracle mode for suites that have several (e.g. strict, released)."
)
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Write to this file instead of stdout."
)
@click.option("--force", is_flag=True, help="Replace the --out file if it exists.")
@click.option(
    "--all",
    "all_rows",
    is_flag=True,
    help=f"Text: show every row of long tables (default: the first {TEXT_ROW_LIMIT}).",
)
def command(
    db: str,
    fmt: str,
    campaign: str | None,
    top: int,
    mode: str | None,
    out: str | None,
    force: bool,
    all_rows: bool,
) -> None:
    """Violation rates with 95% Wilson intervals, violating terms per group, co-violations."""
    if out is not None:
        check_output(out, inputs=[db], force=force)
    options: dict[str, object] = {"top": top}
    if mode:
        options["mode"] = mode
    with open_reader(db) as log:
        # The header first: which campaign, in what state (an unfinished one says so).
        status = campaign_status(log, campaign)
        tables = [header_table(status), *build_report(log, status.campaign, **options)]
    if status.status != "completed":
        click.echo(
            f"warning: campaign {status.campaign} is {status.status}"
            f"{': ' + printable(status.reason) if status.reason else ''}; this report covers "
            f"{status.cases} cases",
            err=True,
        )
    row_limit = None if all_rows else TEXT_ROW_LIMIT
    if fmt == "text" and out is None:
        render_tables(tables, row_limit=row_limit)
        return
    text = to_json(tables) if fmt == "json" else to_csv(tables) if fmt == "csv" else ""
    if fmt == "text":
        buf = StringIO()
        render_tables(tables, Console(file=buf, width=FILE_WIDTH), row_limit=row_limit)
        text = buf.getvalue()
    if out:
        write_output(out, text, inputs=[db], force=force)
    else:
        write_stdout(text + "\n")
