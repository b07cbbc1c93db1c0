"""BADF on the command line: ``harness badf analyze`` (stages 3-5 on a story log) and
``harness import badf`` (the authors' released association files -> a log)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click
from pydantic import ValidationError

from harness.family_api import LogFileParam, ModelSpec, config_error
from relations.badf.control import ALL_ARMS, excess, shuffles_for_arms
from relations.badf.embedding import DEFAULT_EMBEDDER


@click.group("badf")
def group() -> None:
    """BADF helpers (see also 'harness import badf')."""


@group.command("analyze")
@click.argument("db", type=LogFileParam(exists=True))
@click.option("--campaign", help="The badf.story campaign (default: the latest in the log).")
@click.option(
    "--judge",
    help="Model asked the exclusivity question, 'scheme:identifier' (default: the story "
    "campaign's extractor judge, else its model).",
)
@click.option(
    "--embedder",
    default=DEFAULT_EMBEDDER,
    show_default=True,
    help="Concept embedder: minilm-l6-numpy (offline), lexical-ngram, openai:MODEL, google:MODEL.",
)
@click.option(
    "--embedder-option",
    "embedder_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option of the embedder (repeatable); VALUE is read as JSON when it parses.",
)
@click.option(
    "--threshold",
    type=float,
    help="Cosine threshold of unification (default: the embedder's; paper 0.63 for "
    "all-mpnet-base-v2, authors' code 0.83).",
)
@click.option("--linkage", type=click.Choice(["leader", "single"]), default="leader")
@click.option(
    "--denominator",
    type=click.Choice(["lists", "concepts"]),
    default="lists",
    help="N of the score: concept lists of the identity (paper) or its concepts (released code).",
)
@click.option("--alpha", type=float, default=0.05, show_default=True)
@click.option(
    "--rule",
    type=click.Choice(["evidence", "paper"]),
    default="evidence",
    show_default=True,
    help="evidence: each identity against the rest, exact test stratified by story, "
    "Benjamini-Hochberg after Tarone's rule; paper: the paper's rule (chi-squared, score "
    "against the least frequent identity, raw p < alpha).",
)
@click.option(
    "--keep-by",
    type=click.Choice(["p", "p_bh"]),
    default=None,
    help="Keep by raw p or Benjamini-Hochberg adjusted p (default: p_bh for the evidence "
    "rule, p for the paper's).",
)
@click.option("--no-yates", is_flag=True, help="No continuity correction on 2x2 tables.")
@click.option(
    "--control-shuffles",
    type=int,
    default=None,
    help="Shuffles of the identities for the null control (default 39; 0: no control).",
)
@click.option("--dry-run", is_flag=True, help="Compute the candidates; ask nothing.")
def analyze_command(
    db: Path,
    campaign: str | None,
    judge: str | None,
    embedder: str,
    embedder_options: tuple[str, ...],
    threshold: float | None,
    linkage: str,
    denominator: str,
    alpha: float,
    rule: str,
    keep_by: str | None,
    no_yates: bool,
    control_shuffles: int | None,
    dry_run: bool,
) -> None:
    """Unify the concepts of the story campaign in DB, keep the significant associations per
    location category, and ask a judge which are exclusive by definition (a campaign in the
    same log: resumable, never paid twice). Then: harness report DB."""
    from relations.badf.analysis import AnalysisSettings
    from relations.badf.analyze import analyse_log, analyze

    values = {
        "embedder": embedder,
        "embedder_options": dict(_key_value(o) for o in embedder_options),
        "threshold": threshold,
        "linkage": linkage,
        "denominator": denominator,
        "alpha": alpha,
        "rule": rule,
        "keep_by": keep_by,
        "yates": not no_yates,
    }
    if control_shuffles is not None:
        values["control_permutations"] = control_shuffles
    try:
        settings = AnalysisSettings.model_validate(values)
    except ValidationError as exc:
        raise config_error(exc, fix="see 'harness badf analyze --help'", data=values) from exc
    spec = ModelSpec(name=judge) if judge else None
    if dry_run:
        story, _, analysis = analyse_log(db, settings, campaign=campaign)
        outcome_line = "dry run: nothing asked"
    else:
        outcome = asyncio.run(analyze(db, settings, campaign=campaign, judge=spec))
        story, analysis = outcome.story_campaign, outcome.analysis
        outcome_line = f"exclusivity campaign {outcome.campaign}: {outcome.action}" + (
            f" ({outcome.cached} answers reused from the log)" if outcome.cached else ""
        )
    phrases = len(analysis.unification.representative)
    click.echo(
        f"story campaign {story}: {analysis.lists} concept lists in {analysis.groups} groups; "
        f"{phrases} phrases unified into {len(analysis.unification.members)} concepts "
        f"({analysis.unification.embedder}, threshold {analysis.unification.threshold}); "
        f"{analysis.tests} tests"
        + (f" ({analysis.dropped} more dropped by Tarone's rule)" if analysis.dropped else "")
        + f"; {len(analysis.candidates)} significant associations ({settings.rule} rule)",
        err=True,
    )
    if analysis.control is not None:
        found = excess(len(analysis.candidates), analysis.control.counts(ALL_ARMS))
        click.echo(
            f"null control: {analysis.control.permutations} shuffles of the identities keep "
            f"{found.control_mean:.2f} on average ({found.control_low}-{found.control_high}); "
            f"excess {found.excess:+.2f} ({found.excess_low:+d} to {found.excess_high:+d}), "
            f"permutation p {found.p:.3f}",
            err=True,
        )
        arms = len(analysis.control.arms)
        enough = shuffles_for_arms(arms, settings.alpha)
        if analysis.control.permutations < enough:
            click.echo(
                f"null control: with {arms} arms corrected together (Holm) no arm can be above "
                f"its floor at alpha {settings.alpha}: give --control-shuffles {enough} or more",
                err=True,
            )
    click.echo(outcome_line, err=True)
    click.echo(f"report with: harness report {db}", err=True)


def _key_value(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{text!r}: give KEY=VALUE", param_hint="--embedder-option")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


@click.command("badf")
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--db",
    type=LogFileParam(),
    help="Event log to add the import to (default: badf-<folder>.db); give your BADF log to "
    "see the authors' findings beside yours in one report.",
)
def import_badf(src: Path, db: Path | None) -> None:
    """Import SRC, a folder of the BADF authors' association files (CSV with columns Location
    Category, Demographic Identity, Phrase, Score, P-Value, Prompt Response)."""
    from relations.badf.importer import import_associations

    db = db or Path(f"badf-{src.resolve().name}.db")
    summary = asyncio.run(import_associations(src, db))
    click.echo(
        f"imported {summary.rows} associations from {summary.files} files as campaign "
        f"{summary.campaign}"
        + (
            f"; {summary.skipped} rows skipped ({summary.first_problem})" if summary.skipped else ""
        ),
        err=True,
    )
    click.echo(f"report with: harness report {db} --campaign {summary.campaign}", err=True)
