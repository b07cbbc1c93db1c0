"""``harness relations``: what can be run."""

from __future__ import annotations

import json

import click

from harness.registry import relation_classes


@click.command("relations")
@click.option("--verbose", is_flag=True, help="Show each relation's options and defaults.")
def command(verbose: bool) -> None:
    """List the relations, one line each."""
    classes = relation_classes()
    width = max(len(n) for n in classes)
    for name, cls in classes.items():
        click.echo(f"{name:<{width}}  {cls.summary}")
        if verbose:
            schema = cls.Options.model_json_schema().get("properties", {})
            for opt, spec in schema.items():
                default = json.dumps(spec.get("default")) if "default" in spec else "(required)"
                click.echo(f"{'':<{width}}    {opt} = {default}")
