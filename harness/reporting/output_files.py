"""Files a command writes (reports, exports, libraries, campaign files): never over an event
log or one of the command's own inputs, over another existing file only when forced, and
always whole: the text goes to a temporary file beside the target that is renamed over it,
so a failed or interrupted write leaves the old file (or none), never a truncated one. An
output is created with the user's umask (0o666 less it), as other programs' files are.

Every command with an output option (``--out``, ``--roles``, ``--questions``) goes through
`check_output` before its work and `write_output`/`atomic_output` for the write.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from harness.store.log import Log
from harness.vocabulary.errors import ConfigError

_SQLITE_MAGIC = b"SQLite format 3\x00"


def is_event_log(path: Path) -> bool:
    """True for an SQLite file: an event log (or a database) is never an output's target."""
    try:
        with path.open("rb") as fh:
            return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def _is_stream(path: Path) -> bool:
    """/dev/stdout, a named pipe: written through, there is no file to replace."""
    try:
        return path.exists() and not path.is_file()
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(
    path: str | Path,
    *,
    inputs: Iterable[str | Path | Log] = (),
    force: bool = False,
    option: str = "--out",
) -> Path:
    """``path`` if the command may write it; a `ConfigError` naming the fix otherwise."""
    target = Path(path)
    for given in inputs:
        # A log in a database is no file an output could overwrite.
        source = given.path if isinstance(given, Log) else Path(given)
        if source is None:
            continue
        if _same_file(target, source) or target.resolve() == source.resolve():
            raise ConfigError(
                f"{target} is also an input of this command; writing it would destroy it",
                field=option,
                fix="give another output file",
            )
    if target.is_dir():
        raise ConfigError(f"{target} is a directory", field=option, fix="give a file name")
    if _is_stream(target):
        return target
    if target.exists():
        if is_event_log(target):
            raise ConfigError(
                f"{target} is an event log; an output never replaces a log",
                field=option,
                fix="give another output file",
            )
        if not force:
            raise ConfigError(
                f"{target} exists",
                field=option,
                fix="give another file, or add --force to replace it",
            )
    return target


def check_new_log(
    path: str | Path, *, inputs: Iterable[str | Path | Log] = (), option: str = "--out"
) -> Path:
    """``path`` if a command may create a new event log there: never an input, never an
    existing file (a log output is always a new file; nothing is appended to another log)."""
    target = check_output(path, inputs=inputs, force=True, option=option)
    if target.exists():
        raise ConfigError(f"{target} exists", field=option, fix="give the name of a new log file")
    return target


@contextlib.contextmanager
def atomic_output(
    path: str | Path,
    *,
    inputs: Iterable[str | Path | Log] = (),
    force: bool = False,
    option: str = "--out",
    newline: str | None = None,
) -> Iterator[TextIO]:
    """A text file handle whose content replaces ``path`` only when the block succeeds."""
    target = check_output(path, inputs=inputs, force=force, option=option)
    if _is_stream(target):
        with target.open("w", encoding="utf-8", newline=newline) as stream:
            yield stream
        return
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = _create_beside(directory, f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        # Checked again: the target may have appeared (or become a log) while we wrote.
        check_output(target, inputs=inputs, force=force, option=option)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_beside(directory: Path, prefix: str) -> tuple[int, Path]:
    """A new temporary file of a random name in ``directory``, opened for writing. Created
    with mode 0o666 less the umask, as any file the user's programs create: the output it
    becomes is readable as the user chose (`tempfile.mkstemp` would make every output
    0600 whatever the umask)."""
    while True:
        path = directory / f"{prefix}{secrets.token_hex(6)}.tmp"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:
            continue


def write_output(
    path: str | Path,
    text: str,
    *,
    inputs: Iterable[str | Path | Log] = (),
    force: bool = False,
    option: str = "--out",
) -> None:
    """Write ``text`` to ``path`` whole, under the rules of `check_output`."""
    with atomic_output(path, inputs=inputs, force=force, option=option, newline="") as fh:
        fh.write(text)


def write_stdout(text: str) -> None:
    """Machine output (JSON, CSV, TOML) to stdout exactly as it is: ``click.echo`` strips
    ANSI sequences when stdout is not a terminal, which would alter recorded model text."""
    stream = sys.stdout
    stream.write(text)
    stream.flush()
