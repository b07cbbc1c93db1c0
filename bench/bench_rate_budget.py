"""Benchmark: with a backlog, request and token budgets are used (>= 95 %; >= 85 % with calls of
up to a quarter of the budget) and never exceeded in any window.

Drives `harness.models.providers.VendorGate` exactly as the engine does (acquire with a token
estimate, a simulated call, release with the reply's real usage) from a backlog of
workers. Budgets are per-minute figures with the window scaled down to a few seconds so
the run takes well under a minute; the limiter's arithmetic does not depend on the scale.

Three scenarios: small calls, where requests-per-window binds; calls below the bucket's
burst, where tokens-per-window binds; and calls far above the burst, where it binds too.
For each it prints how much of the budget was used over the run and the largest amount
admitted in any sliding window (which must not exceed the budget).

    .venv/bin/python bench/bench_rate_budget.py [--seconds 12] [--window 3]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from dataclasses import dataclass

from harness.models.providers import VendorGate, max_in_window
from harness.vocabulary.model import Reply, Usage


@dataclass(frozen=True)
class Scenario:
    name: str
    rpm: float  # per window
    tpm: float  # per window
    estimate: tuple[int, int]  # token estimate per call, uniform range
    used_share: tuple[float, float]  # actual tokens as a share of the estimate
    binds: str  # "rpm" or "tpm": the budget a backlog must use at >= ``floor``
    floor: float = 0.95


@dataclass(frozen=True)
class Result:
    scenario: Scenario
    elapsed: float
    calls: int
    tokens: int
    max_window_calls: float
    max_window_tokens: float

    def usage(self, window: float) -> tuple[float, float]:
        windows = self.elapsed / window
        budget = self.scenario
        return self.calls / (budget.rpm * windows), self.tokens / (budget.tpm * windows)


async def run(scenario: Scenario, seconds: float, window: float, workers: int = 64) -> Result:
    gate = VendorGate(
        "bench", max_in_flight=workers, rpm=scenario.rpm, tpm=scenario.tpm, window_s=window
    )
    calls: list[tuple[float, float]] = []
    tokens: list[tuple[float, float]] = []
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
            calls.append((admitted, 1.0))
            tokens.append((admitted, float(used)))
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
        int(sum(n for _, n in tokens)),
        max_in_window(calls, window),
        max_in_window(tokens, window),
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
        # Calls of up to a quarter of the budget, far above the burst (1,200): the calls
        # the old bucket booked as debt, letting a window take budget - burst + one call.
        # Whole calls must fit in what the window has left, so a little less is usable.
        Scenario(
            "large calls",
            rpm=100_000,
            tpm=60_000,
            estimate=(4_000, 15_000),
            used_share=(0.7, 1.0),
            binds="tpm",
            floor=0.85,
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
            f"{tpm_used:>9.1%} {result.max_window_calls:>6g}/{scenario.rpm:<7g} "
            f"{result.max_window_tokens:>6g}/{scenario.tpm:<g}"
        )
        binding = rpm_used if scenario.binds == "rpm" else tpm_used
        ok &= binding >= scenario.floor
        ok &= result.max_window_calls <= scenario.rpm and result.max_window_tokens <= scenario.tpm
    print("PASS" if ok else "FAIL: a budget was under-used or exceeded in some window")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
