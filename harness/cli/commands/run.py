"""``harness run``: plan and run a campaign, with a progress bar, then print its report."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from harness.cli.commands._render import (
    abort_names_log,
    echo_report,
    echo_summary,
    finish,
    resume_hint_if_the_database_goes,
)
from harness.cli.log_params import LogFileParam, LogParam
from harness.cli.progress import RichProgress
from harness.models.providers import (
    VENDOR_SCHEMES,
    check_priced,
    estimate_cost,
    format_estimate,
)
from harness.plugins.family_parts import report_sections
from harness.reporting.campaign_status import campaign_status, campaign_statuses, paid_replies
from harness.reporting.html import write_html_report
from harness.reporting.output_files import check_output
from harness.running.cache import open_cache
from harness.running.campaign import CampaignConfig, all_in_batch_mode, resolve_campaign
from harness.running.engine import RunSummary
from harness.running.plan import Plan
from harness.running.runner import run_campaign
from harness.store.log import Log
from harness.vocabulary.errors import ConfigError


def refuse_second_campaign(db: Log, config: CampaignConfig, campaign_arg: str) -> None:
    """A log that already holds a campaign is not silently given a second one: that pays
    again for every answer it recorded. Raises a `ConfigError` with the three ways on."""
    if not db.holds_events():
        return
    with db.reader() as log:
        existing = campaign_statuses(log)
        paid = {s.campaign: paid_replies(log, s.campaign) for s in existing}
    if not existing:
        return
    last = existing[-1]
    same = [s for s in existing if s.started and s.started.config_hash == config.config_hash()]
    repay = sum(paid[s.campaign] for s in same)
    cost = (
        f"starting another would pay again for the {repay} replies it recorded for this "
        "same campaign"
        if same
        else f"it recorded {sum(paid.values())} paid replies of another "
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
    "--db",
    type=LogParam(),
    help="Event log to write: a SQLite file or a postgresql:// URL (default: the campaign "
    "file's 'store', else <campaign>.db).",
)
@click.option("--report/--no-report", default=True, help="Print the report when the campaign ends.")
@click.option(
    "--reuse",
    multiple=True,
    type=LogFileParam(exists=True),
    help="Reuse answers recorded in this earlier log (repeatable); see docs/resume-replay.md.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With a postgresql:// --db: worker processes on this machine (this one included); "
    "more can join from anywhere with 'harness worker'.",
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
@click.option(
    "--allow-unpriced",
    is_flag=True,
    help="Run a vendor model its price list does not list (and no price is given for) with "
    "its cost 'unknown'.",
)
@click.option(
    "--batch",
    is_flag=True,
    help="Send every model's and judge's requests through its vendor's batch API "
    '(mode = "batch" for all; docs/batch.md).',
)
def command(
    campaign: str | None,
    db: Log | None,
    report: bool,
    reuse: tuple[Path, ...],
    new_campaign: bool,
    workers: int,
    html_out: str | None,
    force: bool,
    allow_unpriced: bool,
    batch: bool,
) -> None:
    """Run CAMPAIGN (a TOML file, or 'demo' / 'sim'; default: the embedded local-model demo).

    Targets ([[models]] name): sim:, local:, openai:, anthropic:, google:, openai-compat:,
    http:NAME (an application's own JSON endpoint: options url, body, reply_path) and
    python:package.module:function (an application's function). Any of them may take a
    system prompt (system or system_file) and a template with {prompt} where each ask's
    text goes: both are part of the logged request. See docs/targets.md.
    """
    config, stem = resolve_campaign(campaign)
    if batch:
        config = all_in_batch_mode(config)
    db_path = db or Log.at(config.store or f"{stem}.db", field="store")
    if workers > 1:
        db_path.postgres("--workers")  # refused on a SQLite log, before anything is read
    if not new_campaign:
        refuse_second_campaign(db_path, config, campaign or "demo")
    if html_out is not None:
        # Checked before the first call: a run that cannot write its page does not start.
        check_output(html_out, inputs=[db_path], force=force, option="--html")
    unpriced = check_priced(config, allow_unpriced=allow_unpriced)  # before anything is made
    plan = Plan(config)
    click.echo(
        f"campaign {config.name!r}: {plan.total_cases} cases on "
        f"{', '.join(m.name for m in config.models)} -> {db_path}",
        err=True,
    )
    if any(m.scheme in VENDOR_SCHEMES for m in [*config.models, *config.judges]):
        click.echo(
            "estimated cost before the first call ('harness plan' shows calls and power):",
            err=True,
        )
        click.echo(format_estimate(estimate_cost(config, plan)), err=True)
    for name in unpriced:
        click.echo(f"{name}: not in the price list; its cost is unknown", err=True)
    if db_path.is_postgres:
        with resume_hint_if_the_database_goes(db_path):
            summary = _run_with_workers(config, db_path, plan, workers, reuse)
    else:
        summary = _run_here(config, db_path, plan, reuse)
    echo_summary(summary, db_path, html_out)
    if summary.cached:
        click.echo(f"answers reused from earlier logs: {summary.cached}", err=True)
    if report:
        echo_report(db_path, summary.campaign)
    if html_out is not None:
        written = write_html_report(
            db_path, html_out, sections=report_sections(), campaign=summary.campaign, force=force
        )
        click.echo(f"HTML report: {written}", err=True)
    finish(summary, plan.total_cases)


def _run_here(
    config: CampaignConfig, db_path: Log, plan: Plan, reuse: tuple[Path, ...]
) -> RunSummary:
    with RichProgress(plan.total_cases) as progress, abort_names_log(db_path):
        return asyncio.run(
            run_campaign(
                config,
                db_path,
                progress=progress,
                handle_signals=True,
                cache=open_cache(reuse),
                plan=plan,
            )
        )


def _run_with_workers(
    config: CampaignConfig, db: Log, plan: Plan, workers: int, reuse: tuple[Path, ...]
) -> RunSummary:
    """Start the campaign in PostgreSQL, then run it here and in ``workers - 1`` more
    processes; the summary counts every worker's cases (read back from the log)."""
    # Imported here: harness.running.worker imports psycopg, a second of every command's start.
    from harness.running.worker import run_worker, spawn_workers, start_campaign

    campaign = asyncio.run(start_campaign(config, db, plan))
    click.echo(f"campaign {campaign}: join with 'harness worker {db} "
               f"--campaign {campaign}'", err=True)  # fmt: skip
    others = spawn_workers(db, campaign, workers - 1, lease_s=30.0)
    try:
        with RichProgress(plan.total_cases) as progress:
            done = asyncio.run(
                run_worker(
                    db, campaign=campaign, progress=progress, handle_signals=True,
                    cache=open_cache(reuse),
                )
            )  # fmt: skip
    finally:
        for proc in others:
            proc.wait()
    summary = done.run
    with db.reader() as log:
        summary.cases_closed = campaign_status(log, campaign).closed
    summary.outcomes = db.relation_outcomes(campaign)
    return summary
