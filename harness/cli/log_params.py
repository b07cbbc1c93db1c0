"""Click parameter types for a log given on the command line: parsed once, where it is
typed, into a `harness.store.log.Log` (`LogParam`) or, for commands that work on a SQLite
file only, a `Path` (`LogFileParam`). A connection string in another form than a
``postgresql://`` URL is refused there with a `ConfigError` naming the option (exit 2),
before click could echo it (with its password) in a "does not exist" message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from harness.store.log import Log


def _field(param: click.Parameter | None) -> str:
    """How the user named the parameter: ``--db`` for an option, ``DB`` for an argument."""
    if param is None:
        return "log"
    if isinstance(param, click.Option) and param.opts:
        return max(param.opts, key=len)
    return param.human_readable_name


class LogParam(click.ParamType[Log, Any]):
    """A log: a SQLite file path or a ``postgresql://`` URL, given as a `Log`."""

    name = "log"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Log:
        return Log.at(value, field=_field(param))


class LogFileParam(click.ParamType[Path, Any]):
    """A log that must be a SQLite file (a URL is refused), given as a `Path`; ``exists``:
    it must be there."""

    name = "file"

    def __init__(self, *, exists: bool = False) -> None:
        self._path = click.Path(dir_okay=False, exists=exists, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        field = _field(param)
        path = Log.at(value, field=field).file("this command", field=field)
        converted: Path = self._path.convert(path, param, ctx)
        return converted
