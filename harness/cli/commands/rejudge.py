"""``harness rejudge``: new verdicts from recorded answers, by a new judge model."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import cast

import click

from harness.cli.commands._render import echo_report
from harness.cli.exit_codes import ExitCode
from harness.cli.log_params import LogParam
from harness.store.log import Log
from harness.verifying.rejudge import judge_spec, rejudge
from harness.vocabulary.answer_shape import AnswerFormat
from harness.vocabulary.errors import ConfigError


def _options(pairs: tuple[str, ...]) -> dict[str, object]:
    out: dict[str, object] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(
                f"--option {pair!r} has no '='", field="--option", fix="write KEY=VALUE"
            )
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value
    return out


@click.command("rejudge")
@click.argument("db", type=LogParam())
@click.option(
    "--judge", "judge", required=True, help="Judge model, e.g. sim:judge or local:smollm2."
)
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option(
    "--option",
    "options",
    multiple=True,
    help="Judge model option KEY=VALUE (repeatable), e.g. base_url=http://127.0.0.1:8080/v1.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), help="Judge at most this many cases (the rest later)."
)
@click.option(
    "--max-in-flight",
    type=click.IntRange(min=1),
    help="Judge calls at once (default 8; 1 for local: models).",
)
@click.option(
    "--answer-format",
    type=click.Choice(["free", "structured"]),
    help="structured: constrain the judge to the rubric's JSON verdict (grammar, JSON schema "
    "or forced tool, as the backend offers); default: the campaign's answer_format.",
)
@click.option(
    "--allow-self-judging",
    is_flag=True,
    help="Let a subject model of the campaign judge its own answers (refused otherwise); "
    "the run is recorded as self-judging.",
)
@click.option("--report/--no-report", default=True)
def command(
    db: Log,
    judge: str,
    campaign: str | None,
    options: tuple[str, ...],
    limit: int | None,
    max_in_flight: int | None,
    answer_format: str | None,
    allow_self_judging: bool,
    report: bool,
) -> None:
    """Send the recorded conversations of DB to JUDGE; its verdicts are appended with source
    judge:<model> (earlier verdicts stay) and the report compares the raters."""
    summary = asyncio.run(
        rejudge(
            db,
            judge_spec(
                judge,
                _options(options),
                max_in_flight,
                cast("AnswerFormat | None", answer_format),  # click.Choice checked it
            ),
            campaign=campaign,
            limit=limit,
            handle_signals=True,
            allow_self_judging=allow_self_judging,
        )
    )
    outcomes = ", ".join(f"{k.lower()} {v}" for k, v in (summary.outcomes or {}).items())
    click.echo(
        f"{summary.source}: {summary.judged} cases judged ({outcomes or 'none'}); "
        f"{summary.calls} calls, {summary.failures} failed, {summary.reparsed} logged replies "
        f"re-read, {summary.already} judged before, {summary.no_rubric} without a rubric, "
        f"{summary.elapsed_s:.1f}s",
        err=True,
    )
    if summary.retryable:
        click.echo(
            f"unfinished: {summary.retryable} judge calls failed, retryable (transient vendor "
            "failures); run the same rejudge again once the judge answers",
            err=True,
        )
    if report:
        echo_report(db, campaign)
    if summary.retryable:
        sys.exit(ExitCode.UNFINISHED)
