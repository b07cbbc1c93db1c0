"""``harness export``: transcripts, one conversation per line."""

from __future__ import annotations

import sys

import click

from harness.conversation_export import write_jsonl


@click.command("export")
@click.argument("db", type=click.Path(dir_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
def command(db: str, fmt: str, campaign: str | None, out: str | None) -> None:
    """Write every case of DB as one JSON object per line: case data, turns (prompt, full
    request, reply or error, usage) and verdicts (the relation's and any judge's)."""
    if out is None:
        n = write_jsonl(db, sys.stdout, campaign)
    else:
        with open(out, "w", encoding="utf-8") as fh:
            n = write_jsonl(db, fh, campaign)
    click.echo(f"exported {n} conversations", err=True)
