"""``harness report``: tables from the log as text, JSON or CSV."""

from __future__ import annotations

import click

from harness.commands._render import render_tables
from harness.report import build_report, to_csv, to_json
from harness.store.reader import EventReader


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
def command(
    db: str, fmt: str, campaign: str | None, top: int, mode: str | None, out: str | None
) -> None:
    """Violation rates with 95% Wilson intervals, violating terms per group, co-violations."""
    options: dict[str, object] = {"top": top}
    if mode:
        options["mode"] = mode
    with EventReader(db) as log:
        tables = build_report(log, campaign, **options)
    if fmt == "text" and out is None:
        render_tables(tables)
        return
    text = to_json(tables) if fmt == "json" else to_csv(tables) if fmt == "csv" else ""
    if fmt == "text":
        from io import StringIO

        from rich.console import Console

        buf = StringIO()
        render_tables(tables, Console(file=buf, width=140))
        text = buf.getvalue()
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        click.echo(text)
