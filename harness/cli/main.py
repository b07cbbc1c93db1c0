"""The ``harness`` command line: the registered commands, the core's and every family's.
The group reads the registry when a command is looked up, so a family registered at run
time has its commands too."""

from __future__ import annotations

import contextlib
import signal
import sys

import click

from harness.cli.exit_codes import ExitCode
from harness.plugins.family_parts import command, command_names
from harness.reporting.terminal_text import printable
from harness.vocabulary.errors import CampaignAbortedError, HarnessError


class _MainGroup(click.Group):
    """Registered commands; every HarnessError becomes one clear line and the exit status of
    `harness.cli.exit_codes` (3 for an aborted campaign, 2 for any other error, 130 on Ctrl-C)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return command_names()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return command(cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        # SIGTERM ends a command as Ctrl-C does (130, "interrupted"), also while it starts
        # or prints its report; a running campaign installs its own graceful handlers.
        with contextlib.suppress(ValueError):  # not the main thread (tests)
            signal.signal(signal.SIGTERM, _interrupt)
        try:
            return super().invoke(ctx)
        except CampaignAbortedError as exc:
            click.echo(f"aborted: {printable(exc)}", err=True)
            sys.exit(ExitCode.ABORTED)
        except HarnessError as exc:
            click.echo(f"error: {printable(exc)}", err=True)
            sys.exit(ExitCode.USAGE)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(ExitCode.INTERRUPTED)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@click.group(cls=_MainGroup)
@click.version_option(package_name="bias-harness")
def main() -> None:
    """Metamorphic fairness campaigns against language models, recorded as an event log."""
