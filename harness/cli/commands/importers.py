"""``harness import NAME``: one subcommand per importer a family registers."""

from __future__ import annotations

import click

from harness.plugins.family_parts import importer, importer_names


class _ImportGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return importer_names()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return importer(cmd_name)


@click.group("import", cls=_ImportGroup)
def group() -> None:
    """Turn a released dataset into an event log that report, show and replay read."""
