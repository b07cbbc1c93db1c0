"""``harness copy SRC DST``: move a log between SQLite and PostgreSQL, either way."""

from __future__ import annotations

import click

from harness.cli.log_params import LogParam
from harness.store.copy import copy_log
from harness.store.log import Log


@click.command("copy")
@click.argument("src", type=LogParam())
@click.argument("dst", type=LogParam())
@click.option(
    "--compact",
    is_flag=True,
    help="Write DST (a .db file) in log format 2: each long text stored once, compressed; "
    "about 5x smaller, about 2x slower to read. For archiving finished campaigns.",
)
def command(src: Log, dst: Log, compact: bool) -> None:
    """Copy the event log SRC into the new log DST (each a .db file or a postgresql:// URL;
    DST must not exist yet, or be an empty database). Reports of the copy are identical."""
    n = copy_log(src, dst, compact=compact)
    click.echo(f"copied {n} events from {src} to {dst}", err=True)
