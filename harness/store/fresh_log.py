"""A new SQLite log built in a private file and published whole.

A bulk writer that creates a log from data it already holds (the BiasLens import of released
answers) does not need every commit to be durable on its own: nothing reads the log before
it is complete, and a build that dies is run again. So it writes a hidden partial file next
to the target, with the rollback journal in memory and no fsync per commit
(`harness.store.schema.BULK_PRAGMAS`; figures in bench/RESULTS.md, 2026-11-27), then turns
the file to WAL, syncs it to disk and links it to the target's name, which must still be
free: nothing overwrites a log.

A build that fails or is interrupted removes its partial file. One that is killed (SIGKILL,
power cut) leaves it behind; it holds an exclusive `flock` while it lives, so the next build
into the same target finds the dead one's file unlocked and removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from harness.vocabulary.errors import StoreError

_SUFFIX = ".partial"
_SIDE_FILES = ("-journal", "-wal", "-shm")


def partial_files(target: Path) -> list[Path]:
    """The partial files of builds into ``target`` (running or dead), by name."""
    directory = target.parent
    return sorted(directory.glob(f".{glob.escape(target.name)}.*{_SUFFIX}"))


def remove_dead_partials(target: Path) -> list[Path]:
    """Removes the partial files of builds into ``target`` that no living process holds
    (their builder was killed); the removed paths. A running build's file is left alone."""
    removed = []
    for path in partial_files(target):
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            continue  # its build finished or cleaned up meanwhile
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a living build holds it
            _unlink_with_side_files(path)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


def _unlink_with_side_files(path: Path) -> None:
    path.unlink(missing_ok=True)
    for side in _SIDE_FILES:
        Path(f"{path}{side}").unlink(missing_ok=True)


class FreshLog:
    """The partial file of one build into ``target``; `publish` makes it the log.

    Use as ``with FreshLog.build(target) as fresh: write fresh.partial ...; fresh.publish()``;
    leaving the block without publishing removes the partial file."""

    def __init__(self, target: Path, partial: Path, lock_fd: int, removed: list[Path]) -> None:
        self.target = target
        self.partial = partial
        self.dead_partials_removed = removed
        self._lock_fd = lock_fd
        self.published = False

    @classmethod
    @contextlib.contextmanager
    def build(cls, target: str | Path) -> Iterator[FreshLog]:
        target = Path(target)
        if target.exists():
            raise StoreError(f"{target} exists: a new log is built under a new name")
        removed = remove_dead_partials(target)
        directory = target.parent if str(target.parent) else Path(".")
        # Created and locked under a name the sweep above does not match, then renamed: a
        # concurrent sweep never sees this file unlocked (the lock follows the open file).
        try:
            fd, name = _create_new(directory, f".{target.name}.", ".new")
        except OSError as exc:
            raise StoreError(f"cannot create {target}: {exc.strerror} ({directory})") from exc
        fcntl.flock(fd, fcntl.LOCK_EX)
        partial = name.with_suffix(_SUFFIX)
        os.rename(name, partial)
        fresh = cls(target, partial, fd, removed)
        try:
            yield fresh
            if not fresh.published:
                raise StoreError(f"{target}: the build ended without publishing its log")
        finally:
            if not fresh.published:
                _unlink_with_side_files(partial)
            os.close(fd)

    def publish(self) -> None:
        """The partial file, turned to WAL and synced, becomes ``target``; the target must
        still be free (`StoreError` else, and the partial file is removed)."""
        with contextlib.closing(sqlite3.connect(self.partial, isolation_level=None)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")  # recorded in the file's header
        with open(self.partial, "rb") as fh:
            os.fsync(fh.fileno())
        try:
            os.link(self.partial, self.target)  # fails if the name was taken meanwhile
        except FileExistsError as exc:
            raise StoreError(
                f"{self.target} appeared while the log was built; nothing overwrites a log:"
                " build it again under a new name"
            ) from exc
        self.published = True
        self.partial.unlink()
        _fsync_directory(self.target.parent if str(self.target.parent) else Path("."))


def _create_new(directory: Path, prefix: str, suffix: str) -> tuple[int, Path]:
    """A new file of a random name, opened; its mode follows the umask, as a log written in
    place would (`tempfile.mkstemp` makes it private to its owner)."""
    while True:
        path = directory / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:
            continue


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
