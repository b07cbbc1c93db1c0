"""``harness run``: plan and run a campaign, with a progress bar, then print its report."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from harness.cache import open_cache
from harness.campaign import CampaignConfig, resolve_campaign
from harness.campaign_status import campaign_statuses
from harness.commands._render import echo_report, echo_summary, finish
from harness.errors import ConfigError
from harness.html import write_html_report
from harness.output_files import check_output
from harness.plan import Plan
from harness.progress import RichProgress
from harness.providers import VENDOR_SCHEMES, estimate_cost, format_estimate
from harness.runner import run_campaign
from harness.store.reader import EventReader


def refuse_second_campaign(db: Path, config: CampaignConfig, campaign_arg: str) -> None:
    """A log that already holds a campaign is not silently given a second one: that pays
    again for every answer it recorded. Raises a `ConfigError` with the three ways on."""
    if not db.exists() or db.stat().st_size == 0:
        return
    with EventReader(db) as log:
        existing = campaign_statuses(log)
    if not existing:
        return
    last = existing[-1]
    same = [s for s in existing if s.started and s.started.config_hash == config.config_hash()]
    repay = sum(s.replies_paid for s in same)
    cost = (
        f"starting another would pay again for the {repay} replies it recorded for this "
        "same campaign"
        if same
        else f"it recorded {sum(s.replies_paid for s in existing)} paid replies of another "
        "campaign, which a new one would not use"
    )
    raise ConfigError(
        f"{db} already holds campaign {last.campaign} ({last.name!r}, {last.status}, "
        f"{last.cases} cases closed); {cost}",
        field="--db",
        fix=f"continue it with 'harness resume {db}', or run into a new log reusing its "
        f"answers with 'harness run {campaign_arg} --db NEW.db --reuse {db}', or add "
        "--new-campaign to start a second campaign in this log anyway",
    )


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
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False),
    help="Write the report as one self-contained HTML page when the campaign ends.",
)
@click.option("--force", is_flag=True, help="Replace the --html file if it exists.")
@click.option(
    "--new-campaign",
    is_flag=True,
    help="Start another campaign in a --db that already holds one (its answers are paid again).",
)
def command(
    campaign: str | None,
    db: str | None,
    report: bool,
    reuse: tuple[str, ...],
    new_campaign: bool,
    html_out: str | None,
    force: bool,
) -> None:
    """Run CAMPAIGN (a TOML file, or 'demo' / 'sim'; default: the embedded local-model demo)."""
    config, stem = resolve_campaign(campaign)
    db_path = Path(db or f"{stem}.db")
    if not new_campaign:
        refuse_second_campaign(db_path, config, campaign or "demo")
    if html_out is not None:
        # Checked before the first call: a run that cannot write its page does not start.
        check_output(html_out, inputs=[db_path], force=force, option="--html")
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
    if html_out is not None:
        written = write_html_report(db_path, html_out, campaign=summary.campaign, force=force)
        click.echo(f"HTML report: {written}", err=True)
    finish(summary, plan.total_cases)
