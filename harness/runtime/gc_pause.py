"""Pausing Python's cyclic garbage collector around a bulk pass (an import, a report), and
making it collect less often while a campaign runs.

A bulk pass allocates millions of short-lived objects (events, rows, pydantic models) that
die by reference counting, while a few hundred thousand stay alive a while (a batch being
written, a group being tallied). Every few thousand allocations the collector then scans
the survivors, and its full collections scan the whole heap again: on the BiasLens import
it took half the CPU (19.7 s of CPU with it, 10.0 s without, the same peak RSS, since
nothing in these passes makes reference cycles worth reclaiming early).

A campaign cannot pause it: it runs for hours and a failed call leaves a reference cycle
(exception, traceback, frame), so memory would grow with the failures. It pays for the
collector as often, though: on the `sim` benchmark at zero latency collections took 14 % of
the CPU (0.087 ms a turn; bench/RESULTS.md, 2026-11-26 late), mostly full scans of the
modules, schemas and plan loaded before the first case. `gc_infrequent` freezes those and
collects the young generation every 20,000 net allocations instead of 700.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; restore its previous state after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_infrequent_depth = 0  # gc_infrequent blocks open (engines run nested in tests, or side by side)
_saved_threshold: tuple[int, ...] = ()


@contextmanager
def gc_infrequent(young: int = 20_000) -> Iterator[None]:
    """Collect less often inside the block, still reclaiming cycles: objects alive when the
    outermost block starts are frozen (`gc.freeze`: left out of every scan until it ends),
    and the youngest generation is collected every ``young`` net allocations. Nested or
    overlapping blocks share the outermost one's settings; the last to end restores them."""
    global _infrequent_depth, _saved_threshold
    if _infrequent_depth == 0:
        _saved_threshold = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(young, _saved_threshold[0]), *_saved_threshold[1:])
    _infrequent_depth += 1
    try:
        yield
    finally:
        _infrequent_depth -= 1
        if _infrequent_depth == 0:
            gc.set_threshold(*_saved_threshold)
            gc.unfreeze()
