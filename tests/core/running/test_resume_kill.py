"""Kill test: kill -9 a 2,000-call campaign against a local vendor that counts calls, at 50
random moments, resuming each time. Nothing committed is lost, no completed call is sent
again, re-sends never exceed the calls in flight at the kills, and the final transcripts
equal those of an uninterrupted run. Atomicity: kills during multi-event appends leave no
partial batch and an intact database."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fixtures.counting_vendor import CountingVendor, fetch_stats
from fixtures.log_snapshot import snapshot, transcripts

from harness.running.campaign import load_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.vocabulary.events import CampaignResumed

TESTS = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("KILL_TEST_KILLS", 50))
CASES = (350, 300) if KILLS >= 50 else (20, 10)  # 2,000 calls (a quick debug size otherwise)
CAMPAIGN = """
name = "kill-test"
seed = 3
[[models]]
name = "openai-compat:sim"
max_in_flight = 8
params = {{ temperature = 0.7 }}
options = {{ base_url = "{url}", timeout = 30 }}
[[relations]]
name = "metaquerier.mr1"
cases = {n1}
options = {{ control = false }}
[[relations]]
name = "metaquerier.mr2"
cases = {n1}
options = {{ control = false }}
[[relations]]
name = "metafair.mr8"
cases = {n8}
options = {{ control = false }}
"""
# The matched controls are off: every case then makes exactly two calls, which the
# accounting below (closed == calls // 2) relies on. A control is one more ask through the
# same engine, writer and resume path.


def _harness(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_kill_9_at_50_moments_and_resume(tmp_path: Path) -> None:
    started = time.monotonic()
    portfile = tmp_path / "vendor.port"
    vendor_proc = subprocess.Popen(
        [sys.executable, str(TESTS / "fixtures" / "counting_vendor.py"), str(portfile), "5", "20"],
        stdout=subprocess.DEVNULL,
    )
    try:
        while not portfile.exists():
            assert vendor_proc.poll() is None
            time.sleep(0.05)
        url = f"http://127.0.0.1:{portfile.read_text()}/v1"
        toml = tmp_path / "kill.toml"
        toml.write_text(CAMPAIGN.format(url=url, n1=CASES[0], n8=CASES[1]))
        db = tmp_path / "kill.db"
        rng = random.Random(20260)
        calls = 2 * (2 * CASES[0] + CASES[1])
        # Kill moments are counted in vendor calls since each (re)start, so all KILLS land
        # before the campaign can finish however fast this machine is.
        step = max(4, min(12, (calls - 200) // (3 * KILLS)))
        snapshots: list[tuple[set[tuple[str, int, str]], set[str], dict[str, int]]] = []
        in_flight_at_kills = kills = 0
        in_flight_keys: Counter[str] = Counter()
        at_start = 0
        proc = _harness("run", str(toml), "--db", str(db), "--no-report")
        for _ in range(KILLS):
            # Each process makes progress before its kill (else it would die during startup).
            target = at_start + rng.randint(3, step)
            while fetch_stats(url)["total"] < target and proc.poll() is None:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.01))  # a random moment: mid-call or mid-append
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
            time.sleep(0.05)  # let requests already on the wire reach the vendor's counter
            rows, replied, in_flight = snapshot(db)
            in_flight_at_kills += len(in_flight)
            in_flight_keys.update(in_flight)
            counts = fetch_stats(url)["counts"]
            snapshots.append((rows, replied, {k: counts.get(k, 0) for k in replied}))
            at_start = fetch_stats(url)["total"]
            proc = _harness("resume", str(db), "--no-report")
        assert proc.wait(timeout=300) == 0
        final_rows, _, still_open = snapshot(db)
        open_calls = len(still_open)
        stats = fetch_stats(url)
    finally:
        vendor_proc.kill()
        vendor_proc.wait()
    counts: dict[str, int] = stats["counts"]
    lost = sum(len(rows - final_rows) for rows, _, _ in snapshots)
    # A request may reach the vendor once, plus once per kill that caught it in flight.
    resent_completed = sum(
        1 for _, _, at_kill in snapshots for k, n in at_kill.items() if counts[k] != n
    ) + sum(1 for k, n in counts.items() if n > 1 + in_flight_keys[k])
    resends = sum(n - 1 for n in counts.values())
    with EventReader(db) as log:
        resumed = [e.event for e in log.events(kinds=("CampaignResumed",))]
        closed = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'CaseClosed'"
        ).fetchone()[0]
        integrity = log.integrity_ok()
        replies_per_turn = log.connection.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'ReplyReceived' "
            "GROUP BY case_id, turn)"
        ).fetchone()[0]
        partial = log.connection.execute(
            "SELECT count(*) FROM events v WHERE v.kind = 'VerdictReached' AND NOT EXISTS "
            "(SELECT 1 FROM events c WHERE c.kind = 'CaseClosed' AND c.batch = v.batch "
            "AND c.case_id = v.case_id)"
        ).fetchone()[0]
    logged_resent = sum(e.in_flight_resent for e in resumed if isinstance(e, CampaignResumed))

    # The same campaign without interruption, against a fresh vendor.
    baseline_vendor = CountingVendor((0.0, 1.0)).start()
    try:
        base_db = tmp_path / "base.db"
        config = load_campaign(toml).model_copy(deep=True)
        config = config.model_copy(
            update={
                "models": [
                    config.models[0].model_copy(
                        update={
                            "options": {**config.models[0].options, "base_url": baseline_vendor.url}
                        }
                    )
                ]
            }
        )
        asyncio.run(run_campaign(config, base_db))
    finally:
        baseline_vendor.stop()
    killed_run, uninterrupted = transcripts(db), transcripts(base_db)
    differing = sorted(c for c in uninterrupted if killed_run.get(c) != uninterrupted[c])
    same = not differing and killed_run.keys() == uninterrupted.keys()
    for case_id in differing[:3]:
        print(
            f"differs: {case_id}\n  killed: {killed_run.get(case_id)}"
            f"\n  base:   {uninterrupted[case_id]}"
        )
    print(
        f"kill test: {kills} kill -9 in {time.monotonic() - started:.0f}s; "
        f"{stats['total']} vendor calls for {len(counts)} distinct requests; "
        f"lost committed events {lost}; re-sent completed calls {resent_completed}; "
        f"re-sends {resends} <= calls in flight at kills {in_flight_at_kills} "
        f"(resume logs say {logged_resent}); cases closed {closed}; partial batches {partial}; "
        f"integrity ok {integrity}; transcripts equal to the uninterrupted run: {same}"
    )
    assert kills == KILLS
    assert lost == 0
    assert resent_completed == 0 and replies_per_turn == 1
    assert resends <= in_flight_at_kills
    assert open_calls == 0 and closed == calls // 2 and len(counts) == calls
    assert partial == 0 and integrity
    assert same


WRITER = """
import asyncio, random, sys
from harness.vocabulary.events import Note
from harness.store.writer import EventWriter, PendingEvent

async def writer(store, case, rng):
    seq = await store.next_seq("atom", case)
    while True:
        size = rng.randint(2, 40)
        batch = [PendingEvent("atom", case, seq + k,
                              Note(topic="atom", data={"size": size, "k": k}))
                 for k in range(size)]
        await store.append(batch)
        seq += size

async def main():
    store = await EventWriter.open(sys.argv[1], max_group=8)
    rng = random.Random(int(sys.argv[2]))
    await asyncio.gather(*(writer(store, f"case{i}", rng) for i in range(6)))

asyncio.run(main())
"""


@pytest.mark.slow
def test_kills_during_multi_event_appends_leave_no_partial_batch(tmp_path: Path) -> None:
    db = tmp_path / "atom.db"
    rng = random.Random(7)
    rounds = 12
    for i in range(rounds):
        before = 0
        if db.exists():
            conn = connect(db)
            before = conn.execute("SELECT count(*) FROM events").fetchone()[0]
            conn.close()
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(i)])
        deadline = time.monotonic() + 30
        while True:  # wait for this round's first commits, then kill at a random moment
            time.sleep(0.05)
            try:
                conn = connect(f"file:{db}?mode=ro", uri=True)
                now = conn.execute("SELECT count(*) FROM events").fetchone()[0]
                conn.close()
            except sqlite3.Error:
                now = 0
            if now > before or time.monotonic() > deadline:
                break
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    conn = connect(db)
    integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    rows = conn.execute("SELECT batch, case_id, seq, payload FROM events ORDER BY gseq").fetchall()
    conn.close()
    batches: dict[int, list[dict[str, int]]] = {}
    for batch, _, _, payload in rows:
        batches.setdefault(batch, []).append(json.loads(payload)["data"])
    partial = [b for b, items in batches.items() if len(items) != items[0]["size"]]
    per_case: dict[str, list[int]] = {}
    for _, case_id, seq, _ in rows:
        per_case.setdefault(case_id, []).append(seq)
    gaps = [c for c, seqs in per_case.items() if sorted(seqs) != list(range(1, len(seqs) + 1))]
    print(
        f"atomicity: {rounds} kill -9 during appends, {len(rows)} events in {len(batches)} "
        f"batches, {len(partial)} partial batches, {len(gaps)} sequence gaps, "
        f"integrity_check {integrity}"
    )
    assert integrity == "ok"
    assert partial == [] and gaps == []
    assert len(batches) > rounds
