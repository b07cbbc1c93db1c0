"""`CallDeadlines.run` behaves as ``async with asyncio.timeout(t): await call`` for calls
that share one duration: the same results, the same exceptions, the same cancel counts."""

from __future__ import annotations

import asyncio

import pytest

from harness.running.call_deadlines import CallDeadlines


async def _sleep_then(value: str, delay: float) -> str:
    await asyncio.sleep(delay)
    return value


async def _with_timeout(t: float, delay: float) -> str:
    async with asyncio.timeout(t):
        return await _sleep_then("done", delay)


async def test_results_and_timeouts_match_asyncio_timeout() -> None:
    deadlines = CallDeadlines(0.05)
    delays = [0.0, 0.01, 0.2, 0.02, 0.3, 0.0, 0.1]

    async def outcome(coro: object) -> str:
        try:
            return await coro  # type: ignore[misc]
        except TimeoutError:
            return "timeout"

    ours = await asyncio.gather(*(outcome(deadlines.run(_sleep_then("done", d))) for d in delays))
    theirs = await asyncio.gather(*(outcome(_with_timeout(0.05, d)) for d in delays))
    assert ours == theirs == ["done", "done", "timeout", "done", "timeout", "done", "timeout"]


async def test_a_timeout_leaves_the_task_uncancelled() -> None:
    deadlines = CallDeadlines(0.01)
    task = asyncio.current_task()
    assert task is not None
    with pytest.raises(TimeoutError):
        await deadlines.run(asyncio.sleep(1))
    assert task.cancelling() == 0
    assert await deadlines.run(_sleep_then("after", 0)) == "after"  # the timer re-arms


async def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    deadlines = CallDeadlines(10)
    call = asyncio.ensure_future(deadlines.run(asyncio.sleep(5)))
    await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_an_ended_call_is_never_cancelled_by_its_old_deadline() -> None:
    deadlines = CallDeadlines(0.03)
    assert await deadlines.run(_sleep_then("quick", 0)) == "quick"
    # The timer armed for the first call fires while this one is under way: only this
    # call's own deadline may end it.
    assert await deadlines.run(_sleep_then("second", 0.02)) == "second"
    await asyncio.sleep(0.05)  # the first deadline passed with nothing to cancel
    assert await deadlines.run(_sleep_then("third", 0.01)) == "third"


def test_a_new_event_loop_starts_afresh() -> None:
    deadlines = CallDeadlines(0.02)
    assert asyncio.run(deadlines.run(_sleep_then("one", 0))) == "one"  # timer left armed
    with pytest.raises(TimeoutError):
        asyncio.run(deadlines.run(asyncio.sleep(1)))
