"""BiasLens on the command line: ``harness biaslens export`` (a generation log -> roles and
question-set files) and ``harness import biaslens`` (the authors' released answers -> a log)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from harness.family_api import ConfigError, LogFileParam, check_output


@click.group("biaslens")
def group() -> None:
    """BiasLens helpers (see also 'harness import biaslens')."""


@group.command("export")
@click.argument("db", type=LogFileParam(exists=True))
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option(
    "--roles",
    "roles_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the generated roles here (JSON), for a biaslens.questions campaign.",
)
@click.option(
    "--questions",
    "questions_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the generated questions here (.json or .csv), for a biaslens.answer campaign.",
)
@click.option("--force", is_flag=True, help="Replace the --roles/--questions files if they exist.")
def export(
    db: Path,
    campaign: str | None,
    roles_out: Path | None,
    questions_out: Path | None,
    force: bool,
) -> None:
    """Export the roles and questions a generation campaign in DB produced."""
    from relations.biaslens.generation_export import question_set, read_generation, write_roles
    from relations.biaslens.questionset import write_questions

    if roles_out is None and questions_out is None:
        raise click.UsageError("give --roles FILE and/or --questions FILE")
    # Both outputs are checked before anything is written; neither may be the other.
    if roles_out is not None:
        check_output(roles_out, inputs=[db], force=force, option="--roles")
    if questions_out is not None:
        check_output(
            questions_out,
            inputs=[db, *([roles_out] if roles_out else [])],
            force=force,
            option="--questions",
        )
    generated = read_generation(db, campaign)
    if roles_out is not None:
        write_roles(generated.roles, roles_out, inputs=[db], force=force)
        total = sum(len(r) for r in generated.roles.values())
        click.echo(f"{total} roles for {len(generated.roles)} attributes -> {roles_out}", err=True)
    if questions_out is not None:
        write_questions(question_set(generated, str(db)), questions_out, inputs=[db], force=force)
        click.echo(
            f"{len(generated.questions)} questions -> {questions_out}; dropped "
            f"{generated.dropped_placeholder} with Group A/B placeholders and "
            f"{generated.dropped_malformed} malformed",
            err=True,
        )
    if generated.invalid_cases:
        click.echo(f"{generated.invalid_cases} generation cases were INVALID", err=True)


@click.command("biaslens")
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--db",
    type=LogFileParam(),
    help="Event log to write (default: biaslens-<folder>.db in the current directory).",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Import only this model folder (repeatable; default: every model found).",
)
@click.option(
    "--compact",
    is_flag=True,
    help="Write log format 2 (texts stored once: about 1.7x the CSV instead of 10x), at about "
    "twice the CPU to import and to report; see README 'The event log'.",
)
def import_biaslens(src: Path, db: Path | None, models: tuple[str, ...], compact: bool) -> None:
    """Import SRC (a BiasLens folder: answers/role/<model>/<attr>_answers_0N.csv, roles/,
    questions/) as one campaign of closed biaslens.answer cases."""
    from harness.family_api import RichProgress
    from relations.biaslens.importer import import_released, plan_import

    db = db or Path(f"biaslens-{src.resolve().name}.db")
    if not db.exists() and not db.absolute().parent.is_dir():
        raise ConfigError(
            f"{db.absolute().parent} is not a directory",
            field="--db",
            fix="create the directory first, or give a path in an existing one",
        )
    # The answers are counted by the import while its reading process starts.
    plan = plan_import(src, list(models) or None, count=False)
    # The bar counts answers imported: a six-model folder takes minutes, never silently.
    with RichProgress(None, label="answers") as progress:
        summary = asyncio.run(
            import_released(src, db, plan=plan, progress=progress, compact=compact)
        )
    for path in summary.dead_partials_removed:
        click.echo(f"removed {path}: the partial file of a killed import into {db}", err=True)
    rate = summary.events / summary.elapsed_s if summary.elapsed_s else 0.0
    click.echo(
        f"imported {summary.answers} answers from {summary.files} files "
        f"({', '.join(summary.models)}) as campaign {summary.campaign}: "
        f"{summary.events} events in {summary.elapsed_s:.1f}s ({rate:,.0f} events/s)"
        + (
            f"; {summary.skipped_rows} rows without a known question type skipped"
            if summary.skipped_rows
            else ""
        ),
        err=True,
    )
    click.echo(f"report with: harness report {db} --mode released", err=True)
