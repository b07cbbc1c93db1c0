"""``harness campaigns``: the campaigns of a log, with their state and progress."""

from __future__ import annotations

import click

from harness.cli.commands._render import render_tables
from harness.cli.log_params import LogParam
from harness.reporting.campaign_status import campaigns_table
from harness.reporting.output_files import write_stdout
from harness.reporting.report import to_csv, to_json
from harness.store.log import Log


@click.command("campaigns")
@click.argument("db", type=LogParam())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text")
def command(db: Log, fmt: str) -> None:
    """List the campaigns in DB: id, name, started, status, cases closed of planned (JSON
    and CSV: typed fields, the counts as integers)."""
    with db.reader() as log:
        table = campaigns_table(log, typed=fmt != "text")
    if fmt == "text":
        render_tables([table], empty="(no campaign in this log)")
    else:
        write_stdout((to_json([table]) if fmt == "json" else to_csv([table])) + "\n")
