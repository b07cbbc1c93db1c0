"""``harness resume``: continue an interrupted campaign from its log."""

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
from harness.models.providers import check_priced
from harness.plugins.family_parts import report_sections
from harness.reporting.html import check_html_output, write_html_report
from harness.running.cache import open_cache
from harness.running.plan import Plan
from harness.running.runner import (
    endpoint_key,
    load_resume_point,
    resume_campaign,
    updated_config,
)
from harness.store.log import Log
from harness.vocabulary.errors import ConfigError


@click.command("resume")
@click.argument("db", type=LogParam())
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option(
    "--spend-ceiling", type=float, help="Raise the spending ceiling (USD) before resuming."
)
@click.option(
    "--base-url",
    "base_urls",
    multiple=True,
    metavar="MODEL=URL",
    help="Send MODEL's calls to URL from now on (a wrong base URL after an abort); recorded "
    "in the log and kept by later resumes. Repeatable; MODEL= alone goes back to the SDK's "
    "default or its environment variable.",
)
@click.option(
    "--api-key-env",
    "key_envs",
    multiple=True,
    metavar="MODEL=VAR",
    help="Read MODEL's key from the environment variable VAR from now on (recorded, kept).",
)
@click.option("--report/--no-report", default=True)
@click.option(
    "--allow-unpriced",
    is_flag=True,
    help="Resume with a vendor model its price list does not list (and no price is given "
    "for) priced 'unknown', as 'harness run --allow-unpriced' (not recorded: asked again "
    "at every resume).",
)
@click.option(
    "--reuse",
    multiple=True,
    type=LogFileParam(exists=True),
    help="Reuse answers recorded in this earlier log (repeatable).",
)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False),
    help="Write the report as one HTML page when the campaign ends; a page of this campaign "
    "(the one 'run --html' wrote) is refreshed in place.",
)
@click.option("--force", is_flag=True, help="Replace the --html file even if it is not this "
              "campaign's page.")  # fmt: skip
def command(
    db: Log,
    campaign: str | None,
    spend_ceiling: float | None,
    base_urls: tuple[str, ...],
    key_envs: tuple[str, ...],
    report: bool,
    allow_unpriced: bool,
    reuse: tuple[Path, ...],
    html_out: str | None,
    force: bool,
) -> None:
    """Continue the campaign in DB: recorded replies are never paid for again."""
    point = load_resume_point(db, campaign)
    if html_out is not None:
        # Checked before the first call: a resume that cannot write its page does not start.
        check_html_output(db, html_out, campaign=point.campaign, force=force, refresh=True)
    updates: dict[str, object] = {}
    if spend_ceiling is not None:
        updates["limits.spend_ceiling_usd"] = spend_ceiling
    # An http: target's address is its url option: --base-url replaces that one.
    http = {s.name for s in [*point.config.models, *point.config.judges] if s.scheme == "http"}
    updates.update(_endpoint_updates(base_urls, "base_url", "--base-url", http))
    updates.update(_endpoint_updates(key_envs, "api_key_env", "--api-key-env"))
    # The log is folded and the plan built once, here, and handed to the runner.
    config = updated_config(point.config, updates)
    # The rule of `harness run`, before any call: a price list of this version may not list
    # a model a campaign ran with (or it was run with --allow-unpriced, which is not
    # recorded: spending with no known price is agreed to by each process that spends).
    unpriced = check_priced(config, allow_unpriced=allow_unpriced)
    plan = Plan(config)
    total = plan.total_cases
    for name in unpriced:
        click.echo(f"{name}: not in the price list; its cost is unknown", err=True)
    click.echo(
        f"resuming {point.campaign}: {len(point.closed)} of {total} cases closed, "
        f"{len(point.open_cases)} open",
        err=True,
    )
    # On PostgreSQL, resume leases each case as a worker does: workers may run beside it.
    # Imported here: harness.running.worker imports psycopg, a second of every command's start.
    from harness.running.worker import resume_with_leases

    resume = resume_with_leases if db.is_postgres else resume_campaign
    with (
        resume_hint_if_the_database_goes(db),
        RichProgress(total - len(point.closed)) as progress,
        abort_names_log(db),
    ):
        summary = asyncio.run(
            resume(
                db,
                campaign=point.campaign,
                point=point,
                plan=plan,
                progress=progress,
                config_updates=updates,
                handle_signals=True,
                cache=open_cache(reuse),
            )
        )
    echo_summary(summary, db)
    click.echo(
        f"calls re-sent on resume: {summary.resent} ({summary.resent_in_flight} in flight at "
        "the stop; the others cancelled at a stop, awaiting a retry or failed, retryable)",
        err=True,
    )
    if summary.cached:
        click.echo(f"answers reused from earlier logs: {summary.cached}", err=True)
    if report:
        echo_report(db, point.campaign)
    if html_out is not None:
        written = write_html_report(
            db, html_out, sections=report_sections(), campaign=point.campaign, force=force,
            refresh=True,
        )  # fmt: skip
        click.echo(f"HTML report: {written}", err=True)
    # On PostgreSQL, cases that workers beside resume hold are theirs to close (like a
    # worker, resume answers for the cases it ran; the last process records the end).
    to_close = summary.cases_closed if db.is_postgres else total - len(point.closed)
    finish(summary, to_close)


def _endpoint_updates(
    pairs: tuple[str, ...], option: str, flag: str, http: set[str] | frozenset[str] = frozenset()
) -> dict[str, object]:
    """``MODEL=VALUE`` pairs as the config overrides of one endpoint option (None: unset)."""
    updates: dict[str, object] = {}
    for pair in pairs:
        model, sep, value = pair.partition("=")
        if not sep or not model:
            raise ConfigError(
                f"{pair!r} is not MODEL=VALUE",
                field=flag,
                fix=f"give {flag} openai:gpt-4o-mini=..., the model's name as in the campaign",
            )
        updates[endpoint_key(model, "url" if model in http else option)] = value.strip() or None
    return updates
