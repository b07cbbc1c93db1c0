"""``harness export``: transcripts, one conversation per line."""

from __future__ import annotations

import sys

import click

from harness.conversation_export import write_jsonl
from harness.output_files import atomic_output, check_output


@click.command("export")
@click.argument("db")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
@click.option("--force", is_flag=True, help="Replace the --out file if it exists.")
def command(db: str, fmt: str, campaign: str | None, out: str | None, force: bool) -> None:
    """Write every case of DB as one JSON object per line: case data, turns (prompt, full
    request, reply or error, usage) and verdicts (the relation's and any judge's)."""
    if out is None:
        n = write_jsonl(db, sys.stdout, campaign)
    else:
        check_output(out, inputs=[db], force=force)
        with atomic_output(out, inputs=[db], force=force) as fh:
            n = write_jsonl(db, fh, campaign)
    click.echo(f"exported {n} conversations", err=True)
