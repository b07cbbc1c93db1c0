"""``harness run``: plan and run a campaign, with a progress bar, then print its report."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from harness.cache import open_cache
from harness.campaign import resolve_campaign
from harness.commands._render import echo_report, echo_summary, finish
from harness.plan import Plan
from harness.progress import RichProgress
from harness.providers import VENDOR_SCHEMES, estimate_cost, format_estimate
from harness.runner import run_campaign


@click.command("run")
@click.argument("campaign", required=False)
@click.option(
    "--db", type=click.Path(dir_okay=False), help="Event log to write (default: <campaign>.db)."
)
@click.option("--report/--no-report", default=True, help="Print the report when the campaign ends.")
@click.option(
    "--reuse",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="Reuse answers recorded in this earlier log (repeatable); see docs/resume-replay.md.",
)
def command(campaign: str | None, db: str | None, report: bool, reuse: tuple[str, ...]) -> None:
    """Run CAMPAIGN (a TOML file, or 'demo' / 'sim'; default: the embedded local-model demo)."""
    config, stem = resolve_campaign(campaign)
    db_path = Path(db or f"{stem}.db")
    plan = Plan(config)
    click.echo(
        f"campaign {config.name!r}: {plan.total_cases} cases on "
        f"{', '.join(m.name for m in config.models)} -> {db_path}",
        err=True,
    )
    if any(m.scheme in VENDOR_SCHEMES for m in [*config.models, *config.judges]):
        click.echo("estimated cost before the first call:", err=True)
        click.echo(format_estimate(estimate_cost(config, plan)), err=True)
    with RichProgress(plan.total_cases) as progress:
        summary = asyncio.run(
            run_campaign(
                config,
                db_path,
                progress=progress,
                handle_signals=True,
                cache=open_cache(reuse),
                plan=plan,
            )
        )
    echo_summary(summary, db_path)
    if summary.cached:
        click.echo(f"answers reused from earlier logs: {summary.cached}", err=True)
    if report:
        echo_report(db_path, summary.campaign)
    finish(summary, plan.total_cases)
