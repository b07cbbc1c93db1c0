"""``harness plan``: what a campaign will call, cost and be able to detect, before any call."""

from __future__ import annotations

import click

from harness.reporting.power import DEFAULT_BASELINE, DEFAULT_POWER, DEFAULT_TARGET
from harness.running.campaign import resolve_campaign
from harness.running.plan import Plan
from harness.running.planner import format_plan


@click.command("plan")
@click.argument("campaign", required=False)
@click.option(
    "--detect",
    type=click.FloatRange(0.005, 0.99),
    default=DEFAULT_TARGET,
    show_default=True,
    help="The gap (a rate difference, 0.10 = 10 points) the plan should detect; relations "
    "whose MDE is larger are told the cases they need.",
)
@click.option(
    "--power",
    type=click.FloatRange(0.5, 0.99),
    default=DEFAULT_POWER,
    show_default=True,
    help="The probability of detecting that gap.",
)
@click.option(
    "--baseline",
    type=click.FloatRange(0.0, 0.9),
    default=DEFAULT_BASELINE,
    show_default=True,
    help="The violation rate of the rest the gap is measured against.",
)
@click.option(
    "--gaps",
    type=click.IntRange(1, None),
    default=1,
    show_default=True,
    help="How many groups of a relation are expected to differ: with several real gaps "
    "Benjamini-Hochberg flags each at a more lenient level, so the MDE is smaller.",
)
def command(campaign: str | None, detect: float, power: float, baseline: float, gaps: int) -> None:
    """Print CAMPAIGN's calls, cost estimate and minimum detectable effect per relation,
    without calling anything (no API key is read). A bad campaign fails here as it would
    before 'harness run' (exit 2)."""
    config, _stem = resolve_campaign(campaign)
    plan = Plan(config)
    click.echo(format_plan(plan, target=detect, power=power, baseline=baseline, gaps=gaps))
