"""``harness worker DB_URL``: run cases of a campaign stored in PostgreSQL, beside any
number of other workers (docs/scale-out.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from harness.cli.commands._render import echo_summary, finish
from harness.cli.log_params import LogFileParam, LogParam
from harness.running.cache import open_cache
from harness.store.log import Log


@click.command("worker")
@click.argument("db_url", type=LogParam())
@click.option("--campaign", help="Campaign id (default: the latest in the database).")
@click.option(
    "--lease",
    "lease_s",
    type=click.FloatRange(min=1.0),
    default=30.0,
    show_default=True,
    help="Seconds a dead worker's cases stay leased before another takes them over.",
)
@click.option(
    "--reuse",
    multiple=True,
    type=LogFileParam(exists=True),
    help="Reuse answers recorded in this earlier log (repeatable).",
)
def command(db_url: Log, campaign: str | None, lease_s: float, reuse: tuple[Path, ...]) -> None:
    """Run the cases of the campaign in DB_URL that no other worker holds, until none is
    left; a worker that dies leaves its cases to the others after --lease seconds."""
    # Imported here: harness.running.worker imports psycopg, a second of every command's start.
    from harness.running.worker import run_worker

    done = asyncio.run(
        run_worker(
            db_url,
            campaign=campaign,
            lease_s=lease_s,
            handle_signals=True,
            cache=open_cache(reuse),
        )
    )
    echo_summary(done.run, db_url)
    click.echo(
        f"worker {done.owner}: {done.taken_over} cases continued from other workers; "
        f"{done.run.resent_in_flight} in-flight calls re-sent; {done.claims} case claims sent"
        + (f"; campaign finished in {db_url}" if done.finished else ""),
        err=True,
    )
    finish(done.run, done.run.cases_closed)
