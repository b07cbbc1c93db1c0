"""``harness langbite``: import LangBiTe libraries, check requirements, write campaigns."""

from __future__ import annotations

from pathlib import Path

import click

from harness.family_api import check_output, write_output, write_stdout
from relations.langbite.concerns import normalize_language
from relations.langbite.importer import import_langbite
from relations.langbite.library import load_library, to_toml
from relations.langbite.requirements import load_requirements
from relations.langbite.scenario import campaign_toml
from relations.langbite.selection import select_templates


@click.group("langbite")
def group() -> None:
    """LangBiTe template suites: libraries, ethical requirements, campaigns."""


def _write(text: str, out: str | None, *, inputs: list[str], force: bool) -> None:
    if out:
        write_output(out, text, inputs=inputs, force=force)
    else:
        write_stdout(text)


@group.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--out", type=click.Path(dir_okay=False), help="Write the library here (TOML).")
@click.option("--force", is_flag=True, help="Replace the --out file if it exists.")
@click.option("--language", help="Language of the rows (default: from the file name).")
@click.option("--skip-bad", is_flag=True, help="Leave bad rows out (listed) instead of failing.")
def import_command(
    files: tuple[str, ...], out: str | None, language: str | None, skip_bad: bool, force: bool
) -> None:
    """Convert LangBiTe's tab-separated prompt library FILES into our template format."""
    if out is not None:
        check_output(out, inputs=files, force=force)
    templates = []
    for file in files:
        result = import_langbite(file, language=language, on_error="skip" if skip_bad else "raise")
        for problem in result.problems:
            click.echo(f"skipped: {problem}", err=True)
        click.echo(f"{file}: {len(result.templates)} of {result.rows} rows imported", err=True)
        templates.extend(result.templates)
    header = "Imported from LangBiTe's prompt library (MIT) by 'harness langbite import':\n"
    header += "\n".join(f"  {Path(f).name}" for f in files)
    _write(to_toml(templates, header=header), out, inputs=list(files), force=force)


@group.command("check")
@click.argument("requirements", required=False, type=click.Path(dir_okay=False))
@click.option("--library", multiple=True, help="Template file or directory (repeatable).")
@click.option("--language", "languages", multiple=True, help="Override the languages.")
def check_command(
    requirements: str | None, library: tuple[str, ...], languages: tuple[str, ...]
) -> None:
    """Validate REQUIREMENTS (default: the embedded ones) and show the templates it selects."""
    reqs = load_requirements(requirements)
    langs = [normalize_language(x) for x in languages] or reqs.scenario.languages
    selection = select_templates(
        load_library(list(library) or None),
        reqs,
        languages=langs,
        per_concern=reqs.scenario.templates_per_concern,
        seed=reqs.scenario.seed,
    )
    counts: dict[tuple[str, str], int] = {}
    for s in selection.cases:
        key = (s.template.language, s.template.concern)
        counts[key] = counts.get(key, 0) + 1
    click.echo(
        f"{requirements or 'embedded requirements'}: valid; {len(selection.cases)} templates"
    )
    for (lang, concern), n in sorted(counts.items()):
        skipped = selection.not_instantiable.get((lang, concern), 0)
        note = f" ({skipped} left out: a placeholder has no communities)" if skipped else ""
        click.echo(f"  {lang} {concern:<20} {n}{note}")


@group.command("campaign")
@click.argument("requirements", required=False, type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), help="Write the campaign here.")
@click.option("--force", is_flag=True, help="Replace the --out file if it exists.")
def campaign_command(requirements: str | None, out: str | None, force: bool) -> None:
    """Write a campaign file for the models and settings of REQUIREMENTS' [scenario]."""
    inputs = [requirements] if requirements else []
    if out is not None:
        check_output(out, inputs=inputs, force=force)
    reqs = load_requirements(requirements)
    _write(campaign_toml(reqs, requirements), out, inputs=inputs, force=force)
