"""Admission control for vendor models: adaptive calls in flight, request and token rates
(`RateBudget`, harness.models.providers._rate_budget), and a spending ceiling. `VendorGate`
implements `harness.models.gates.CallGate`.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from collections import deque
from dataclasses import dataclass

from harness.models.providers._pricing import Price
from harness.models.providers._rate_budget import RateBudget
from harness.vocabulary.errors import (
    BudgetExceededError,
    ConnectionFailedError,
    ModelError,
    ModelTimeoutError,
    OverloadedError,
    RateLimitedError,
)
from harness.vocabulary.model import Reply


class AdaptiveConcurrency:
    """Calls in flight, halved on 429/overload and grown by one per window of successes."""

    def __init__(
        self, maximum: int, minimum: int = 1, *, adaptive: bool = True, cooldown_s: float = 1.0
    ) -> None:
        self.maximum = maximum
        self.minimum = min(minimum, maximum)
        self.limit = maximum
        self.adaptive = adaptive
        self.cooldown_s = cooldown_s
        self.in_flight = 0
        self.shrinks = 0
        self.grows = 0
        self._successes = 0
        self._cooldown_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        while self.in_flight >= self.limit:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake()  # pass the wake-up on
                raise
        self.in_flight += 1

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def on_success(self) -> None:
        if not self.adaptive or self.limit >= self.maximum:
            return
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self.limit += 1
            self.grows += 1
            self._wake()

    def on_throttled(self) -> None:
        # One shrink per cooldown: the calls already in flight when the vendor started
        # refusing all come back 429 together, and that is one signal, not many.
        now = time.monotonic()
        if not self.adaptive or now < self._cooldown_until:
            return
        self._cooldown_until = now + self.cooldown_s
        self._successes = 0
        new = max(self.minimum, math.ceil(self.limit / 2))
        if new < self.limit:
            self.limit = new
            self.shrinks += 1

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1


class CostMeter:
    """Spend so far and reserved for calls in flight, against an optional ceiling (USD)."""

    def __init__(self, ceiling_usd: float | None = None, spent_usd: float = 0.0) -> None:
        self.ceiling_usd = ceiling_usd
        self.spent_usd = spent_usd
        self.reserved_usd = 0.0
        self.by_model: dict[str, float] = {}

    def reserve(self, model: str, amount: float) -> None:
        committed = self.spent_usd + self.reserved_usd + amount
        if self.ceiling_usd is not None and committed > self.ceiling_usd:
            raise BudgetExceededError(
                f"the next call to {model} could cost up to ${amount:.4f}; spent "
                f"${self.spent_usd:.4f} (+${self.reserved_usd:.4f} in flight) of the "
                f"${self.ceiling_usd:.2f} ceiling; raise it on resume: harness resume LOG "
                "--spend-ceiling USD"
            )
        self.reserved_usd += amount

    def settle(self, model: str, reserved: float, actual: float) -> None:
        self.reserved_usd = max(0.0, self.reserved_usd - reserved)
        self.spent_usd += actual
        self.by_model[model] = self.by_model.get(model, 0.0) + actual


@dataclass(frozen=True)
class GateSnapshot:
    """Counters for the progress display (one model)."""

    model: str
    in_flight: int
    concurrency_limit: int
    max_in_flight: int
    calls_started: int
    replies: int
    failures: int
    rate_limited: int
    retries: int  # failures that the retry policy may retry (429, 5xx, timeouts...)
    tokens_in: int
    tokens_out: int
    spent_usd: float
    calls_per_s: float  # completed calls per second over the last 10 s
    tokens_per_min: float  # tokens of completed calls over the last 60 s
    paused_s: float  # left of a Retry-After pause


@dataclass
class _Ticket:
    tokens: int
    reserved_usd: float


class VendorGate:
    """CallGate for one vendor model."""

    def __init__(
        self,
        model: str,
        *,
        max_in_flight: int,
        rpm: float | None = None,
        tpm: float | None = None,
        price: Price | None = None,
        meter: CostMeter | None = None,
        window_s: float = 60.0,
        adaptive: bool = True,
        min_in_flight: int = 1,
    ) -> None:
        self.model = model
        self.concurrency = AdaptiveConcurrency(max_in_flight, min_in_flight, adaptive=adaptive)
        self.requests = RateBudget(rpm, window_s) if rpm else None
        self.tokens = RateBudget(tpm, window_s) if tpm else None
        self.price = price
        self.meter = meter or CostMeter()
        self._paused_until = 0.0
        # acquire() and release() run in the same task for one call; the ticket carries the
        # call's own estimate from one to the other. Outside that pattern, the average is used.
        self._ticket: contextvars.ContextVar[_Ticket | None] = contextvars.ContextVar(
            f"gate-ticket-{model}", default=None
        )
        self._outstanding_tokens = 0
        self._outstanding_usd = 0.0
        # Completed calls per whole second (second, calls, tokens) over the last minute: the
        # progress display asks for rates at every refresh, and a per-call history made each
        # snapshot scan up to a minute of calls.
        self._recent: deque[list[int]] = deque()
        self.calls_started = self.replies = self.failures = 0
        self.rate_limited = self.retries = 0
        self.tokens_in = self.tokens_out = 0

    # --- CallGate ----------------------------------------------------------------------

    async def acquire(self, estimated_tokens: int) -> None:
        reserve = 0.0
        if self.price is not None and self.meter.ceiling_usd is not None:
            reserve = self.price.worst_case(estimated_tokens)
        self.meter.reserve(self.model, reserve)  # raises BudgetExceededError
        try:
            await self._wait_pause()
            await self.concurrency.acquire()
            try:
                if self.requests is not None:
                    await self.requests.acquire(1)
                if self.tokens is not None:
                    await self.tokens.acquire(estimated_tokens)
                # A 429 may have paused the model while this call waited for its slot or
                # its rate budget: it waits out the pause holding the slot, so a freed slot
                # never lets a call out early.
                await self._wait_pause()
            except BaseException:
                self.concurrency.release()
                raise
        except BaseException:
            self.meter.settle(self.model, reserve, 0.0)
            raise
        self._ticket.set(_Ticket(estimated_tokens, reserve))
        self._outstanding_tokens += estimated_tokens
        self._outstanding_usd += reserve
        self.calls_started += 1

    async def ready(self) -> None:
        """Wait out a pause that began between ``acquire`` and the send (the slot is held)."""
        await self._wait_pause()

    def release(self, reply: Reply | None, error: ModelError | None) -> None:
        ticket = self._ticket.get() or self._average_ticket()
        self._ticket.set(None)
        self._outstanding_tokens -= ticket.tokens
        self._outstanding_usd -= ticket.reserved_usd
        self.concurrency.release()
        if reply is not None:
            used = reply.usage.input_tokens + reply.usage.output_tokens
            self.tokens_in += reply.usage.input_tokens
            self.tokens_out += reply.usage.output_tokens
            if self.tokens is not None:
                self.tokens.adjust(used - ticket.tokens)
            cost = reply.cost_usd
            if cost is None and self.price is not None:
                cost = self.price.cost(reply.usage)
            self.meter.settle(self.model, ticket.reserved_usd, cost or 0.0)
            self.replies += 1
            self._count_completed(used)
            self.concurrency.on_success()
            return
        # No reply: nothing is billed. Tokens go back unless the vendor may have processed
        # the request (timeout, dropped connection), where keeping them is the safe side.
        self.meter.settle(self.model, ticket.reserved_usd, 0.0)
        processed = isinstance(error, ModelTimeoutError | ConnectionFailedError)
        if self.tokens is not None and not processed:
            self.tokens.adjust(-ticket.tokens)
        if error is None:
            return
        self.failures += 1
        self._count_completed(0)
        if error.retryable:
            self.retries += 1
        if isinstance(error, RateLimitedError | OverloadedError):
            self.rate_limited += isinstance(error, RateLimitedError)
            self.concurrency.on_throttled()
            if error.retry_after:
                # Every call to this model waits, not just the one that was told to.
                self._paused_until = max(self._paused_until, time.monotonic() + error.retry_after)

    # --- helpers -----------------------------------------------------------------------

    def _average_ticket(self) -> _Ticket:
        n = max(1, self.concurrency.in_flight)
        return _Ticket(self._outstanding_tokens // n, self._outstanding_usd / n)

    async def _wait_pause(self) -> None:
        while (left := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(left)

    _RATE_WINDOW_S = 60  # tokens per minute; calls per second are over the last 10 s

    def _count_completed(self, tokens: int) -> None:
        second = int(time.monotonic())
        if self._recent and self._recent[-1][0] == second:
            self._recent[-1][1] += 1
            self._recent[-1][2] += tokens
            return
        self._recent.append([second, 1, tokens])
        while self._recent[0][0] <= second - self._RATE_WINDOW_S:
            self._recent.popleft()

    def snapshot(self) -> GateSnapshot:
        now = time.monotonic()
        # Whole seconds: the current, partial second counts in full, so the figures lead by
        # up to a second (a display, not a budget: the budgets are the RateBudgets).
        second = int(now)
        recent = [b for b in self._recent if b[0] > second - self._RATE_WINDOW_S]
        last10 = sum(b[1] for b in recent if b[0] > second - 10)
        return GateSnapshot(
            model=self.model,
            in_flight=self.concurrency.in_flight,
            concurrency_limit=self.concurrency.limit,
            max_in_flight=self.concurrency.maximum,
            calls_started=self.calls_started,
            replies=self.replies,
            failures=self.failures,
            rate_limited=self.rate_limited,
            retries=self.retries,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            spent_usd=self.meter.by_model.get(self.model, 0.0),
            calls_per_s=last10 / 10.0,
            tokens_per_min=float(sum(b[2] for b in recent)),
            paused_s=max(0.0, self._paused_until - now),
        )
