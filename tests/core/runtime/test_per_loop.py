"""Gates and budgets built once work in one event loop after another."""

from __future__ import annotations

import asyncio

from harness.models.gates import InFlightGate
from harness.models.providers._rate_budget import RateBudget
from harness.runtime.per_loop import PerLoop


def test_a_rate_budget_contended_in_one_loop_works_in_the_next() -> None:
    budget = RateBudget(2, 0.2)

    async def burst() -> None:
        # Four callers on a budget of two per window: three wait on the lock, so it binds
        # to this loop (asyncio raises "bound to a different event loop" in the next).
        await asyncio.gather(*(budget.acquire(1) for _ in range(4)))

    asyncio.run(burst())
    asyncio.run(burst())
    assert budget.booked() <= 2


def test_an_in_flight_gate_contended_in_one_loop_works_in_the_next() -> None:
    gate = InFlightGate(1)
    peak = 0
    running = 0

    async def call() -> None:
        nonlocal peak, running
        await gate.acquire(1)
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        running -= 1
        gate.release(None, None)

    async def many() -> None:
        await asyncio.gather(*(call() for _ in range(5)))

    asyncio.run(many())
    asyncio.run(many())
    assert peak == 1


def test_per_loop_keeps_one_value_per_loop() -> None:
    made: list[object] = []
    holder = PerLoop(lambda: made.append(object()) or made[-1])
    assert holder.current() is None  # no loop runs

    async def twice() -> tuple[object, object, object | None]:
        return holder.get(), holder.get(), holder.current()

    a, b, c = asyncio.run(twice())
    assert a is b is c
    d, _, _ = asyncio.run(twice())
    assert d is not a and len(made) == 2
