"""``harness relations``: what can be run."""

from __future__ import annotations

import json

import click
from pydantic.fields import FieldInfo

from harness.plugins.family_parts import relation_classes


@click.command("relations")
@click.option("--verbose", is_flag=True, help="Show each relation's options, defaults and meaning.")
def command(verbose: bool) -> None:
    """List the relations, one line each.

    Every relation runs against any target a campaign names in [[models]]: a bare model
    (sim:, local:, openai:, anthropic:, google:, openai-compat:), an application's own JSON
    endpoint (http:NAME with options url, body, reply_path) or its Python function
    (python:package.module:function), each with an optional system prompt and template
    around the relation's prompts (system, system_file, template with {prompt}). Relations
    never see them; see docs/targets.md.
    """
    classes = relation_classes()
    width = max(len(n) for n in classes)
    for name, cls in classes.items():
        click.echo(f"{name:<{width}}  {cls.summary}")
        if verbose:
            for opt, field in cls.Options.model_fields.items():
                click.echo(f"{'':<{width}}    {opt} = {_default(field)}")
                if field.description:
                    click.echo(f"{'':<{width}}        {field.description}")


def _default(field: FieldInfo) -> str:
    """The option's default as it would be written in a campaign file, or "(required)"."""
    if field.is_required():
        return "(required)"
    # A default_factory (a list of every group, say) is a default too.
    value = field.get_default(call_default_factory=True)
    return json.dumps(value, ensure_ascii=False, default=str)
