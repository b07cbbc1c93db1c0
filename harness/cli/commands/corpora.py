"""``harness corpora``: the data the relations draw from, with counts and provenance.

Every corpus comes from the registry (each family declares its own, `Family.corpora`), so
the core names no family's data: a third party's family lists its corpora here too.
"""

from __future__ import annotations

from itertools import groupby

import click

from harness.plugins.family_parts import corpora


@click.command("corpora")
def command() -> None:
    """List the embedded corpora and their sizes, by family."""
    found = sorted(corpora(), key=lambda fc: (fc[0], fc[1].name))
    if not found:
        click.echo("no family declares a corpus")
        return
    width = max(len(corpus.name) for _, corpus in found)
    for family, group in groupby(found, key=lambda fc: fc[0]):
        click.echo(family)
        for _, corpus in group:
            click.echo(f"  {corpus.name:<{width}}  {corpus.describe()}")
    sources: dict[str, list[str]] = {}
    for _, corpus in found:
        sources.setdefault(corpus.provenance or "not stated", []).append(corpus.name)
    if len(sources) == 1:
        click.echo(f"provenance: {next(iter(sources))}")
        return
    for source, names in sources.items():
        click.echo(f"provenance: {source} ({', '.join(names)})")
