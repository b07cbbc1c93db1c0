"""Ctrl-C / SIGTERM: the campaign stops within 10 s even with slow calls under way, leaves
no call without an outcome, says how to resume, and resume then finishes it."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.models.sim import SimModel
from harness.running.runner import resume_campaign
from harness.store.fold import fold_case
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.verifying.replay import verify_log

CAMPAIGN = """
name = "stop-test"
seed = 1
[[models]]
name = "sim:planted"
max_in_flight = 6
options = {{ latency_s = {latency} }}
[[relations]]
name = "metaquerier.mr1"
cases = 12
[limits]
stop_grace_s = {grace}
"""


def _sent(db: Path) -> int:
    try:
        conn = connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(
                conn.execute("SELECT count(*) FROM events WHERE kind='AskSent'").fetchone()[0]
            )
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _start(tmp_path: Path, latency: float, grace: float) -> tuple[subprocess.Popen[str], Path]:
    toml = tmp_path / "stop.toml"
    toml.write_text(CAMPAIGN.format(latency=latency, grace=grace))
    db = tmp_path / "stop.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from harness.cli import main; main()",
            "run",
            str(toml),
            "--db",
            str(db),
            "--no-report",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while _sent(db) < 6:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the campaign never started its calls"
        time.sleep(0.05)
    return proc, db


@pytest.mark.parametrize(
    ("sig", "latency", "grace"),
    [
        (signal.SIGINT, 60.0, 1.0),  # calls outlast the grace period: cancelled and logged
        (signal.SIGTERM, 0.5, 8.0),  # calls finish within the grace period: their replies kept
    ],
)
def test_signal_stops_quickly_and_resume_finishes(
    tmp_path: Path, sig: signal.Signals, latency: float, grace: float
) -> None:
    proc, db = _start(tmp_path, latency, grace)
    sent_at_signal = _sent(db)
    signalled = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    took = time.monotonic() - signalled
    with EventReader(db) as log:
        campaign = log.latest_campaign()
        states = [fold_case(evs) for _, evs in log.cases(campaign)]
        cancelled = sum(
            1
            for e in log.events(campaign, kinds=("AskFailed",))
            if getattr(e.event, "error_kind", "") == "cancelled"
        )
    without_outcome = sum(1 for s in states for t in s.turns.values() if t.in_flight)
    print(
        f"{sig.name}: stopped in {took:.2f}s with {sent_at_signal} calls sent, "
        f"{cancelled} cancelled past the {grace:.0f}s grace, {without_outcome} without outcome"
    )
    assert took < 10
    assert proc.returncode == 130, err  # documented: interrupted, resumable (not 143)
    assert without_outcome == 0
    assert "resume with: harness resume" in err
    if latency > grace:
        assert cancelled >= 1
    else:
        assert cancelled == 0
    fast = SimModel("sim:planted")
    summary = asyncio.run(resume_campaign(db, overrides={"sim:planted": fast}))
    assert summary.status == "completed"
    result = verify_log(db)
    assert result.cases == 12 and result.open_cases == 0 and result.differences == []
