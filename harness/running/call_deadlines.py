"""One timer for the timeouts of many concurrent calls that share one duration.

What for: `asyncio.timeout` schedules and cancels a timer handle per call (timings in
bench/RESULTS.md, engine on `sim`). The call loop's
calls all get the same timeout, so their deadlines come in the order they started: a queue
in start order and one timer armed at the earliest pending deadline do the same job.

`CallDeadlines.run` behaves as ``async with asyncio.timeout(timeout_s): await call``: an
expired call's task is cancelled and the cancellation comes out as `TimeoutError`; a
cancellation from elsewhere (a stop past its grace period) stays a `CancelledError`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable
from typing import TypeVar

_T = TypeVar("_T")


class _Call:
    """A call under way: its deadline, its task (None once it ended), whether it expired."""

    __slots__ = ("deadline", "expired", "task")

    def __init__(self, deadline: float, task: asyncio.Task[object]) -> None:
        self.deadline = deadline
        self.task: asyncio.Task[object] | None = task
        self.expired = False


class CallDeadlines:
    """Deadlines ``timeout_s`` after each call's start, for calls made on one event loop."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._pending: deque[_Call] = deque()  # in start order, so in deadline order
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(self, call: Awaitable[_T]) -> _T:
        """``await call``, cancelled with `TimeoutError` if it lasts over ``timeout_s``."""
        task = asyncio.current_task()
        assert task is not None, "CallDeadlines.run outside a task"
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (a second asyncio.run): start afresh
            self._loop, self._timer, self._pending = loop, None, deque()
        pending = self._pending
        while pending and pending[0].task is None:  # calls ended at the head
            pending.popleft()
        entry = _Call(loop.time() + self.timeout_s, task)
        pending.append(entry)
        if self._timer is None:
            self._timer = loop.call_at(entry.deadline, self._expire)
        cancelling = task.cancelling()
        # As asyncio.timeout's exit: an expired call's cancel is taken back (uncancel),
        # and only a cancellation that is the timer's alone becomes TimeoutError.
        try:
            result = await call
        except BaseException as exc:
            entry.task = None
            if (
                entry.expired
                and task.uncancel() <= cancelling
                and isinstance(exc, asyncio.CancelledError)
            ):
                raise TimeoutError from exc
            raise
        entry.task = None
        if entry.expired:
            task.uncancel()
        return result

    def _expire(self) -> None:
        """Cancels the calls past their deadline; re-arms for the next pending one."""
        self._timer = None
        pending = self._pending
        loop = asyncio.get_running_loop()
        now = loop.time()
        while pending:
            head = pending[0]
            if head.task is None:
                pending.popleft()
            elif head.deadline <= now:
                pending.popleft()
                head.expired = True
                head.task.cancel()
            else:
                self._timer = loop.call_at(head.deadline, self._expire)
                return
