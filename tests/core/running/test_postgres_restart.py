"""A PostgreSQL restart in the middle of a campaign ends `harness run` with one error line
and the resume command, not driver paragraphs or tracebacks; resume then finishes it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.postgres_server import server_or_skip

CAMPAIGN = """
name = "restart"
seed = 1
[[models]]
name = "sim:planted"
max_in_flight = 8
options = { latency_s = 0.3 }
[[relations]]
name = "metaquerier.mr1"
cases = 120
"""


@pytest.fixture
def own_server() -> Iterator[Any]:
    """A server of this test's own: it is restarted under the campaign."""
    with server_or_skip() as server:
        yield server


def _wait_for_events(url: str, count: int, proc: subprocess.Popen[str]) -> None:
    """Until the campaign's log holds ``count`` events (the run has started its calls)."""
    import psycopg

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute("SELECT count(*) FROM events").fetchone()
            if row is not None and row[0] >= count:
                return
        except psycopg.Error:
            pass  # the schema is not created yet
        time.sleep(0.1)


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-c", "from harness.cli import main; main()", *args]


def test_a_restart_mid_run_says_one_line_and_how_to_resume(own_server: Any, tmp_path: Path) -> None:
    url = own_server.url(own_server.create_database())
    campaign = tmp_path / "c.toml"
    campaign.write_text(CAMPAIGN)
    proc = subprocess.Popen(
        _harness("run", str(campaign), "--db", url, "--no-report"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Mid-run by the log, not by the clock: on a loaded machine start-up alone can take
    # seconds, and at 0.1 s a call the run once ended before a fixed 4 s sleep did.
    _wait_for_events(url, 30, proc)
    assert proc.poll() is None, proc.communicate()
    own_server.restart()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert "Traceback" not in err and "never retrieved" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "lost mid-run" in errors[0], err
    assert f"resume with: harness resume {url}" in err
    resumed = subprocess.run(
        _harness("resume", url, "--no-report"), capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "completed: " in resumed.stderr
