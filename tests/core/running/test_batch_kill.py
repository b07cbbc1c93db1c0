"""Kill test of batch mode: ``harness run`` of a multi-turn, judged campaign in batch mode is
killed with -9 at 22 moments across the batch lifecycle (right after a wave's file is
uploaded, right after its batch is created and before its id can be recorded, while
batches are polled, right after a batch ends while its results are ingested, and at random
times), resuming each time. The sim's batch service, whose batches live in files, counts
what it billed: no request is paid twice and none is lost; the verdicts equal a direct run's
with the same seeds, and replay verifies the killed log with 0 differences."""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.log_snapshot import snapshot, transcripts

from harness.models.sim_batch import billed_requests
from harness.running.campaign import load_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log

KILLS = 22
CORPUS = Path(__file__).resolve().parents[3] / "corpora" / "metafair" / "crossed_open_tests.json"
CAMPAIGN = """
name = "batch-kill"
seed = 7
[[models]]
name = "sim:planted"
mode = "{mode}"
options = {{ batch_dir = "{sim}", batch_polls = 2 }}
[[judges]]
name = "sim:judge-a"
mode = "{mode}"
answer_format = "structured"
params = {{ temperature = 0.0, seed = 0 }}
options = {{ batch_dir = "{sim}", batch_polls = 2, judge_false_positive_rate = 0.1 }}
[[relations]]
name = "metaquerier.mr1"
cases = 60
[[relations]]
name = "metafair.mr1"
cases = 16
options = {{ jury = 1, testset = "{corpus}" }}
[batch]
wave_size = 6
wave_age_s = 0.05
poll_s = 0.05
poll_max_s = 0.1
"""


def _harness(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _count(sim: Path, pattern: str, text: bytes | None = None) -> int:
    found = 0
    for path in sim.glob(pattern):
        try:
            found += text is None or text in path.read_bytes()
        except OSError:  # replaced under us
            continue
    return found


def _polls(sim: Path) -> int:
    """Every poll the sim's batches have taken so far: it only grows (a count of pending
    batches falls as they end, so waiting for it to grow could outlast the campaign)."""
    total = 0
    for path in sim.glob("batch_*.json"):
        try:
            found = re.search(rb'"polls": (\d+)', path.read_bytes())
        except OSError:  # replaced under us
            continue
        total += int(found.group(1)) if found else 0
    return total


def _wait_for(
    proc: subprocess.Popen[bytes], now: Callable[[], int], deadline_s: float = 20.0
) -> bool:
    """Wait until ``now()`` grows (True) or the process ends (False)."""
    before = now()
    stop = time.monotonic() + deadline_s
    while proc.poll() is None and time.monotonic() < stop:
        if now() > before:
            return True
        time.sleep(0.003)
    return proc.poll() is None


@pytest.mark.slow
def test_kill_9_across_the_batch_lifecycle(tmp_path: Path) -> None:
    started = time.monotonic()
    sim = tmp_path / "sim"
    toml = tmp_path / "kill.toml"
    toml.write_text(CAMPAIGN.format(mode="batch", sim=sim, corpus=CORPUS))
    db = tmp_path / "kill.db"
    rng = random.Random(33)
    triggers: dict[str, Callable[[], int]] = {
        "uploaded": lambda: _count(sim, "file_*.json"),
        "created": lambda: _count(sim, "batch_*.json"),
        "polling": lambda: _polls(sim),
        "ingesting": lambda: _count(sim, "batch_*.json", b'"state": "ended"'),
    }
    kinds: Counter[str] = Counter()
    snapshots = []
    proc = _harness("run", str(toml), "--db", str(db), "--no-report")
    kills = 0
    while not db.exists() and proc.poll() is None:  # the first kill finds a log to resume
        time.sleep(0.01)
    while kills < KILLS:
        kind = rng.choice([*triggers, "random"])
        if kind == "random":
            stop = time.monotonic() + rng.uniform(0.6, 1.2)
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
        snapshots.append(snapshot(db)[0])
        proc = _harness("resume", str(db), "--no-report")
    assert proc.wait(timeout=120) == 0
    final_rows = snapshot(db)[0]

    direct_toml = tmp_path / "direct.toml"
    direct_toml.write_text(CAMPAIGN.format(mode="direct", sim=sim, corpus=CORPUS))
    asyncio.run(run_campaign(load_campaign(direct_toml), tmp_path / "direct.db"))

    billed = billed_requests(sim)
    lost = sum(len(rows - final_rows) for rows in snapshots)
    with EventReader(db) as log:
        replies = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'ReplyReceived'"
        ).fetchone()[0]
        per_turn = log.connection.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'ReplyReceived' "
            "GROUP BY case_id, turn)"
        ).fetchone()[0]
    killed_run, direct = transcripts(db), transcripts(tmp_path / "direct.db")
    verified = verify_log(db)
    repaid = sum(n - 1 for n in billed.values())
    print(
        f"batch kill test: {kills} kill -9 ({dict(kinds)}) in {time.monotonic() - started:.0f}s; "
        f"{sum(billed.values())} requests billed, {repaid} paid twice, {replies} replies "
        f"recorded; lost committed events {lost}; verdicts equal to a direct run: "
        f"{killed_run == direct}; replay differences {len(verified.differences)}"
    )
    assert kills >= 20
    assert lost == 0 and repaid == 0 and per_turn == 1
    assert sum(billed.values()) == replies  # every paid answer recorded, none lost
    assert killed_run.keys() == direct.keys() and len(direct) == 76
    assert killed_run == direct
    assert not verified.differences
