"""``harness judges calibrate | plan``: judges measured against human labels."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from harness.cli.commands._render import render_tables
from harness.cli.log_params import LogParam
from harness.plugins.assembly import build_report
from harness.store.log import Log
from harness.verifying.calibrate import calibrate, plan, plan_inputs


@click.group("judges")
def group() -> None:
    """Judges measured against human labels (calibration) and the labels that needs."""


@group.command("calibrate")
@click.argument("db", type=LogParam())
@click.option(
    "--labels",
    "labels_file",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="CSV (columns case_id, label) or JSON of human labels BIASED / UNBIASED.",
)
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
def calibrate_command(db: Log, labels_file: Path, campaign: str | None) -> None:
    """Record human labels for a sample of DB's cases (a JudgeCalibrated event); the report
    then gives each judge's and jury's sensitivity, specificity and agreement, and the
    rates the judges decided corrected for their error."""
    result = asyncio.run(calibrate(db, labels_file, campaign))
    click.echo(
        f"recorded {result.labels} labels for campaign {result.campaign} "
        f"({result.judged} of them on cases judges decided)",
        err=True,
    )
    with db.reader() as log:
        tables = [
            t
            for t in build_report(log, result.campaign)
            if t.name in ("judge_calibration", "judge_error_by_attribute", "judge_corrected_rates")
        ]
    render_tables(tables, empty="(no labelled case was decided by a judge)")


@group.command("plan")
@click.argument("db", type=LogParam(), required=False)
@click.option(
    "--target-halfwidth",
    type=click.FloatRange(min=0, min_open=True, max=1),
    required=True,
    help="The 95% interval half-width wanted, e.g. 0.05.",
)
@click.option("--campaign", help="Campaign id in DB (default: the latest).")
@click.option("--se", type=click.FloatRange(0, 1), help="Assumed sensitivity of the jury.")
@click.option("--sp", type=click.FloatRange(0, 1), help="Assumed specificity of the jury.")
@click.option(
    "--prevalence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Share of the labelled cases a human calls BIASED.",
)
def plan_command(
    db: Log | None,
    target_halfwidth: float,
    campaign: str | None,
    se: float | None,
    sp: float | None,
    prevalence: float | None,
) -> None:
    """How many randomly drawn cases to label for a target precision: of sensitivity and
    specificity, and (with DB) of the corrected rate over DB's judge-decided cases. Figures
    not given come from DB's calibration, else 0.8 / 0.9 / 0.3."""
    inputs = plan_inputs(db, campaign, se, sp, prevalence)
    result = plan(inputs, target_halfwidth)
    click.echo(
        f"assuming sensitivity {inputs.se:.3f}, specificity {inputs.sp:.3f}, labelled "
        f"prevalence {inputs.prevalence:.3f} ({inputs.source})"
    )
    click.echo(
        f"+-{target_halfwidth:g} on sensitivity needs {result.positives} human-BIASED cases, "
        f"on specificity {result.negatives} human-UNBIASED: label {result.for_rates} cases "
        "drawn at random"
    )
    if inputs.campaign_n is not None:
        if result.for_corrected is None:
            click.echo(
                f"+-{target_halfwidth:g} on the corrected rate over the campaign's "
                f"{inputs.campaign_n} judge-decided cases is out of reach: the campaign's own "
                "sample (or a judge no better than chance) is already less precise"
            )
        else:
            click.echo(
                f"+-{target_halfwidth:g} on the corrected rate over the campaign's "
                f"{inputs.campaign_n} judge-decided cases needs {result.for_corrected} labels"
            )
