"""Meta-Fair on the command line: ``harness metafair export`` (a generation log -> a
test-set file for MR1-MR14 answer campaigns)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.family_api import LogFileParam, check_output


@click.group("metafair")
def group() -> None:
    """Meta-Fair helpers."""


@group.command("export")
@click.argument("db", type=LogFileParam(exists=True))
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
def export(db: Path, out: Path, campaign: str | None, force: bool) -> None:
    """Export the tests a metafair.generate campaign in DB wrote to OUT (.json or .csv)."""
    from relations.metafair.generation.export import read_generated, write_generated

    check_output(out, inputs=[db], force=force, option="OUT")
    generated = read_generated(db, campaign)
    write_generated(generated.tests, out, inputs=[db], force=force)
    click.echo(f"{generated.summary()} -> {out}", err=True)
