"""Requests or tokens per window for one process: `RateBudget`, the same two rules as the
budget workers share in PostgreSQL (`harness.running.postgres_budgets`), held in memory.

- **Pacing**: a leaky bucket with a small burst (2 % of the budget, at least 2) that leaks
  the rest over the window, so a backlog is spread over the minute instead of spent in one
  burst.
- **The bound**: a log of the admissions still inside the window, each corrected to what
  its call used when the call ends. A call is admitted only if the amounts booked in the
  last ``window_s`` plus its own fit in the budget. The leaky bucket alone did not bound a
  window: a call larger than the burst was admitted at an empty bucket and its excess
  booked as debt afterwards, so a window could take ``budget - burst + one call`` (32,000
  tokens of 8,000-token calls against 25,000 a minute). With the log, every call of any
  window was in the window checked when its last call was admitted, booked at least at
  what it used (its estimate, or its use once known).

A call larger than the whole budget is admitted alone, in an empty window (as the shared
budget does): refusing it would stop the campaign on an estimate (prompt characters / 4
plus ``max_tokens``) that the vendor may well accept, and waiting for it would wait
forever. Such a window holds that one call and nothing else.

The log holds only the admissions of the last window: its memory grows with the calls per
window, never with the campaign. `AdmissionWindow` is the arithmetic on an explicit clock
(tests drive it with a fake one); `RateBudget` waits on it in asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import deque
from collections.abc import Awaitable, Callable

from harness.runtime.per_loop import PerLoop

BURST_FRACTION = 0.02
# Shortest wait the arithmetic names: a wait rounded to nothing on a clock far from zero
# would ask again at the same instant forever.
MIN_WAIT_S = 1e-6


class Admission:
    """One admitted call: when, and how much it counts (its estimate, then its use)."""

    __slots__ = ("amount", "at", "in_window")

    def __init__(self, at: float, amount: float) -> None:
        self.at = at
        self.amount = amount
        self.in_window = True  # False once it left the log


class AdmissionWindow:
    """Pacing and the window bound on an explicit clock (seconds, any origin)."""

    def __init__(self, per_window: float, window_s: float) -> None:
        self.per_window = per_window
        self.window_s = window_s
        # At least two units, so a late timer wake-up is absorbed instead of accumulating.
        self.burst = max(1.0, min(max(2.0, per_window * BURST_FRACTION), per_window / 2))
        self.leak_per_s = max(per_window - self.burst, per_window / 2) / window_s
        self._level = 0.0
        self._level_at = 0.0
        self._log: deque[Admission] = deque()
        self.held = 0.0  # what the log's admissions count, in total

    def __len__(self) -> int:
        return len(self._log)

    def booked(self, now: float) -> float:
        """What the admissions of the window ending at ``now`` count."""
        self._expire(now)
        return self.held

    def level(self, now: float) -> float:
        """The pacing bucket's level at ``now``."""
        return max(0.0, self._level - self.leak_per_s * max(0.0, now - self._level_at))

    def _expire(self, now: float) -> None:
        # Half-open windows: an admission at ``a`` shares a window with ``now`` only while
        # ``now < a + window_s``, the same comparison `max_in_window` makes.
        log = self._log
        while log and log[0].at + self.window_s <= now:
            gone = log.popleft()
            gone.in_window = False
            self.held -= gone.amount
        if not log:
            self.held = 0.0  # no rounding left behind by the subtractions

    def take(self, amount: float, now: float) -> Admission | float:
        """Admit ``amount`` at ``now`` (its admission), or how many seconds to wait before
        asking again (a correction given back meanwhile may admit it sooner)."""
        self._expire(now)
        level = self.level(now)
        head = min(amount, self.burst)
        if level + head > self.burst:
            return max(MIN_WAIT_S, (level + head - self.burst) / self.leak_per_s)
        if self.held > 0 and self.held + amount > self.per_window:
            return max(MIN_WAIT_S, self._frees_at(self.held + amount - self.per_window) - now)
        admission = Admission(now, amount)
        self._log.append(admission)
        self.held += amount
        self._level = level + amount
        self._level_at = now
        return admission

    def _frees_at(self, need: float) -> float:
        """When the oldest admissions that add up to ``need`` have left the window (all of
        them, for a call larger than the budget: it goes in alone)."""
        freed = 0.0
        for admission in self._log:
            freed += admission.amount
            if freed >= need:
                return admission.at + self.window_s
        return self._log[-1].at + self.window_s

    def correct(self, admission: Admission | None, delta: float, now: float) -> None:
        """Book what a call really used: ``delta`` more (+) or an over-estimate given back
        (-). On the call's own admission while it is in the window (the window then counts
        the use at the time it was admitted); else a use above the estimate is a new
        admission now, and a refund only lowers the pacing level."""
        self._level = max(0.0, self.level(now) + delta)
        self._level_at = now
        if admission is not None and admission.in_window:
            corrected = max(0.0, admission.amount + delta)
            self.held += corrected - admission.amount
            admission.amount = corrected
        elif delta > 0:
            self._expire(now)
            self._log.append(Admission(now, delta))
            self.held += delta


class RateBudget:
    """At most ``per_window`` units admitted in any window of ``window_s`` seconds, paced."""

    def __init__(
        self,
        per_window: float,
        window_s: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``clock`` and ``sleep``: the time the budget is kept on (tests pass a fake one)."""
        self.window = AdmissionWindow(per_window, window_s)
        self.per_window = per_window
        self.window_s = window_s
        self.burst = self.window.burst
        self._clock = clock
        self._sleep = sleep
        self._turn = PerLoop(asyncio.Lock)  # one waiter asks at a time, in arrival order
        self._changed = PerLoop(asyncio.Event)  # a refund may admit the waiter sooner
        # The admission the calling task's ``adjust`` corrects (`VendorGate` acquires and
        # releases a call in one task).
        self._admission: contextvars.ContextVar[Admission | None] = contextvars.ContextVar(
            "rate-admission", default=None
        )

    def booked(self) -> float:
        """What the admissions of the current window count (estimates, corrected)."""
        return self.window.booked(self._clock())

    async def acquire(self, amount: float) -> None:
        """Wait until ``amount`` fits both the pacing and the window, then book it."""
        async with self._turn.get():
            while True:
                self._changed.get().clear()
                got = self.window.take(amount, self._clock())
                if isinstance(got, Admission):
                    self._admission.set(got)
                    return
                await self._wait(got)

    async def _wait(self, seconds: float) -> None:
        """``seconds``, or less if a call gives back part of its estimate meanwhile."""
        refund = asyncio.ensure_future(self._changed.get().wait())
        timer = asyncio.ensure_future(self._sleep(seconds))
        try:
            await asyncio.wait({refund, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (refund, timer):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def adjust(self, delta: float) -> None:
        """Correct the calling task's last admission by what its call really used (+), or
        give back an over-estimate (-); once per admission."""
        admission = self._admission.get()
        self._admission.set(None)
        if delta == 0:
            return
        self.window.correct(admission, delta, self._clock())
        changed = self._changed.current()
        if delta < 0 and changed is not None:
            changed.set()


def max_in_window(stamps: list[tuple[float, float]], window: float) -> float:
    """The most admitted in any half-open window ``[t, t + window)``: the figure a budget
    of ``window`` seconds promises to keep within (tests and bench/bench_rate_budget.py
    measure it on (time, amount) pairs; two pointers over the sorted stamps)."""
    stamps = sorted(stamps)
    best = total = 0.0
    j = 0
    for i in range(len(stamps)):
        while j < len(stamps) and stamps[j][0] < stamps[i][0] + window:
            total += stamps[j][1]
            j += 1
        best = max(best, total)
        total -= stamps[i][1]
    return best
