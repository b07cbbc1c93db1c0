"""``harness replay``: re-run a campaign offline from its log and compare with what it logged."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.cli.exit_codes import ExitCode
from harness.cli.log_params import LogParam
from harness.reporting.output_files import check_new_log
from harness.reporting.terminal_text import printable
from harness.store.log import Log
from harness.verifying.replay import describe, replay_into, verify_log


@click.command("replay")
@click.argument("db", type=LogParam())
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option("--verify", is_flag=True, help="Exit with status 1 when any ask or verdict differs.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Also re-run the campaign through the engine into this new log, every model "
    "answered from DB, and print its report.",
)
@click.option("--limit", default=50, show_default=True, help="Differences to print at most.")
def command(db: Log, campaign: str | None, verify: bool, out: str | None, limit: int) -> None:
    """Recompute every follow-up and verdict of DB from its recorded replies, without
    network, and list the asks and verdicts today's code computes differently."""
    if out is not None:
        check_new_log(out, inputs=[db])
    result = verify_log(db, campaign)
    for line in describe(result, limit):
        # Differences quote asks built from model text: shown, never obeyed.
        click.echo(printable(line))
    if out is not None:
        # Imported here: the engine run and the report are only for --out (the report's
        # renderer imports the engine and rich, a large part of `replay --verify`'s start).
        import asyncio

        from harness.cli.commands._render import echo_report

        run = asyncio.run(replay_into(db, out, result.campaign))
        click.echo(
            f"re-ran through the engine into {out}: {run.summary.cases_closed} cases closed, "
            f"{run.served} recorded replies served, {run.misses} requests not in the log",
            err=True,
        )
        echo_report(Path(out), result.campaign)
    if verify and result.differences:
        sys.exit(ExitCode.DIFFERENCES)
