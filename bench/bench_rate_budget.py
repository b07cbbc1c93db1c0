"""Benchmark: with a backlog, request and token budgets are used at >= 95 % and never exceeded.

Drives `harness.providers.VendorGate` exactly as the engine does (acquire with a token
estimate, a simulated call, release with the reply's real usage) from a backlog of
workers. Budgets are per-minute figures with the window scaled down to a few seconds so
the run takes well under a minute; the limiter's arithmetic does not depend on the scale.

Two scenarios: small calls, where requests-per-window binds, and large calls, where
tokens-per-window binds. For each it prints how much of the budget was used over the run
and the largest amount admitted in any sliding window (which must not exceed the budget).

    .venv/bin/python bench/bench_rate_budget.py [--seconds 12] [--window 3]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from dataclasses import dataclass

from harness.model import Reply, Usage
from harness.providers import VendorGate


@dataclass(frozen=True)
class Scenario:
    name: str
    rpm: float  # per window
    tpm: float  # per window
    estimate: tuple[int, int]  # token estimate per call, uniform range
    used_share: tuple[float, float]  # actual tokens as a share of the estimate
    binds: str  # "rpm" or "tpm": the budget a backlog must use at >= 95 %


@dataclass(frozen=True)
class Result:
    scenario: Scenario
    elapsed: float
    calls: int
    tokens: int
    max_window_calls: int
    max_window_tokens: int

    def usage(self, window: float) -> tuple[float, float]:
        windows = self.elapsed / window
        budget = self.scenario
        return self.calls / (budget.rpm * windows), self.tokens / (budget.tpm * windows)


def max_in_window(stamps: list[tuple[float, int]], window: float) -> int:
    """Largest sum admitted in any half-open window [t, t + window), two pointers."""
    best = total = 0
    j = 0
    for i in range(len(stamps)):
        while j < len(stamps) and stamps[j][0] < stamps[i][0] + window:
            total += stamps[j][1]
            j += 1
        best = max(best, total)
        total -= stamps[i][1]
    return best


async def run(scenario: Scenario, seconds: float, window: float, workers: int = 64) -> Result:
    gate = VendorGate(
        "bench", max_in_flight=workers, rpm=scenario.rpm, tpm=scenario.tpm, window_s=window
    )
    calls: list[tuple[float, int]] = []
    tokens: list[tuple[float, int]] = []
    stop_at = time.monotonic() + seconds

    async def worker(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop_at:
            estimate = rng.randint(*scenario.estimate)
            used = max(1, int(estimate * rng.uniform(*scenario.used_share)))
            await gate.acquire(estimate)
            admitted = time.monotonic()
            if admitted >= stop_at:
                gate.release(None, None)
                return
            calls.append((admitted, 1))
            tokens.append((admitted, used))
            await asyncio.sleep(rng.uniform(0.005, 0.015))  # the vendor's latency
            gate.release(
                Reply(text="", usage=Usage(input_tokens=used // 2, output_tokens=used - used // 2)),
                None,
            )

    started = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(workers)))
    elapsed = min(time.monotonic(), stop_at) - started
    return Result(
        scenario,
        elapsed,
        len(calls),
        sum(n for _, n in tokens),
        max_in_window(sorted(calls), window),
        max_in_window(sorted(tokens), window),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--window", type=float, default=3.0, help="seconds standing for a minute")
    args = parser.parse_args()
    scenarios = [
        Scenario(
            "requests bind",
            rpm=600,
            tpm=1_000_000,
            estimate=(50, 150),
            used_share=(0.6, 1.0),
            binds="rpm",
        ),
        Scenario(
            "tokens bind",
            rpm=100_000,
            tpm=60_000,
            estimate=(400, 1200),
            used_share=(0.7, 1.0),
            binds="tpm",
        ),
    ]
    print(
        f"window {args.window:g} s standing for 60 s; {args.seconds:g} s per scenario; "
        "64 workers with a backlog; call latency 5-15 ms"
    )
    print(
        f"{'scenario':<15} {'calls':>7} {'tokens':>9} {'rpm used':>9} {'tpm used':>9} "
        f"{'max calls/win':>14} {'max tok/win':>12}"
    )
    ok = True
    for scenario in scenarios:
        result = asyncio.run(run(scenario, args.seconds, args.window))
        rpm_used, tpm_used = result.usage(args.window)
        print(
            f"{scenario.name:<15} {result.calls:>7} {result.tokens:>9} {rpm_used:>9.1%} "
            f"{tpm_used:>9.1%} {result.max_window_calls:>6}/{scenario.rpm:<7g} "
            f"{result.max_window_tokens:>6}/{scenario.tpm:<g}"
        )
        binding = rpm_used if scenario.binds == "rpm" else tpm_used
        ok &= binding >= 0.95
        ok &= result.max_window_calls <= scenario.rpm and result.max_window_tokens <= scenario.tpm
    print("PASS" if ok else "FAIL: a budget was under-used (< 95 %) or exceeded in some window")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
