"""A new log built in a private file and published whole (`harness.store.fresh_log`): the
target appears complete or not at all, is never overwritten, and a killed build's partial
file is swept by the next build once no living process holds it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.store.fresh_log import FreshLog, partial_files
from harness.store.schema import BULK_PRAGMAS, apply_pragmas
from harness.store.writer import EventWriter
from harness.vocabulary.errors import StoreError
from relations.biaslens.importer import import_released
from tests.families.biaslens.test_biaslens_import_stream import ROWS_PER_FILE, released_folder

ROOT = Path(__file__).resolve().parents[3]


def _write_table(path: Path, rows: int = 100) -> None:
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        apply_pragmas(conn, BULK_PRAGMAS)
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(rows)])
        conn.execute("COMMIT")


def test_a_published_log_is_whole_in_wal_and_leaves_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "new.db"
    with FreshLog.build(target) as fresh:
        assert fresh.partial.parent == tmp_path and fresh.partial.name.startswith(".new.db.")
        assert not target.exists()
        _write_table(fresh.partial)
        fresh.publish()
    with contextlib.closing(sqlite3.connect(target)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 100
    assert partial_files(target) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["new.db"]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # as a log written in place


def test_a_failed_build_leaves_neither_log_nor_partial(tmp_path: Path) -> None:
    target = tmp_path / "new.db"
    with pytest.raises(RuntimeError), FreshLog.build(target) as fresh:
        _write_table(fresh.partial)
        raise RuntimeError("the source broke")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_log_is_never_the_target(tmp_path: Path) -> None:
    target = tmp_path / "old.db"
    target.write_bytes(b"a log")
    with pytest.raises(StoreError, match="exists"), FreshLog.build(target):
        pass
    assert target.read_bytes() == b"a log"


def test_a_target_that_appears_during_the_build_is_not_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "new.db"
    with pytest.raises(StoreError, match="appeared"), FreshLog.build(target) as fresh:
        _write_table(fresh.partial)
        target.write_bytes(b"someone else's log")
        fresh.publish()
    assert target.read_bytes() == b"someone else's log"
    assert partial_files(target) == []


def test_a_dead_builds_partial_is_swept_and_a_living_ones_kept(tmp_path: Path) -> None:
    target = tmp_path / "new.db"
    dead = tmp_path / ".new.db.dead.partial"
    dead.write_bytes(b"half a log")
    (tmp_path / ".new.db.dead.partial-journal").write_bytes(b"")
    living = tmp_path / ".new.db.living.partial"
    living.write_bytes(b"a log being built")
    holder = subprocess.Popen(  # another process holds its lock, as a running build does
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR);"
            " fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
            str(living),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with FreshLog.build(target) as fresh:
            assert fresh.dead_partials_removed == [dead]
            _write_table(fresh.partial)
            fresh.publish()
        assert sorted(p.name for p in tmp_path.iterdir()) == [".new.db.living.partial", "new.db"]
    finally:
        holder.communicate("")


def test_bulk_writing_is_refused_on_an_existing_log(tmp_path: Path) -> None:
    async def open_twice() -> None:
        async with await EventWriter.open(tmp_path / "x.db"):
            pass
        await EventWriter.open(tmp_path / "x.db", bulk=True)

    with pytest.raises(StoreError, match="bulk writing is only for a log built whole"):
        asyncio.run(open_twice())


def test_an_import_into_an_existing_log_appends_a_campaign(tmp_path: Path) -> None:
    folder = released_folder(tmp_path / "src", 1)
    db = tmp_path / "x.db"
    first = asyncio.run(import_released(folder, db))
    second = asyncio.run(import_released(folder, db))
    with contextlib.closing(sqlite3.connect(db)) as conn:
        campaigns = conn.execute(
            "SELECT campaign, count(*) FROM events WHERE kind = 'CaseOpened' GROUP BY campaign"
        ).fetchall()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert sorted(campaigns) == sorted(
        (c, 3 * (ROWS_PER_FILE - 1)) for c in (first.campaign, second.campaign)
    )


def _wait_for_commits(proc: subprocess.Popen[Any], db: Path) -> None:
    """Until the import ``proc`` has some commits in its partial file, long before its end."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.stat().st_size > 2_000_000 for p in partial_files(db) if p.exists()):
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the import ended before it could be stopped"


@pytest.mark.slow
def test_a_killed_import_leaves_no_log_and_the_next_one_sweeps_its_file(tmp_path: Path) -> None:
    folder = released_folder(tmp_path / "src", 12)
    db = tmp_path / "killed.db"
    command = [sys.executable, "-c", "from harness.cli import main; main()", "import", "biaslens"]
    command.append(str(folder))
    proc = subprocess.Popen([*command, "--db", str(db)], cwd=ROOT, stderr=subprocess.DEVNULL)
    _wait_for_commits(proc, db)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not db.exists()  # no half log under the name
    (left,) = partial_files(db)
    again = subprocess.run(
        [*command, "--db", str(db)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert f"removed {left}" in again.stderr
    assert partial_files(db) == []
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (cases,) = conn.execute("SELECT count(*) FROM events WHERE kind = 'CaseClosed'").fetchone()
    assert cases == 12 * 3 * (ROWS_PER_FILE - 1)


def test_a_missing_directory_is_a_store_error_and_the_import_names_its_option(
    tmp_path: Path,
) -> None:
    with pytest.raises(StoreError, match="cannot create"), FreshLog.build(tmp_path / "no" / "x.db"):
        pass
    folder = released_folder(tmp_path / "src", 1)
    result = CliRunner().invoke(
        main, ["import", "biaslens", str(folder), "--db", str(tmp_path / "no" / "x.db")]
    )
    assert result.exit_code == 2 and "--db" in result.output and "not a directory" in result.output
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
def test_ctrl_c_stops_an_import_cleanly_and_leaves_nothing(tmp_path: Path) -> None:
    # Ctrl-C reaches the whole process group: the parent stops its reading process and
    # removes the partial file; no traceback, no process left behind.
    folder = released_folder(tmp_path / "src", 12)
    db = tmp_path / "stopped.db"
    command = [sys.executable, "-c", "from harness.cli import main; main()", "import", "biaslens"]
    proc = subprocess.Popen(
        [*command, str(folder), "--db", str(db)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_for_commits(proc, db)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    for _ in range(100):  # the reading process (and multiprocessing's helper) end with it
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("a process of the import outlived it")
