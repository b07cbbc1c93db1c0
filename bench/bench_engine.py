"""Engine benchmark on the simulated model: throughput against the in-flight limit, raw
throughput and commit rate at zero latency, and peak memory against the plan size.

    python bench/bench_engine.py            # full run, about two minutes
    python bench/bench_engine.py --quick    # smoke run, about half a minute

Each measurement runs in its own subprocess so that peak RSS (ru_maxrss) belongs to it alone.
The limit of a latency-bound run is in_flight / latency turns per second: every case worker
holds one call at a time, so no engine can do better.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LATENCY_TARGET = 0.95  # of in_flight / latency
ZERO_TARGET = 4_000  # turns/s at zero latency, on one core


def campaign(cases: int, in_flight: int, latency_s: float) -> dict[str, Any]:
    # MR1 and MR2 cases have two turns each; half the plan is each.
    half = max(1, cases // 2)
    return {
        "name": "bench",
        "seed": 1,
        "models": [
            {
                "name": "sim:bench",
                "max_in_flight": in_flight,
                "options": {"latency_s": latency_s},
            }
        ],
        "relations": [
            {"name": "metaquerier.mr1", "cases": half},
            {"name": "metaquerier.mr2", "cases": cases - half if cases > 1 else 1},
        ],
    }


class RssSampler:
    """Samples this process's RSS every 50 ms (ru_maxrss also counts start-up imports)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        proc = psutil.Process()
        while not self._stop.is_set():
            self.peak = max(self.peak, proc.memory_info().rss)
            self._stop.wait(0.05)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def _measure(cases: int, in_flight: int, latency_s: float, seconds: float) -> dict[str, Any]:
    from harness.plugins.assembly import build_model
    from harness.running.campaign import parse_campaign
    from harness.running.engine import Engine
    from harness.store.writer import EventWriter, PendingEvent
    from harness.vocabulary.events import CampaignStarted

    config = parse_campaign(campaign(cases, in_flight, latency_s), source="bench")
    model = build_model(config.models[0])
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        async with await EventWriter.open(db) as store:
            started = CampaignStarted(
                name="bench", config={}, config_hash="", code_version="", harness_version=""
            )
            await store.append([PendingEvent("bench", "", 1, started)])
            engine = Engine(store, config, "bench", {model.name: model}, [])
            loop = asyncio.get_running_loop()
            loop.call_later(seconds, engine.request_stop, "benchmark time is up")
            commits0, events0 = store.commits, store.events_written
            t0, cpu0 = time.perf_counter(), time.process_time()
            summary = await engine.run()
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            commits, events = store.commits - commits0, store.events_written - events0
        db_mb = db.stat().st_size / 2**20
    return {
        "cases": cases,
        "in_flight": in_flight,
        "latency_s": latency_s,
        "elapsed_s": elapsed,
        "cpu_s": cpu,
        "turns": summary.calls,
        "cases_closed": summary.cases_closed,
        "status": summary.status,
        "commits": commits,
        "events": events,
        "db_mb": db_mb,
    }


def child(args: argparse.Namespace) -> None:
    """One measurement; prints a JSON line."""
    if hasattr(os, "sched_setaffinity"):
        # One core: the event loop, the SQLite thread and the sampler share it, as they
        # would share the one core a campaign gets on a busy machine.
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with RssSampler() as sampler:
        result = asyncio.run(_measure(args.cases, args.in_flight, args.latency, args.seconds))
    result["peak_rss_mb"] = sampler.peak / 2**20
    result["ru_maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def run_child(cases: int, in_flight: int, latency: float, seconds: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        f"--cases={cases}",
        f"--in-flight={in_flight}",
        f"--latency={latency}",
        f"--seconds={seconds}",
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--in-flight", type=int, default=256, help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    quick = args.quick
    latency_run_s = 5.0 if quick else 25.0
    zero_run_s = 3.0 if quick else 10.0
    memory_run_s = 5.0 if quick else 40.0
    print(
        f"# engine benchmark, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
        + (" (quick)" if quick else "")
    )
    print(
        f"# python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cpus, each measurement pinned to one; {uptime()}"
    )
    fails = []

    # 1. Latency-bound: 256 calls in flight at 200 ms each -> limit 1,280 turns/s.
    r = run_child(10**6, 256, 0.2, latency_run_s)
    limit = r["in_flight"] / r["latency_s"]
    rate = r["turns"] / r["elapsed_s"]
    ok = rate >= LATENCY_TARGET * limit
    fails += [] if ok else ["latency-bound throughput"]
    print(
        f"latency-bound: in_flight={r['in_flight']} latency={r['latency_s'] * 1000:.0f}ms "
        f"limit={limit:,.0f} turns/s measured={rate:,.0f} turns/s "
        f"ratio={rate / limit:.1%} (target >= {LATENCY_TARGET:.0%}) [{'ok' if ok else 'MISSED'}] "
        f"over {r['elapsed_s']:.1f}s, {r['turns']:,} turns"
    )

    # 2. Zero latency: what the engine and the store can do on their own.
    r = run_child(10**6, 256, 0.0, zero_run_s)
    rate = r["turns"] / r["elapsed_s"]
    ok = rate >= ZERO_TARGET
    fails += [] if ok else ["zero-latency throughput"]
    print(
        f"zero latency: in_flight={r['in_flight']} measured={rate:,.0f} turns/s "
        f"ratio={rate / ZERO_TARGET:.2f}x of the {ZERO_TARGET:,} turns/s target "
        f"[{'ok' if ok else 'MISSED'}]; CPU {r['cpu_s'] * 1000 / max(r['turns'], 1):.3f} ms/turn; "
        f"events committed {r['events'] / r['elapsed_s']:,.0f}/s in "
        f"{r['commits'] / r['elapsed_s']:,.0f} transactions/s "
        f"({r['events'] / max(r['commits'], 1):.1f} events per commit), "
        f"{r['cases_closed'] / r['elapsed_s']:,.0f} cases/s"
    )

    # 3. Memory against the plan size: a 1,000-case plan run to the end, a 1,000,000-case
    # plan run for a bounded time (same in-flight count, zero latency so it works hard).
    small = run_child(1_000, 256, 0.0, memory_run_s)
    big = run_child(1_000_000, 256, 0.0, memory_run_s)
    ok = big["peak_rss_mb"] < 300
    fails += [] if ok else ["peak RSS"]
    print(
        f"memory: 1,000-case plan peak RSS {small['peak_rss_mb']:.0f} MB "
        f"({small['cases_closed']:,} cases closed in {small['elapsed_s']:.1f}s, "
        f"{small['status']}); 1,000,000-case plan peak RSS {big['peak_rss_mb']:.0f} MB "
        f"({big['cases_closed']:,} cases closed in {big['elapsed_s']:.1f}s, {big['status']}); "
        f"ratio {big['peak_rss_mb'] / small['peak_rss_mb']:.2f}x; "
        f"limit 300 MB [{'ok' if ok else 'MISSED'}]"
    )
    print(f"# at the end: {uptime()} (other work on the machine skews)")
    print("result: all targets met" if not fails else f"result: MISSED {', '.join(fails)}")


if __name__ == "__main__":
    main()
