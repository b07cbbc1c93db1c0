"""Call gates: when a call to one model may start.

A `CallGate` decides when a call may start (calls in flight, and for vendors rates, tokens
and spend; `harness.models.providers`) and learns from how it ended.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from harness.runtime.per_loop import PerLoop
from harness.vocabulary.errors import ModelError
from harness.vocabulary.model import Reply


class CallGate(Protocol):
    """Admission control for one model."""

    async def acquire(self, estimated_tokens: int) -> None:
        """Wait until a call may start. May raise `BudgetExceededError`."""
        ...

    async def ready(self) -> None:
        """Called after ``acquire``, just before the call goes out: waits while something
        that began since ``acquire`` (a vendor's Retry-After pause) forbids the call now."""
        ...

    def release(self, reply: Reply | None, error: ModelError | None) -> None:
        """Called exactly once per successful ``acquire``, with how the call ended."""
        ...


class InFlightGate:
    """Plain limit on calls in flight; the default for local and simulated models."""

    def __init__(self, max_in_flight: int) -> None:
        self.max_in_flight = max_in_flight
        self._sem = PerLoop(lambda: asyncio.Semaphore(max_in_flight))

    async def acquire(self, estimated_tokens: int) -> None:
        await self._sem.get().acquire()

    async def ready(self) -> None:
        return None

    def release(self, reply: Reply | None, error: ModelError | None) -> None:
        sem = self._sem.current()
        if sem is not None:
            sem.release()


def estimate_tokens(text_chars: int, max_tokens: int | None) -> int:
    """Rough pre-call token estimate (4 characters a token) plus the reply allowance."""
    return text_chars // 4 + 1 + (max_tokens or 256)
