"""One process's rate budget (`harness.models.providers.RateBudget`) keeps its bound on a fake
clock: no window of ``window_s`` admits more than the budget, whatever the size of the
calls and however their estimates are corrected afterwards, and a backlog still uses most
of it (tests/core/running/test_shared_budget_window.py proves the same of the budget workers
share)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math

from fixtures.virtual_clock import VirtualClock
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.models.providers import RateBudget, max_in_window
from harness.models.providers._rate_budget import Admission, AdmissionWindow

BUDGET = 25_000
WINDOW = 60.0


async def test_calls_larger_than_the_burst_never_overfill_a_window() -> None:
    # 8,000-token calls against a 500-token burst: the old bucket booked each as debt and
    # admitted the next when the debt had leaked (every 19.6 s), four in 58.8 s = 32,000
    # tokens in one minute. A minute may hold three (24,000: 96 % of the budget).
    clock = VirtualClock()
    budget = RateBudget(BUDGET, WINDOW, clock=clock, sleep=clock.sleep)
    stamps: list[tuple[float, float]] = []

    async def backlog() -> None:
        while clock.now < 20 * WINDOW:
            await budget.acquire(8_000)
            stamps.append((clock.now, 8_000.0))

    await clock.run(backlog())
    admitted = [(t, n) for t, n in stamps if t < 20 * WINDOW]
    assert max_in_window(stamps, WINDOW) <= BUDGET
    assert sum(n for _, n in admitted) >= 0.9 * BUDGET * 20


async def test_a_backlog_of_small_calls_uses_most_of_the_budget() -> None:
    # Requests: one unit per call, never larger than the burst (2 of 50 per 0.5 s).
    clock = VirtualClock()
    budget = RateBudget(50, 0.5, clock=clock, sleep=clock.sleep)
    stamps: list[tuple[float, float]] = []

    async def backlog() -> None:
        while clock.now < 1.6:
            await budget.acquire(1)
            stamps.append((clock.now, 1.0))

    await clock.run(backlog())
    assert max_in_window(stamps, 0.5) <= 50
    assert sum(1 for t, _ in stamps if t < 1.6) >= 0.95 * 160  # the 2 % burst: ~97 %


async def test_given_back_estimates_are_not_spent_twice_in_a_window() -> None:
    # Eight callers at once, each admitted on an estimate of 2,000 that gives back 1,200
    # when its call ends (it used 800): what is given back may be admitted again, but what
    # the calls used never exceeds the budget in any window, and most of it is used.
    clock = VirtualClock()
    budget = RateBudget(BUDGET, WINDOW, clock=clock, sleep=clock.sleep)
    used: list[tuple[float, float]] = []

    async def caller() -> None:
        while clock.now < 10 * WINDOW:
            await budget.acquire(2_000)
            used.append((clock.now, 800.0))
            await clock.sleep(0.5)  # the vendor's latency
            budget.adjust(800 - 2_000)

    await clock.run(*(caller() for _ in range(8)))
    assert max_in_window(used, WINDOW) <= BUDGET
    in_span = sum(n for t, n in used if t < 10 * WINDOW)
    assert in_span >= 0.9 * BUDGET * 10


async def test_a_call_larger_than_the_budget_goes_alone_into_an_empty_window() -> None:
    clock = VirtualClock()
    budget = RateBudget(1_000, WINDOW, clock=clock, sleep=clock.sleep)
    stamps: list[tuple[float, float]] = []

    async def calls() -> None:
        for amount in (300, 5_000, 100):
            await budget.acquire(amount)
            stamps.append((clock.now, float(amount)))

    await asyncio.wait_for(clock.run(calls()), timeout=10)  # no deadlock
    (t1, _), (t2, _), (t3, _) = stamps
    assert t1 == 0 and t2 >= t1 + WINDOW  # it waited for the window to empty...
    assert t3 >= t2 + WINDOW  # ...and nothing shares a window with it


async def test_a_refund_frees_its_capacity_at_once() -> None:
    clock = VirtualClock()
    budget = RateBudget(100, 10.0, clock=clock, sleep=clock.sleep)  # burst 2
    await budget.acquire(2)
    budget.adjust(-2)  # the call used nothing: give the estimate back
    await budget.acquire(2)  # without sleeping on the clock
    assert clock.now == 0 and budget.booked() == 2


async def test_extra_use_delays_the_next_call() -> None:
    clock = VirtualClock()
    budget = RateBudget(100, 1.0, clock=clock, sleep=clock.sleep)  # burst 2, leaks 98/s
    at: list[float] = []

    async def calls() -> None:
        await budget.acquire(1)
        budget.adjust(+20)  # the reply used 20 more than estimated
        await budget.acquire(1)
        at.append(clock.now)

    await clock.run(calls())
    assert at[0] >= 20 / 98 - 1e-9 and budget.booked() == 22


def test_the_log_holds_one_window_of_calls_not_the_campaign() -> None:
    window = AdmissionWindow(600, WINDOW)
    now, longest = 0.0, 0
    for _ in range(6_000):  # ten windows of a backlog of one-request calls
        while not isinstance(got := window.take(1, now), Admission):
            now += got
        longest = max(longest, len(window))
    assert now >= 9 * WINDOW and longest <= 600


# One call of a sequence: its estimate, the share of it the call used (None: it timed out
# and keeps its estimate booked), how long it ran, and the idle time before it.
CALL = st.tuples(
    st.integers(1, 40_000),
    st.one_of(st.none(), st.floats(0, 1)),
    st.floats(0, 90),
    st.floats(0, 30),
)


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(CALL, min_size=1, max_size=80), budget=st.sampled_from([1_000, 25_000]))
def test_no_window_admits_more_than_the_budget(
    calls: list[tuple[int, float | None, float, float]], budget: int
) -> None:
    window = AdmissionWindow(budget, WINDOW)
    now = 0.0
    due: list[tuple[float, int, Admission, float]] = []  # corrections of calls under way
    order = itertools.count()
    stamps: list[tuple[float, float]] = []

    def settle(until: float) -> None:
        while due and due[0][0] <= until:
            at, _, admission, delta = heapq.heappop(due)
            window.correct(admission, delta, at)

    for estimate, share, latency, idle in calls:
        now += idle
        while True:
            settle(now)
            got = window.take(estimate, now)
            if isinstance(got, Admission):
                break
            now = min(now + got, due[0][0]) if due else now + got  # a refund may come first
        used = estimate if share is None else math.floor(estimate * share)
        stamps.append((now, float(used)))
        if used != estimate:
            heapq.heappush(due, (now + latency, next(order), got, float(used - estimate)))
    # Every window holds at most the budget of what its calls used, except a window with
    # a call larger than the whole budget: admitted alone (the others in it used nothing).
    for start, _ in stamps:
        inside = [n for t, n in stamps if start <= t < start + WINDOW]
        assert sum(inside) <= budget or sum(inside) == max(inside), (start, inside)
