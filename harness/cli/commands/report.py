"""``harness report``: tables from the log as text, JSON or CSV."""

from __future__ import annotations

from io import StringIO

import click
from rich.console import Console

from harness.cli.commands._render import (
    FILE_WIDTH,
    REPORT_WIDTH,
    render_summary,
    render_tables,
)
from harness.cli.log_params import LogParam
from harness.plugins.assembly import build_report
from harness.plugins.family_parts import report_sections
from harness.reporting.campaign_status import campaign_status, header_table
from harness.reporting.html import DEFAULT_MAX_CASES, write_html_report
from harness.reporting.output_files import check_output, write_output, write_stdout
from harness.reporting.report import to_csv, to_json
from harness.reporting.stats import TARONE_RULES
from harness.reporting.terminal_text import printable
from harness.store.log import Log


@click.command("report")
@click.argument("db", type=LogParam())
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
    "--tarone",
    type=click.Choice(TARONE_RULES),
    default="alpha",
    show_default=True,
    help="Which tests Tarone's rule keeps before Benjamini-Hochberg: alpha (those that can "
    "reach alpha) or gilbert (Tarone's 1990 iterative family size K: those that can reach "
    "alpha / K, as Gilbert 2005).",
)
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Write to this file instead of stdout."
)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False),
    help="Also write the report as one self-contained HTML page (plots, every conversation).",
)
@click.option(
    "--html-max-cases",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_CASES,
    show_default=True,
    help="Conversations embedded in the HTML page (violations first; every case is indexed).",
)
@click.option("--force", is_flag=True, help="Replace the --out / --html file if it exists.")
@click.option(
    "--all",
    "--wide",
    "all_rows",
    is_flag=True,
    help=f"Text: every table in full, every row and column, at its natural width (default: "
    f"the findings and a summary of each table in {REPORT_WIDTH} columns).",
)
def command(
    db: Log,
    fmt: str,
    campaign: str | None,
    top: int,
    mode: str | None,
    tarone: str,
    out: str | None,
    html_out: str | None,
    html_max_cases: int,
    force: bool,
    all_rows: bool,
) -> None:
    """Violation rates with 95% Wilson intervals, violating terms per group, co-violations."""
    if out is not None:
        check_output(out, inputs=[db], force=force)
    if html_out is not None:
        check_output(html_out, inputs=[db], force=force, option="--html")
    options: dict[str, object] = {"top": top}
    if mode:
        options["mode"] = mode
    if tarone != "alpha":
        options["tarone"] = tarone
    with db.reader() as log:
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
    if html_out is not None:
        written = write_html_report(
            db,
            html_out,
            sections=report_sections(),
            campaign=status.campaign,
            force=force,
            refresh=False,  # report replaces a page only with --force
            max_cases=html_max_cases,
            tables=tables[1:],  # the page has a header of its own
            **options,
        )
        click.echo(f"HTML report: {written}", err=True)
        if out is None and fmt == "text":
            return  # the page is the report asked for; text goes with --out or --format
    if fmt == "text" and out is None:
        if all_rows:
            render_tables(tables)
        else:
            render_summary(tables)
        return
    text = to_json(tables) if fmt == "json" else to_csv(tables) if fmt == "csv" else ""
    if fmt == "text":
        buf = StringIO()
        if all_rows:
            render_tables(tables, Console(file=buf, width=FILE_WIDTH))
        else:
            render_summary(tables, Console(file=buf, width=REPORT_WIDTH))
        text = buf.getvalue()
    if out:
        write_output(out, text, inputs=[db], force=force)
    else:
        write_stdout(text + "\n")
