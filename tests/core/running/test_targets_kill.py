"""Kill -9 a campaign whose subjects are an application over HTTP (sending the whole
conversation, or keeping it by the endpoint's conversation id) and the same application as
a Python function, resume it until it ends: every case closes, the transcripts equal an
uninterrupted run's, and replay finds 0 differences."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.log_snapshot import transcripts

from harness.verifying.replay import verify_log

TESTS = Path(__file__).resolve().parents[2]
REPO = TESTS.parent
KILLS = 3
HAND_WRITTEN = (REPO / "corpora" / "metafair" / "open_tests.json").as_posix()
CAMPAIGN = """
name = "targets-kill"
seed = 4
repeats = {repeats}

[[models]]
name = "http:bank-assistant"
system = "You are a loan officer at Example Bank."
template = "Customer message: {{prompt}}"
max_in_flight = 4
[models.options]
url = "{url}"
reply_path = "data.answer"
input_tokens_path = "meta.tokens.prompt"
[models.options.body]
input = {{ question = "{{prompt}}", history = "{{messages}}" }}
settings = "{{params}}"

[[models]]
name = "http:bank-sessions"
system = "You are a loan officer at Example Bank."
max_in_flight = 4
[models.options]
url = "{url}"
reply_path = "data.answer"
conversation = "id"
conversation_id_path = "session"
[models.options.body]
input = {{ question = "{{prompt}}", system = "{{system}}", session = "{{conversation_id}}" }}

[[models]]
name = "python:fixtures.target_app:answer"
system = "You are a loan officer at Example Bank."
max_in_flight = 4

[[judges]]
name = "sim:judge"
params = {{ temperature = 0.0, seed = 0 }}

# The hand-written set (5 tests), not the crossed default (138): the kill points need
# turns, not breadth.
[[relations]]
name = "metafair.mr1"
options = {{ jury = 1, testset = "{testset}" }}

# Two turns in one thread: a kill between them leaves an endpoint conversation to carry on.
[[relations]]
name = "metaquerier.mr1"
cases = 5
options = {{ control = false }}
"""


def _env(latency: str) -> dict[str, str]:
    path = os.pathsep.join([str(TESTS), str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "TARGET_APP_LATENCY_S": latency}


def _harness(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        env=_env("0.01"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _closed(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(
                conn.execute("SELECT count(*) FROM events WHERE kind = 'CaseClosed'").fetchone()[0]
            )
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _serve(tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], str]:
    portfile = tmp_path / f"{name}.port"
    proc = subprocess.Popen(
        [sys.executable, str(TESTS / "fixtures" / "target_app.py"), str(portfile)],
        env=_env("0.01"),
        stdout=subprocess.DEVNULL,
    )
    while not portfile.exists() or not portfile.read_text():
        assert proc.poll() is None, "the test application did not start"
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{portfile.read_text()}/chat"


@pytest.mark.slow
def test_kill_and_resume_a_campaign_against_an_application(tmp_path: Path) -> None:
    app, url = _serve(tmp_path, "app")
    try:
        toml = tmp_path / "targets.toml"
        toml.write_text(CAMPAIGN.format(url=url, repeats=8, testset=HAND_WRITTEN))
        db = tmp_path / "killed.db"
        proc = _harness("run", str(toml), "--db", str(db), "--no-report")
        kills = 0
        for k in range(KILLS):
            while _closed(db) < 40 * (k + 1) and proc.poll() is None:
                time.sleep(0.01)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
            proc = _harness("resume", str(db), "--no-report")
        assert proc.wait(timeout=600) == 0
        base = tmp_path / "base.db"
        uninterrupted = _harness("run", str(toml), "--db", str(base), "--no-report")
        assert uninterrupted.wait(timeout=600) == 0
    finally:
        app.kill()
        app.wait()
    assert kills == KILLS
    killed_run, whole_run = transcripts(db), transcripts(base)
    assert killed_run == whole_run and len(killed_run) == 3 * (5 + 5) * 8
    failed = [t for turns, _ in killed_run.values() for t in turns if t[4] is not None]
    assert failed == []  # every conversation id was carried across the kills
    result = verify_log(db)
    assert result.differences == [] and result.open_cases == 0
