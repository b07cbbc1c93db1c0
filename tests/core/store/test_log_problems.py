"""A log that cannot be read or written says why, precisely, in one line (exit 2, no
traceback): damaged, not a SQLite file, written by a newer harness, read-only, or being
written by another process; never the blanket "not a harness event log"."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.schema import unreadable_log
from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.errors import ConcurrencyError
from harness.vocabulary.events import Note

COMMANDS = [
    ["report", "{db}"],
    ["show", "{db}", "1"],
    ["resume", "{db}"],
    ["replay", "{db}", "--verify"],
    ["campaigns", "{db}"],
]


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = parse_campaign(
        {
            "name": "problems",
            "models": [{"name": "sim:planted"}],
            "relations": [{"name": "metaquerier.mr1", "cases": 300}],
        }
    )
    db = tmp_path_factory.mktemp("problems") / "log.db"
    asyncio.run(run_campaign(config, db))
    return db


def _each_command(db: Path) -> list[subprocess.CompletedProcess[str]]:
    return [
        subprocess.run(
            [sys.executable, "-c", "from harness.cli import main; main()"]
            + [a.format(db=db) for a in argv],
            capture_output=True,
            text=True,
            timeout=120,
        )
        for argv in COMMANDS
    ]


def _says(db: Path, wanted: str) -> None:
    for result in _each_command(db):
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert wanted in result.stderr, result.stderr
        assert "not a harness event log" not in result.stderr or "not a SQLite" in wanted


def test_a_damaged_log_is_called_damaged(log: Path, tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    data = bytearray(log.read_bytes())
    data[8192 : 8192 + 65536] = b"\x07" * 65536  # pages of the schema and events
    db.write_bytes(bytes(data))
    _says(db, f"{db} is damaged: SQLite cannot read it")


def test_a_file_that_is_no_sqlite_file_says_so(tmp_path: Path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are my notes, not a log\n" * 200)
    _says(db, "not a SQLite file")


def test_a_log_from_a_newer_harness_says_to_upgrade(log: Path, tmp_path: Path) -> None:
    db = tmp_path / "newer.db"
    db.write_bytes(log.read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'bias-harness-event-log/7' WHERE key = 'format'")
    conn.close()
    _says(db, "was written by a newer bias-harness (log format 7")


def test_a_read_only_log_says_so() -> None:
    # As the writer meets it (root writes any file, so the error is made, not provoked).
    err = unreadable_log(
        Path("x.db"), sqlite3.OperationalError("attempt to write a readonly database")
    )
    assert "x.db is read-only" in str(err) and "make it writable" in str(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only file anyway")
def test_resuming_a_read_only_log_says_it_is_read_only(log: Path, tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    db.write_bytes(log.read_bytes())
    db.chmod(0o444)
    result = subprocess.run(
        [sys.executable, "-c", "from harness.cli import main; main()", "resume", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "is read-only" in result.stderr, result.stderr


async def test_a_second_writer_is_told_another_process_writes_the_log(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    async with await EventWriter.open(db) as first, await EventWriter.open(db) as second:
        await first.append([PendingEvent("c", "case", 1, Note(topic="a", data={}))])
        with pytest.raises(ConcurrencyError) as err:
            await second.append([PendingEvent("c", "case", 1, Note(topic="b", data={}))])
    assert "another process is writing this log" in str(err.value)
    assert "UNIQUE constraint" not in str(err.value)


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        ("{not json", "payload is not valid JSON: key must be a string at line 1 column 2"),
        ('{"reply": 1}', "payload is not an event: it has no 'kind' field"),
        ("[1, 2", "payload is not valid JSON: "),
    ],
)
def test_show_on_a_payload_that_is_no_event_says_so_in_one_line(
    log: Path, tmp_path: Path, payload: str, said: str
) -> None:
    db = tmp_path / "edited.db"
    db.write_bytes(log.read_bytes())
    with sqlite3.connect(db) as conn:
        case, seq = conn.execute(
            "SELECT case_id, seq FROM events WHERE kind = 'ReplyReceived' ORDER BY gseq LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE events SET payload = ? WHERE case_id = ? AND seq = ?", (payload, case, seq)
        )
    conn.close()
    shown = subprocess.run(
        [sys.executable, "-c", "from harness.cli import main; main()", "show", str(db), case],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 2, shown.stderr  # ExitCode.USAGE: a HarnessError
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1, shown.stderr
    assert lines[0].startswith(f"error: {db}: case {case}, event #{seq}: ReplyReceived v2 ")
    assert said in lines[0] and "pydantic" not in lines[0]
