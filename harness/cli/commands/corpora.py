"""``harness corpora``: the data the relations draw from, with counts and provenance."""

from __future__ import annotations

from collections import Counter

import click

import corpora


@click.command("corpora")
def command() -> None:
    """List the embedded corpora and their sizes."""
    terms = corpora.social_terms()
    by_group = Counter(t.group for t in terms)
    gendered = Counter(t.gender for t in terms if t.gender)
    click.echo(
        f"social_groups.csv  {len(terms)} terms: "
        + ", ".join(f"{g} {by_group[g]}" for g in corpora.GROUPS)
        + f" (explicitly female {gendered['female']}, male {gendered['male']})"
    )
    catalogue = corpora.attribute_catalogue()
    click.echo(
        f"attributes.toml    {len(catalogue.attributes)} attributes: "
        + ", ".join(f"{d} {len(catalogue.of(d))}" for d in catalogue.dimensions)
    )
    questions = corpora.inverted_questions()
    click.echo(f"inverted_questions.toml  {len(questions.questions)} question templates")
    click.echo("provenance: corpora/PROVENANCE.md")
