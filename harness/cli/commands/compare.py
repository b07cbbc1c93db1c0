"""``harness compare``: model against model on the cases both ran (docs/compare.md)."""

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
from harness.reporting.compare import Side, compare_tables, read_sides
from harness.reporting.html import write_html_report
from harness.reporting.output_files import check_output, write_output, write_stdout
from harness.reporting.report import apply_fdr, to_csv, to_json, with_findings
from harness.reporting.tables import Table
from harness.store.log import Log
from harness.vocabulary.errors import ConfigError


def parse_pairs(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """``--pair BASE=NEW`` values as (base, new) model names."""
    out = []
    for value in values:
        base, sep, new = value.partition("=")
        if not sep or not base or not new:
            raise ConfigError(
                f"{value!r} is not BASE_MODEL=NEW_MODEL",
                field="--pair",
                fix="write --pair sim:v1=sim:v2 (the base model, '=', the new model)",
            )
        out.append((base, new))
    return out


def read_logs(logs: tuple[Log, ...]) -> list[tuple[str, list[Side]]]:
    """Each log's latest campaign as sides; a side is labelled with its log when there are
    several logs."""
    out = []
    for db in logs:
        with db.reader() as log:
            campaign = log.campaign_id()
            prefix = f"{db}:" if len(logs) > 1 else ""
            out.append((str(db), read_sides(log, campaign, label_prefix=prefix)))
    return out


# The command that prints a comparison whole, named where the summary leaves rows out.
WHOLE_COMPARISON = "harness compare --all (the same logs)"


def comparison(
    logs: tuple[Log, ...], pairs: tuple[str, ...], unpaired: bool, *, findings: bool = False
) -> list[Table]:
    """The corrected tables of ``harness compare`` (and ``harness check --against``); with
    ``findings``, after the findings block that states them (as a report's)."""
    tables = compare_tables(read_logs(logs), pairs=parse_pairs(pairs), paired=not unpaired)
    return with_findings(tables, whole=WHOLE_COMPARISON) if findings else apply_fdr(tables)


@click.command("compare")
@click.argument("logs", nargs=-1, required=True, type=LogParam())
@click.option(
    "--pair",
    "pairs",
    multiple=True,
    metavar="BASE=NEW",
    help="Models to compare (repeatable): a model of the first log (or of the one log) "
    "against one of the second; default: the models both logs ran, or each log's only one.",
)
@click.option(
    "--unpaired",
    is_flag=True,
    help="Compare as independent samples when the sides ran different cases (less power; "
    "the output says UNPAIRED).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text")
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Write to this file instead of stdout."
)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False),
    help="Also write the tables as one self-contained HTML page (plots of the differences; "
    "the header is the last log's campaign).",
)
@click.option("--force", is_flag=True, help="Replace the --out / --html file if it exists.")
@click.option(
    "--all",
    "--wide",
    "all_rows",
    is_flag=True,
    help=f"Text: every table in full, every row and column, at its natural width (default: "
    f"the findings and a summary of each table in {REPORT_WIDTH} columns, as `report`).",
)
def command(
    logs: tuple[Log, ...],
    pairs: tuple[str, ...],
    unpaired: bool,
    fmt: str,
    out: str | None,
    html_out: str | None,
    force: bool,
    all_rows: bool,
) -> None:
    """Compare models on the cases both ran: LOG (a campaign with two or more models),
    BASE.db NEW.db (paired tests per relation and group), or three or more logs (the
    trend of each relation's rate over them, in the order given)."""
    if out is not None:
        check_output(out, inputs=list(logs), force=force)
    if html_out is not None:
        check_output(html_out, inputs=list(logs), force=force, option="--html")
    tables = comparison(logs, pairs, unpaired, findings=True)
    if unpaired:
        click.echo("warning: UNPAIRED comparison (--unpaired): cases are not matched", err=True)
    if html_out is not None:
        written = write_html_report(
            logs[-1], html_out, sections=(), force=force, max_cases=0, tables=tables
        )
        click.echo(f"HTML page: {written}", err=True)
        if out is None and fmt == "text":
            return  # the page is what was asked for; text goes with --out or --format
    if fmt == "json":
        text = to_json(tables)
    elif fmt == "csv":
        text = to_csv(tables)
    else:
        if not tables:
            click.echo("(nothing to compare)")
            return
        buf = StringIO() if out is not None else None
        if all_rows:
            render_tables(tables, Console(file=buf, width=FILE_WIDTH) if buf else None)
        else:
            console = Console(file=buf, width=REPORT_WIDTH) if buf else None
            render_summary(tables, console, whole=WHOLE_COMPARISON)
        if buf is None:
            return
        text = buf.getvalue()
    if out:
        write_output(out, text, inputs=list(logs), force=force)
    else:
        write_stdout(text + "\n")
