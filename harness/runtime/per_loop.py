"""Asyncio primitives that follow the running event loop.

An ``asyncio.Lock``, ``Event`` or ``Semaphore`` binds itself to the first loop that waits on
it and raises in any other. Gates and budgets are built from the configuration, before a
loop runs, and a library user may drive them from one ``asyncio.run`` after another (a
campaign, then a resume in the same process). `PerLoop` keeps one primitive per running
loop, so a budget contended in one loop still works in the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One ``factory()`` result per running event loop (the latest loop's only)."""

    __slots__ = ("_factory", "_loop", "_value")

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._value: T | None = None

    def get(self) -> T:
        """The primitive for the running loop, made afresh when the loop has changed (the
        waiters of a finished loop are gone with it)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._value is None:
            self._loop = loop
            self._value = self._factory()
        return self._value

    def current(self) -> T | None:
        """The primitive if one was made for the loop running now; None otherwise, or when
        no loop runs (nobody can be waiting on it then)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return self._value if loop is self._loop else None
