"""Kill test of the workers: three ``harness worker`` processes share a 2,000-call campaign
in PostgreSQL against a local vendor that counts calls; a random worker is killed with -9 at
30 random moments (and started again), and PostgreSQL itself is restarted (immediate: a
crash) once in the middle. Nothing committed is lost, no completed call is sent again, every
turn has one reply, and the transcripts and verdicts equal those of a single-process run."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fixtures.counting_vendor import CountingVendor, fetch_stats
from fixtures.log_snapshot import snapshot, transcripts

from harness.running.campaign import load_campaign
from harness.running.plan import Plan
from harness.running.runner import run_campaign
from harness.running.worker import start_campaign
from harness.store.open import open_reader
from tests.core.running.test_resume_kill import CAMPAIGN

TESTS = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("WORKER_KILL_TEST_KILLS", 30))
CASES = (350, 300) if KILLS >= 30 else (20, 10)
WORKERS = 3
LEASE_S = 2.0


def _worker(url: str, campaign: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from harness.cli import main; main()", "worker", url,
         "--campaign", campaign, "--lease", str(LEASE_S)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _finished(url: str) -> bool:
    with open_reader(url) as log:
        row = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'CampaignFinished'"
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.slow
def test_three_workers_killed_30_times_and_a_database_crash(
    tmp_path: Path, postgres_server: Any, pg_url: str
) -> None:
    started = time.monotonic()
    portfile = tmp_path / "vendor.port"
    vendor_proc = subprocess.Popen(
        [sys.executable, str(TESTS / "fixtures" / "counting_vendor.py"), str(portfile), "5", "20"],
        stdout=subprocess.DEVNULL,
    )
    workers: list[subprocess.Popen[bytes]] = []
    try:
        while not portfile.exists():
            assert vendor_proc.poll() is None
            time.sleep(0.05)
        url = f"http://127.0.0.1:{portfile.read_text()}/v1"
        toml = tmp_path / "kill.toml"
        toml.write_text(CAMPAIGN.format(url=url, n1=CASES[0], n8=CASES[1]))
        config = load_campaign(toml)
        campaign = asyncio.run(start_campaign(config, pg_url, Plan(config)))
        rng = random.Random(20261)
        calls = 2 * (2 * CASES[0] + CASES[1])
        step = max(4, min(20, (calls - 300) // (2 * KILLS)))
        snapshots: list[tuple[set[tuple[str, int, str]], dict[str, int]]] = []
        in_flight_keys: Counter[str] = Counter()
        kills = restarts = db_crashes = 0
        workers = [_worker(pg_url, campaign) for _ in range(WORKERS)]
        for k in range(KILLS):
            target = fetch_stats(url)["total"] + rng.randint(3, step)
            while fetch_stats(url)["total"] < target and any(w.poll() is None for w in workers):
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.01))  # a random moment: mid-call or mid-append
            live = [i for i, w in enumerate(workers) if w.poll() is None]
            if not live:  # all finished their part or died: one more makes progress
                workers[0] = _worker(pg_url, campaign)
                restarts += 1
                live = [0]
                time.sleep(rng.uniform(1.0, 3.0))
            victim = rng.choice(live)
            os.kill(workers[victim].pid, signal.SIGKILL)
            kills += 1
            workers[victim].wait()
            if k == KILLS // 2:
                postgres_server.restart("immediate")  # every worker loses its connection
                db_crashes += 1
            time.sleep(0.05)  # requests already on the wire reach the vendor's counter
            rows, replied, in_flight = snapshot(pg_url)
            in_flight_keys.update(in_flight)
            counts = fetch_stats(url)["counts"]
            snapshots.append((rows, {key: counts.get(key, 0) for key in replied}))
            for i, w in enumerate(workers):  # the killed one, and any the crash ended
                if w.poll() is not None:
                    workers[i] = _worker(pg_url, campaign)
                    restarts += 1
        deadline = time.monotonic() + 600
        while not _finished(pg_url) and time.monotonic() < deadline:
            for i, w in enumerate(workers):
                if w.poll() is not None and not _finished(pg_url):
                    workers[i] = _worker(pg_url, campaign)
                    restarts += 1
            time.sleep(0.5)
        for w in workers:
            w.wait(timeout=120)
        final_rows, _, still_open = snapshot(pg_url)
        stats = fetch_stats(url)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
        vendor_proc.kill()
        vendor_proc.wait()
    counts: dict[str, int] = stats["counts"]
    lost = sum(len(rows - final_rows) for rows, _ in snapshots)
    resent_completed = sum(
        1 for _, at_kill in snapshots for key, n in at_kill.items() if counts[key] != n
    ) + sum(1 for key, n in counts.items() if n > 1 + in_flight_keys[key])
    with open_reader(pg_url) as log:
        closed = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'CaseClosed'"
        ).fetchone()[0]
        finished = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'CampaignFinished'"
        ).fetchone()[0]
        replies_per_turn = log.connection.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'ReplyReceived'"
            " GROUP BY case_id, turn) t"
        ).fetchone()[0]
        integrity = log.integrity_ok()
        takeovers = 0
        for (n,) in log.connection.execute("SELECT coalesce(sum(takeovers), 0) FROM leases"):
            takeovers = int(n)

    baseline_vendor = CountingVendor((0.0, 1.0)).start()
    try:
        base_db = tmp_path / "base.db"
        spec = config.models[0]
        options = {**spec.options, "base_url": baseline_vendor.url}
        base = config.model_copy(update={"models": [spec.model_copy(update={"options": options})]})
        asyncio.run(run_campaign(base, base_db))
    finally:
        baseline_vendor.stop()
    workers_run, single = transcripts(pg_url), transcripts(str(base_db))
    differing = sorted(c for c in single if workers_run.get(c) != single[c])
    same = not differing and workers_run.keys() == single.keys()
    print(
        f"worker kill test: {WORKERS} workers, {kills} kill -9 + {db_crashes} PostgreSQL crash, "
        f"{restarts} worker starts, {takeovers} lease takeovers, "
        f"{time.monotonic() - started:.0f}s; {stats['total']} vendor calls for {len(counts)} "
        f"requests; lost committed events {lost}; re-sent completed calls {resent_completed}; "
        f"cases closed {closed}; CampaignFinished {finished}; transcripts and verdicts equal "
        f"to a single-process run: {same}"
    )
    assert kills == KILLS and db_crashes == 1
    assert lost == 0
    assert resent_completed == 0 and replies_per_turn == 1
    assert not still_open and closed == calls // 2 and len(counts) == calls
    assert finished == 1 and integrity
    assert same, differing[:3]
