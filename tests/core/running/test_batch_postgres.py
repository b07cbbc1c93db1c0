"""Batch mode on the PostgreSQL store. In one process: ``harness run --batch`` on a
PostgreSQL log gives the same verdicts as a direct run with the same seeds, records its
batches as the same notes (naming the worker that owns them), replays with 0 differences
and pays each request once; killed with -9 and resumed, it loses nothing and pays nothing
twice. With workers: each batches the cases it holds; a killed worker's batches in flight
are followed by the workers that take its cases over, never sent again, each answer
recorded once."""

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


WORKERS_CAMPAIGN = (
    KILL_CAMPAIGN.replace("cases = 30", "cases = 40")
    .replace("batch_polls = 2", "batch_polls = 8")
    .replace("poll_s = 0.02", "poll_s = 0.1")
    .replace("poll_max_s = 0.05", "poll_max_s = 0.1")
)


def _submitted_by(db: str) -> dict[str, list[str]]:
    """The tags of the batches each owner recorded as created."""
    found: dict[str, list[str]] = {}
    for note in events_of(db, "Note"):
        if isinstance(note, Note) and note.topic == "batch.submitted":
            found.setdefault(note.data.get("owner", ""), []).append(note.data["tag"])
    return found


@pytest.mark.slow
def test_two_workers_take_over_a_killed_worker_s_batches(tmp_path: Path, pg_url: str) -> None:
    from harness.running.plan import Plan
    from harness.running.worker import start_campaign

    sim = tmp_path / "sim"
    toml = tmp_path / "workers.toml"
    toml.write_text(WORKERS_CAMPAIGN.format(mode="batch", sim=sim, corpus=CORPUS))
    config = load_campaign(toml)
    campaign = asyncio.run(start_campaign(config, pg_url, Plan(config)))
    lease = ["--lease", "3"]
    doomed = _harness("worker", pg_url, "--campaign", campaign, *lease)
    stop = time.monotonic() + 120
    while not _submitted_by(pg_url) and time.monotonic() < stop and doomed.poll() is None:
        time.sleep(0.05)
    (doomed_owner,) = _submitted_by(pg_url)
    workers = [_harness("worker", pg_url, "--campaign", campaign, *lease) for _ in range(2)]
    # Killed right after it records a batch it created (pending for 8 polls): in flight.
    before = len(_submitted_by(pg_url)[doomed_owner])
    while len(_submitted_by(pg_url).get(doomed_owner, [])) == before and doomed.poll() is None:
        time.sleep(0.01)
    assert doomed.poll() is None, "the worker finished before it could be killed"
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()
    with open_reader(pg_url) as log:
        killed_at = log.connection.execute("SELECT max(gseq) FROM events").fetchone()[0]
    assert [w.wait(timeout=300) for w in workers] == [0, 0]

    direct_toml = tmp_path / "direct.toml"
    direct_toml.write_text(WORKERS_CAMPAIGN.format(mode="direct", sim=sim, corpus=CORPUS))
    asyncio.run(run_campaign(load_campaign(direct_toml), tmp_path / "direct.db"))

    billed = billed_requests(sim)
    doomed_tags = set(_submitted_by(pg_url)[doomed_owner])
    with open_reader(pg_url) as log:
        per_turn = log.connection.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'ReplyReceived' "
            "GROUP BY case_id, turn) AS t"
        ).fetchone()[0]
        replies = [
            (e.gseq, e.event)
            for e in log.events(kinds=("ReplyReceived",))
            if isinstance(e.event, ReplyReceived)
        ]
    taken_over = sum(1 for gseq, r in replies if gseq > killed_at and r.batch in doomed_tags)
    owners = set(_submitted_by(pg_url))
    verified = verify_log(pg_url)
    together, direct = transcripts(pg_url), transcripts(tmp_path / "direct.db")
    print(
        f"batch workers: {len(owners)} owners; {sum(billed.values())} requests billed, "
        f"{sum(n - 1 for n in billed.values())} paid twice, {len(replies)} replies; "
        f"{taken_over} answers of the killed worker's batches recorded after the kill; "
        f"equal to direct: {together == direct}; replay differences {len(verified.differences)}"
    )
    assert len(owners) == 3  # the killed worker and both others created batches
    assert max(billed.values()) == 1 and sum(billed.values()) == len(replies)
    assert per_turn == 1
    assert taken_over > 0  # its batch in flight was followed by those who took its cases
    assert together.keys() == direct.keys() and len(direct) == 48
    assert together == direct
    assert not verified.differences


async def test_batch_gates_of_two_workers_share_one_ceiling(pg_url: str) -> None:
    """A priced batch model's gate, wrapped as a worker wraps it, reserves each request's
    worst case at the batch rate against the campaign's one ceiling: two workers admit
    requests together only while the sum fits, and settle at the batch client's cost."""
    from harness.running.batch_waves import BatchGate
    from harness.running.postgres_spend import SharedSpend, SharedSpendGate
    from harness.vocabulary.errors import BudgetExceededError
    from harness.vocabulary.model import Reply

    class BatchPrice:
        def worst_case(self, tokens: int) -> float:
            return tokens * 0.001

        def cost(self, usage: object) -> float:
            return 0.0

    spends = [
        await SharedSpend.open(pg_url, "camp", f"w{i}", ceiling_usd=1.0, spent_in_log=0.0)
        for i in range(2)
    ]
    gates = [SharedSpendGate(BatchGate("openai:m", None, BatchPrice()), s) for s in spends]
    try:
        admitted = 0
        for i in range(10):  # 0.3 worst case each, alternating workers: 3 fit under $1
            try:
                await gates[i % 2].acquire(300)
                admitted += 1
            except BudgetExceededError:
                break
        assert admitted == 3
        gates[0].release(Reply(text="x", cost_usd=0.1), None)  # settles at the batch cost
        for spend in spends:
            await asyncio.gather(*spend._pending)
        await gates[1].acquire(300)  # 0.1 + 0.3 + 0.3 + 0.3 fits again
        assert abs(await spends[0].spent() - 0.1) < 1e-9
    finally:
        for spend in spends:
            await spend.close()
