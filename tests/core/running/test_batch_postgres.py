"""Batch mode on the PostgreSQL store, in one process: ``harness run --batch`` on a
PostgreSQL log gives the same verdicts as a direct run with the same seeds, records its
batches as the same notes (naming the worker that owns them), replays with 0 differences
and pays each request once; several workers on a batch campaign are refused before
anything is written (exit 2)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.log_snapshot import snapshot, transcripts

from harness.cli import main
from harness.models.sim_batch import billed_requests
from harness.running.batch_waves import known_waves
from harness.running.campaign import load_campaign
from harness.running.runner import run_campaign
from harness.store.open import open_reader
from harness.verifying.replay import verify_log
from harness.vocabulary.errors import NotAHarnessLogError
from harness.vocabulary.events import Note, ReplyReceived

CORPUS = Path(__file__).resolve().parents[3] / "corpora" / "metafair" / "crossed_open_tests.json"
CAMPAIGN = """
name = "batch-pg"
seed = 11
[[models]]
name = "sim:planted"
mode = "{mode}"
options = {{ batch_dir = "{sim}" }}
[[judges]]
name = "sim:judge-a"
mode = "{mode}"
answer_format = "structured"
params = {{ temperature = 0.0, seed = 0 }}
options = {{ batch_dir = "{sim}", judge_false_positive_rate = 0.1 }}
[[relations]]
name = "metaquerier.mr1"
cases = 12
[[relations]]
name = "metafair.mr1"
cases = 6
options = {{ jury = 1, testset = "{corpus}" }}
[batch]
wave_size = 200
wave_age_s = 0.05
poll_s = 0.02
poll_max_s = 0.05
[limits]
max_attempts = 4
"""


def write_campaign(tmp_path: Path, mode: str, name: str) -> Path:
    toml = tmp_path / f"{name}.toml"
    toml.write_text(CAMPAIGN.format(mode=mode, sim=tmp_path / "sim", corpus=CORPUS))
    return toml


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def events_of(target: str, kind: str) -> list[Any]:
    with open_reader(target) as log:
        return [e.event for e in log.events(kinds=(kind,))]


def test_a_batch_run_on_postgresql_equals_a_direct_run(tmp_path: Path, pg_url: str) -> None:
    direct_db = tmp_path / "direct.db"
    asyncio.run(run_campaign(load_campaign(write_campaign(tmp_path, "direct", "d")), direct_db))
    result = invoke("run", str(write_campaign(tmp_path, "batch", "b")), "--db", pg_url)
    assert result.exit_code == 0, result.output
    assert "vendor batch" in result.output  # the report's batch_replies table

    direct, batched = transcripts(direct_db), transcripts(pg_url)
    assert len(direct) == 18 and batched == direct
    verified = verify_log(pg_url)
    assert verified.cases == 18 and not verified.differences
    assert invoke("replay", pg_url, "--verify").exit_code == 0

    replies = [r for r in events_of(pg_url, "ReplyReceived") if isinstance(r, ReplyReceived)]
    assert replies and all(r.batch for r in replies)
    notes = [n for n in events_of(pg_url, "Note") if isinstance(n, Note)]
    waves = known_waves(notes)
    assert waves and all(w.state == "ended" and w.batch_id for w in waves.values())
    # Every batch note names the one worker that owned the batches.
    owners = {n.data.get("owner") for n in notes if n.topic.startswith("batch.")}
    assert len(owners) == 1 and None not in owners
    # Each request paid once, and every paid answer recorded.
    billed = billed_requests(tmp_path / "sim")
    assert max(billed.values()) == 1 and sum(billed.values()) == len(replies)


def test_several_workers_on_a_batch_campaign_are_refused(tmp_path: Path, pg_url: str) -> None:
    toml = str(write_campaign(tmp_path, "batch", "b"))
    result = invoke("run", toml, "--db", pg_url, "--workers", "2")
    assert result.exit_code == 2, result.output
    assert "--workers" in result.output and "one process" in result.output
    assert not (tmp_path / "sim").exists()  # nothing sent
    with pytest.raises(NotAHarnessLogError):  # nothing written: not even the log's tables
        open_reader(pg_url)

    # A campaign started in one process: a worker joining it is refused, writing nothing.
    started = invoke(
        "run", str(write_campaign(tmp_path, "batch", "c")), "--db", pg_url, "--no-report"
    )
    assert started.exit_code == 0, started.output
    with open_reader(pg_url) as log:
        before = log.connection.execute("SELECT count(*) FROM events").fetchone()[0]
    joined = invoke("worker", pg_url)
    assert joined.exit_code == 2, joined.output
    assert "batch mode" in joined.output and "harness resume" in joined.output
    with open_reader(pg_url) as log:
        assert log.connection.execute("SELECT count(*) FROM events").fetchone()[0] == before


KILL_CAMPAIGN = CAMPAIGN.replace("cases = 12", "cases = 30").replace("cases = 6", "cases = 8")
KILL_CAMPAIGN = KILL_CAMPAIGN.replace("wave_size = 200", "wave_size = 6").replace(
    'options = {{ batch_dir = "{sim}"', 'options = {{ batch_polls = 2, batch_dir = "{sim}"'
)
KILLS = 8


def _harness(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _files(sim: Path, pattern: str, text: bytes | None = None) -> int:
    found = 0
    for path in sim.glob(pattern):
        try:
            found += text is None or text in path.read_bytes()
        except OSError:  # replaced under us
            continue
    return found


def _wait_for(proc: subprocess.Popen[bytes], now: Callable[[], int]) -> bool:
    """Wait until ``now()`` grows (True) or the process ends (False)."""
    before = now()
    stop = time.monotonic() + 30.0
    while proc.poll() is None and time.monotonic() < stop:
        if now() > before:
            return True
        time.sleep(0.003)
    return proc.poll() is None


@pytest.mark.slow
def test_kill_9_and_resume_on_postgresql_loses_nothing_and_pays_once(
    tmp_path: Path, pg_url: str
) -> None:
    started = time.monotonic()
    sim = tmp_path / "sim"
    toml = tmp_path / "kill.toml"
    toml.write_text(KILL_CAMPAIGN.format(mode="batch", sim=sim, corpus=CORPUS))
    rng = random.Random(5)
    triggers: dict[str, Callable[[], int]] = {
        "uploaded": lambda: _files(sim, "file_*.json"),
        "created": lambda: _files(sim, "batch_*.json"),
        "ingesting": lambda: _files(sim, "batch_*.json", b'"state": "ended"'),
    }
    kinds: Counter[str] = Counter()
    snapshots = []
    proc = _harness("run", str(toml), "--db", pg_url, "--no-report")
    kills = 0
    while not _files(sim, "file_*.json") and proc.poll() is None:  # the log exists by then
        time.sleep(0.01)
    while kills < KILLS:
        kind = rng.choice([*triggers, "random"])
        if kind == "random":
            stop = time.monotonic() + rng.uniform(0.5, 1.5)
            while proc.poll() is None and time.monotonic() < stop:
                time.sleep(0.01)
            alive = proc.poll() is None
        else:
            alive = _wait_for(proc, triggers[kind])
            time.sleep(rng.uniform(0, 0.02))
        if not alive or proc.poll() is not None:
            break  # the campaign finished before this kill
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        kinds[kind] += 1
        snapshots.append(snapshot(pg_url)[0])
        proc = _harness("resume", pg_url, "--no-report")
    assert proc.wait(timeout=300) == 0
    final_rows = snapshot(pg_url)[0]

    direct_toml = tmp_path / "direct.toml"
    direct_toml.write_text(KILL_CAMPAIGN.format(mode="direct", sim=sim, corpus=CORPUS))
    asyncio.run(run_campaign(load_campaign(direct_toml), tmp_path / "direct.db"))

    billed = billed_requests(sim)
    lost = sum(len(rows - final_rows) for rows in snapshots)
    replies = [r for r in events_of(pg_url, "ReplyReceived") if isinstance(r, ReplyReceived)]
    with open_reader(pg_url) as log:
        per_turn = log.connection.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'ReplyReceived' "
            "GROUP BY case_id, turn) AS t"
        ).fetchone()[0]
    owners = {
        n.data.get("owner")
        for n in events_of(pg_url, "Note")
        if isinstance(n, Note) and n.topic.startswith("batch.")
    }
    killed_run, direct = transcripts(pg_url), transcripts(tmp_path / "direct.db")
    verified = verify_log(pg_url)
    repaid = sum(n - 1 for n in billed.values())
    print(
        f"PostgreSQL batch kill test: {kills} kill -9 ({dict(kinds)}) in "
        f"{time.monotonic() - started:.0f}s; {sum(billed.values())} requests billed, {repaid} "
        f"paid twice, {len(replies)} replies recorded; {len(owners)} owners; lost committed "
        f"events {lost}; verdicts equal to a direct run: {killed_run == direct}; replay "
        f"differences {len(verified.differences)}"
    )
    assert kills >= KILLS - 2
    assert lost == 0 and repaid == 0 and per_turn == 1
    assert sum(billed.values()) == len(replies)  # every paid answer recorded, none lost
    assert killed_run.keys() == direct.keys() and len(direct) == 38
    assert killed_run == direct
    assert not verified.differences
    assert len(owners) >= 2 and None not in owners  # each process named its own batches
