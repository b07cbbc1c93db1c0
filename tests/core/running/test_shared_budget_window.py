"""The shared rate budget's bound, deterministically: no window of ``window_s`` on the
database's clock admits more than the budget, whatever the size of the calls and however
their estimates are corrected afterwards (tests/core/running/test_worker_budgets.py measures the
same with four worker processes)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
import pytest

from harness.models.providers import max_in_window
from harness.running.postgres_budgets import SharedRateBudget, prepare
from harness.store.postgres_url import PostgresUrl

BUDGET = 25_000
WINDOW = 2.5


async def _budget(url: str, model: str) -> tuple[psycopg.AsyncConnection[Any], SharedRateBudget]:
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await prepare(conn)
    budget = SharedRateBudget(conn, PostgresUrl.parse(url), "camp", model, "tokens", BUDGET, WINDOW)
    await budget.create()
    return conn, budget


@pytest.mark.slow
async def test_calls_larger_than_the_burst_never_overfill_a_window(pg_url: str) -> None:
    # 8,000-token calls against a 500-token burst: the leaky bucket books each as debt
    # and admits the next when the debt has leaked (every 0.82 s), four in 2.45 s =
    # 32,000 tokens in one 2.5 s window. The window may hold three (24,000).
    conn, budget = await _budget(pg_url, "big")
    stamps: list[tuple[float, float]] = []
    stop = time.monotonic() + 3 * WINDOW
    while time.monotonic() < stop:
        await budget.acquire(8_000)
        at = budget.admitted_at.get()
        assert at is not None
        stamps.append((at, 8_000.0))
    await budget.drain()
    await conn.close()
    print(f"8,000-token calls: {len(stamps)} admitted, max {max_in_window(stamps, WINDOW)}")
    assert len(stamps) >= 6  # the budget was used, not just refused
    assert max_in_window(stamps, WINDOW) <= BUDGET


@pytest.mark.slow
async def test_given_back_estimates_are_not_spent_twice_in_a_window(pg_url: str) -> None:
    # Each call is admitted on an estimate of 2,000 and gives back 1,200 when it ends
    # (it used 800), from 8 tasks at once: what is given back may be admitted again, but
    # what the calls used never exceeds the budget in any window, and most of it is used.
    conn, budget = await _budget(pg_url, "refunds")
    stamps: list[tuple[float, float]] = []
    stop = time.monotonic() + 3 * WINDOW

    async def caller() -> None:
        while time.monotonic() < stop:
            await budget.acquire(2_000)
            at = budget.admitted_at.get()
            assert at is not None
            stamps.append((at, 800.0))
            await asyncio.sleep(0.01)
            budget.adjust(800 - 2_000)

    await asyncio.gather(*(caller() for _ in range(8)))
    await budget.drain()
    await conn.close()
    span = max(t for t, _ in stamps) - min(t for t, _ in stamps)
    used = sum(n for _, n in stamps) / (BUDGET * span / WINDOW)
    print(f"given back: used {used:.1%}, max {max_in_window(stamps, WINDOW)} of {BUDGET}")
    assert max_in_window(stamps, WINDOW) <= BUDGET
    assert used >= 0.9
