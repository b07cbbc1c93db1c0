"""Rate budgets shared by workers: four worker processes, each with its own vendor gate
(as `harness worker` builds them, its budgets moved into the database), drive a backlog
of calls against one model's requests- and tokens-per-window limits. Together they use
>= 90 % of the binding budget and never exceed either in any sliding window.

A window of a few seconds stands for the minute (the arithmetic does not depend on the
scale). Admission times are read on the database's clock, the one clock that admits the calls of
every worker (on any machine)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.models.providers import max_in_window

WORKERS = 4
SECONDS = 10.0
WINDOW = 2.5
SCENARIOS = {
    # name: (requests per window, tokens per window, estimate range, binding budget)
    "requests bind": (250, 1_000_000, (50, 150), "requests"),
    # Calls up to five times the bucket's burst (500 tokens): the ones booked as debt.
    "tokens bind": (100_000, 25_000, (400, 2500), "tokens"),
}

CHILD = """
import asyncio, json, os, random, sys, time
from harness.vocabulary.model import Reply, Usage
from harness.models.providers import VendorGate
from harness.running.postgres_budgets import SharedBudgets

url, rpm, tpm, lo, hi, seconds, window, seed, out = sys.argv[1:]
rpm, tpm, seconds, window = float(rpm), float(tpm), float(seconds), float(window)

async def main():
    gate = VendorGate("vendor:model", max_in_flight=16, rpm=rpm, tpm=tpm, window_s=window)
    shared = await SharedBudgets.share(url, "camp", {"vendor:model": gate})
    stamps = []
    open(out + ".ready", "w").close()
    while not os.path.exists(out.rsplit("/", 1)[0] + "/go"):  # every worker starts at once
        await asyncio.sleep(0.01)
    stop_at = time.monotonic() + seconds

    async def loop(i):
        rng = random.Random(int(seed) * 100 + i)
        while time.monotonic() < stop_at:
            estimate = rng.randint(int(lo), int(hi))
            used = max(1, int(estimate * rng.uniform(0.7, 1.0)))
            await gate.acquire(estimate)
            if time.monotonic() >= stop_at:
                gate.release(None, None)
                return
            # Admission times on the database's clock (the budgets' one clock).
            stamps.append((gate.requests.admitted_at.get(), gate.tokens.admitted_at.get(), used))
            await asyncio.sleep(rng.uniform(0.005, 0.015))
            gate.release(Reply(text="", usage=Usage(input_tokens=used // 2,
                                                    output_tokens=used - used // 2)), None)

    await asyncio.gather(*(loop(i) for i in range(16)))
    await shared.close()
    json.dump(stamps, open(out, "w"))

asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_four_workers_share_rate_budgets(scenario: str, pg_url: str, tmp_path: Path) -> None:
    rpm, tpm, (lo, hi), binds = SCENARIOS[scenario]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, pg_url, str(rpm), str(tpm), str(lo), str(hi),
             str(SECONDS), str(WINDOW), str(i), str(tmp_path / f"w{i}.json")]
        )
        for i in range(WORKERS)
    ]  # fmt: skip
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"w{i}.json.ready").exists() for i in range(WORKERS)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.05)
    (tmp_path / "go").touch()  # all four connected: start together
    for p in procs:
        assert p.wait(timeout=120) == 0
    stamps: list[Any] = []
    per_worker = []
    for i in range(WORKERS):
        mine = json.loads((tmp_path / f"w{i}.json").read_text())
        per_worker.append(len(mine))
        stamps.extend(mine)
    calls = sorted((t, 1) for t, _, _ in stamps)
    tokens = sorted((t, n) for _, t, n in stamps)
    # Each resource over the span of its own admissions: a call admitted on requests may
    # wait seconds for tokens, so the two spans differ when tokens bind.
    spans = {"requests": calls[-1][0] - calls[0][0], "tokens": tokens[-1][0] - tokens[0][0]}
    span = spans[binds]
    used = {
        "requests": len(calls) / (rpm * spans["requests"] / WINDOW),
        "tokens": sum(n for _, n in tokens) / (tpm * spans["tokens"] / WINDOW),
    }
    max_calls, max_tokens = max_in_window(calls, WINDOW), max_in_window(tokens, WINDOW)
    print(
        f"{scenario}: {WORKERS} worker processes {per_worker} calls; {binds} used "
        f"{used[binds]:.1%} over {span:.1f}s; max calls in a {WINDOW}s window "
        f"{max_calls} (limit {rpm}), max tokens {max_tokens} (limit {tpm})"
    )
    assert max_calls <= rpm and max_tokens <= tpm
    assert used[binds] >= 0.90
    assert all(n > 0 for n in per_worker)  # every worker got its share, none starved
