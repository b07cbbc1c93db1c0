"""The ``harness`` command line: the registered commands (the core's and every family's),
and ``harness import NAME`` for every registered importer."""

from __future__ import annotations

import sys

import click

from harness.errors import HarnessError
from harness.registry import commands, importers


class _Group(click.Group):
    """Turns every HarnessError into one clear line and exit code 2, never a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except HarnessError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="bias-harness")
def main() -> None:
    """Metamorphic fairness campaigns against language models, recorded as an event log."""


@click.group("import")
def import_group() -> None:
    """Turn a released dataset into an event log that report, show and replay read."""


for _command in commands():
    main.add_command(_command)
for _importer in importers():
    import_group.add_command(_importer)
if import_group.commands:
    main.add_command(import_group)
