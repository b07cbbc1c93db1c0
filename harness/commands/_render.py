"""Rendering shared by commands: summaries and report tables."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table as RichTable

from harness.engine import RunSummary
from harness.report import Table, build_report
from harness.store.reader import EventReader


def echo_summary(summary: RunSummary, db: Path) -> None:
    outcomes = ", ".join(f"{k.lower()} {v}" for k, v in sorted(summary.outcomes.items()))
    click.echo(
        f"{summary.status}: {summary.cases_closed} cases closed ({outcomes or 'none'}); "
        f"{summary.calls} calls, {summary.failures} failed attempts, "
        f"{summary.resent_in_flight} in-flight calls re-sent, {summary.elapsed_s:.1f}s",
        err=True,
    )
    if summary.reason:
        click.echo(f"reason: {summary.reason}", err=True)
    if summary.status == "stopped" and summary.ceiling_usd is not None:
        # Resuming with the same ceiling would stop again at once: say how to raise it.
        click.echo(
            f"resume with a higher ceiling (it was ${summary.ceiling_usd:g}): "
            f"harness resume {db} --spend-ceiling {max(2 * summary.ceiling_usd, 1):g}",
            err=True,
        )
    elif summary.status == "stopped":
        click.echo(f"resume with: harness resume {db}", err=True)


def render_tables(tables: list[Table], console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=160)
    if not tables:
        console.print("(no verdicts in this log yet)")
    for t in tables:
        table = RichTable(title=t.title, caption=t.note or None, title_justify="left")
        for col in t.columns:
            table.add_column(col, overflow="fold")
        for row in t.rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(table)


def echo_report(db: Path, campaign: str | None = None) -> None:
    with EventReader(db) as log:
        render_tables(build_report(log, campaign))
