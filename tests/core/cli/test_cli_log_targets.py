"""Every command that takes a log, given a libpq connection string (or another connection
string that is no postgresql:// URL) where the log goes: exit status 2, one line naming the
argument and the URL form, the password nowhere in the output, and no file made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.store.target import URL_FORM

PASSWORD = "s3cret-Pa55word"
LIBPQ = f"host=localhost dbname=bias user=u password={PASSWORD}"
SCHEMELESS = f"u:{PASSWORD}@localhost:5432/bias"
MYSQL = f"mysql://u:{PASSWORD}@localhost/bias"


def _commands(tmp_path: Path, log: Path, dsn: str) -> list[tuple[list[str], str]]:
    """(argv, the field the refusal names) for each place a command takes a log."""
    folder = tmp_path / "released"
    folder.mkdir(exist_ok=True)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("test_id\n")
    db, lg = str(log), str(log)
    return [
        (["run", "sim", "--db", dsn], "--db"),
        (["run", "sim", "--db", str(tmp_path / "new.db"), "--reuse", dsn], "--reuse"),
        (["resume", dsn], "DB"),
        (["resume", db, "--reuse", dsn], "--reuse"),
        (["replay", dsn], "DB"),
        (["replay", dsn, "--verify"], "DB"),
        (["rejudge", dsn, "--judge", "sim:judge"], "DB"),
        (["report", dsn], "DB"),
        (["show", dsn, "1"], "DB"),
        (["export", dsn], "DB"),
        (["campaigns", dsn], "DB"),
        (["cache", "explain", dsn, "1", "--from", lg], "DB"),
        (["cache", "explain", db, "1", "--from", dsn], "--from"),
        (["copy", dsn, str(tmp_path / "copy.db")], "SRC"),
        (["copy", db, dsn], "DST"),
        (["worker", dsn], "DB_URL"),
        (["worker", "postgresql://u@localhost/bias", "--reuse", dsn], "--reuse"),
        (["biaslens", "export", dsn], "DB"),
        (["metafair", "export", dsn, str(tmp_path / "out.json")], "DB"),
        (["badf", "analyze", dsn], "DB"),
        (["import", "biaslens", str(folder), "--db", dsn], "--db"),
        (["import", "badf", str(folder), "--db", dsn], "--db"),
        (["import", "metafair", str(pairs), "--db", dsn], "--db"),
    ]


@pytest.mark.parametrize("dsn", [LIBPQ, SCHEMELESS, MYSQL], ids=["libpq", "schemeless", "mysql"])
def test_every_log_argument_refuses_a_dsn(tmp_path: Path, dsn: str) -> None:
    # The refusal comes as the arguments are read: no log need be there.
    log = tmp_path / "x.db"
    log.touch()  # --from and --reuse must exist, and are read before the arguments
    commands = _commands(tmp_path, log, dsn)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # a command that took the string as a file name would make it here
    try:
        before = sorted(p.name for p in tmp_path.iterdir())
        for argv, field in commands:
            result = CliRunner().invoke(main, argv)
            said = " ".join(argv)
            assert result.exit_code == 2, (said, result.output)
            assert f"error: {field}: " in result.output, (said, result.output)
            assert URL_FORM in result.output, (said, result.output)
            assert PASSWORD not in result.output, (said, result.output)
        assert sorted(p.name for p in tmp_path.iterdir()) == before
    finally:
        os.chdir(cwd)


def test_a_file_only_command_refuses_a_database_naming_its_argument(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["badf", "analyze", "postgresql://u@localhost/x"])
    assert result.exit_code == 2
    assert "error: DB: this command works on a SQLite log file" in result.output


def test_workers_on_a_sqlite_log_are_refused_naming_the_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", "sim", "--db", str(tmp_path / "x.db"), "--workers", "2"]
    )
    assert result.exit_code == 2
    assert "error: --workers: --workers needs a PostgreSQL log" in result.output
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("where", ["--db", "store"])
@pytest.mark.parametrize("dsn", [LIBPQ, SCHEMELESS], ids=["libpq", "schemeless"])
def test_a_real_run_given_a_dsn_makes_no_file_and_hides_the_password(
    tmp_path: Path, where: str, dsn: str
) -> None:
    # The whole program, in its own process, as an operator runs it: on the command line or
    # as the campaign file's `store`, the string is refused before anything is created.
    campaign = tmp_path / "c.toml"
    store = f"store = {json.dumps(dsn)}\n" if where == "store" else ""
    campaign.write_text(
        f'name = "t"\n{store}[[models]]\nname = "sim:default"\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 1\n'
    )
    argv = ["run", str(campaign), "--no-report"] + (["--db", dsn] if where == "--db" else [])
    before = sorted(p.name for p in tmp_path.iterdir())
    result = subprocess.run(
        [sys.executable, "-c", "from harness.cli import main; main()", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert f"error: {where}: " in result.stderr
    assert URL_FORM in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
