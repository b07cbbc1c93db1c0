"""Kill test of batch mode against OpenAI's, Gemini's and Anthropic's batch protocols
(the first two find a batch whose id was never recorded by its tag, Anthropic's by the
requests it holds): ``harness run`` of a multi-turn, judged campaign in batch
mode, through the vendor's SDK, against the batch fake running as a separate process, is
killed with -9 at 22 moments across the batch lifecycle (right after a wave's file is
uploaded (OpenAI), right after its batch is created and before its id can be recorded,
while batches are polled, right after a batch ends while its results are ingested, and at
random times), resuming each time. The fake bills like the vendor and outlives every kill:
no request is paid twice and none is lost; the verdicts equal a direct run's against the
direct fake with the same seeds, and replay verifies the killed log with 0 differences."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.log_snapshot import snapshot, transcripts
from vendor_fakes import FakeVendor

from harness.running.campaign import load_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log

KILLS = 22
CORPUS = Path(__file__).resolve().parents[4] / "corpora" / "metafair" / "crossed_open_tests.json"
CAMPAIGN = """
name = "vendor-batch-kill"
seed = 7
[[models]]
name = "{model}"
mode = "{mode}"
options = {{ base_url = "{url}" }}
[[judges]]
name = "{judge}"
mode = "{mode}"
answer_format = "structured"
params = {{ temperature = 0.0, seed = 0 }}
options = {{ base_url = "{url}" }}
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
# Per vendor: the subject, the judge (another model: none grades its own answers), and the
# path its SDK's base URL ends with.
VENDORS = {
    "openai": ("openai:gpt-4o-mini", "openai:gpt-4.1-nano", "/v1"),
    "google": ("google:gemini-2.0-flash", "google:gemini-2.0-flash-lite", ""),
    # Anthropic keeps no tag: a batch whose id was never recorded is found by its requests.
    "anthropic": ("anthropic:claude-haiku-4-5", "anthropic:claude-3-5-haiku", ""),
}


@pytest.fixture
def batch_fake() -> Iterator[str]:
    """The batch fake as its own process (it outlives every killed run); yields its URL."""
    script = Path(__file__).with_name("batch_fakes.py")
    process = subprocess.Popen(
        [sys.executable, str(script), "--polls", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # killed runs leave reset connections it would print
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(10)


def _stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/_fake/stats", timeout=10) as reply:
        stats: dict[str, Any] = json.load(reply)
    return stats


def _harness(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for(
    proc: subprocess.Popen[bytes], now: Callable[[], int], deadline_s: float = 20.0
) -> bool:
    """Wait until ``now()`` grows (True) or the process ends (False)."""
    before = now()
    stop = time.monotonic() + deadline_s
    while proc.poll() is None and time.monotonic() < stop:
        if now() > before:
            return True
        time.sleep(0.005)
    return proc.poll() is None


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(VENDORS))
def test_kill_9_across_the_batch_lifecycle(
    scheme: str, tmp_path: Path, batch_fake: str, canary_keys: dict[str, str], vendor: FakeVendor
) -> None:
    started = time.monotonic()
    toml = tmp_path / "kill.toml"
    model, judge, path = VENDORS[scheme]
    toml.write_text(
        CAMPAIGN.format(
            mode="batch", model=model, judge=judge, url=batch_fake + path, corpus=CORPUS
        )
    )
    db = tmp_path / "kill.db"
    rng = random.Random(33)
    triggers: dict[str, Callable[[], int]] = {
        "created": lambda: int(_stats(batch_fake)["batches"]),
        "polling": lambda: int(_stats(batch_fake)["status_reads"]),
        "ingesting": lambda: int(_stats(batch_fake)["ended"]),
    }
    if scheme == "openai":  # Gemini's requests go inline: no file is uploaded
        triggers["uploaded"] = lambda: int(_stats(batch_fake)["files"])
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
    stats = _stats(batch_fake)

    direct_toml = tmp_path / "direct.toml"
    direct_toml.write_text(
        CAMPAIGN.format(
            mode="direct", model=model, judge=judge, url=vendor.url + path, corpus=CORPUS
        )
    )
    asyncio.run(run_campaign(load_campaign(direct_toml), tmp_path / "direct.db"))

    lost = sum(len(rows - final_rows) for rows in snapshots)
    with EventReader(db) as log:
        replies = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'ReplyReceived'"
        ).fetchone()[0]
        per_turn = log.connection.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'ReplyReceived' "
            "GROUP BY case_id, turn)"
        ).fetchone()[0]
        # Batches re-attached without their id, adopted provisionally by their requests
        # (Anthropic: the recorded id carries the wave's custom_ids' digest).
        provisional = sum(
            "#ids=" in str(getattr(e.event, "data", {}).get("batch_id", ""))
            for e in log.events(kinds=("Note",))
        )
    killed_run, direct = transcripts(db), transcripts(tmp_path / "direct.db")
    verified = verify_log(db)
    print(
        f"{scheme} batch kill test: {kills} kill -9 ({dict(kinds)}) in "
        f"{time.monotonic() - started:.0f}s; {stats['batches']} batches, "
        f"{stats['requests_sent']} requests sent, {stats['billed_requests']} billed, "
        f"{len(stats['billed_twice'])} paid twice, {replies} replies recorded; lost committed "
        f"events {lost}; verdicts equal to a direct run: {killed_run == direct}; replay "
        f"differences {len(verified.differences)}; provisionally re-attached {provisional}"
    )
    assert kills >= 20
    assert lost == 0 and stats["billed_twice"] == [] and per_turn == 1
    assert stats["billed_requests"] == replies  # every paid answer recorded, none lost
    assert killed_run.keys() == direct.keys() and len(direct) == 76
    assert killed_run == direct
    assert not verified.differences
