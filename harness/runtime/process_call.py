"""Work computed in a second process while the caller goes on: what a report or an import
uses to put a machine's second core to work. `ProcessCall` computes one call's value;
`ProcessItems` (below) an iterator's items, handed over in order as they come (the BiasLens
import reads and encodes its files in one while its parent writes them, the two halves each
keeping a core busy: bench/RESULTS.md, 2026-11-27, "a new log built whole, the import in two
processes"). Families reach both through neutral facilities: `ProcessItems` itself in
`harness.family_api`, and `ReportContext.compute_aside` for a `ProcessCall`.

`ProcessCall(fn, *args)` spawns a child (not forked: the parent may hold threads and open
SQLite connections, which a forked child must not touch) that runs ``fn(*args)`` and pipes
back its pickled result; `result` waits for it. The child's exception is raised in the
caller (the child's own traceback kept as its text when the exception does not pickle); a
child that dies is a `ChildDied` naming its exit code (the caller may then compute the
value itself). ``fn`` and its arguments must pickle: a module-level function of the
project and plain data. The child starts with SIGINT ignored, so a Ctrl-C is the caller's
to handle: `close` (always, e.g. in a ``finally``) kills a child still running; and it is
started without the caller's ``__main__`` (`spawning`), so a user's script is never run
twice.

`second_core_free` says whether a call is worth it at all: on a one-core machine the child
only competes with its parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
import types
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Generic, NoReturn, TypeVar

from harness.runtime.gc_pause import gc_paused
from harness.vocabulary.errors import HarnessError

T = TypeVar("T")


@dataclass(frozen=True)
class Failed:
    """A child's exception, or its text when the exception itself does not pickle."""

    error: BaseException | None
    text: str

    @classmethod
    def pickled(cls, exc: BaseException) -> bytes:
        text = "".join(traceback.format_exception(exc))
        try:
            return pickle.dumps(cls(exc, text))
        except Exception:
            return pickle.dumps(cls(None, text))

    def raise_it(self, what: str) -> NoReturn:
        if self.error is not None:
            raise self.error
        raise HarnessError(f"{what} failed:\n{self.text}")


class ChildDied(HarnessError):
    """The child ended without a value or an exception (killed, out of memory): the caller
    may compute the value itself."""


def second_core_free() -> bool:
    """Whether this process may use more than one core (its CPU affinity, not the host's
    count: a container or `taskset` limits it)."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # no affinity on this platform
        return (os.cpu_count() or 1) >= 2


def _run(
    fn: Callable[..., Any], args: tuple[Any, ...], conn: Connection, parent: Connection
) -> None:
    _end_with(parent)
    try:
        try:
            data = pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:
            data = Failed.pickled(exc)
        conn.send_bytes(data)
    except BrokenPipeError:
        return  # the caller is gone: nobody reads this
    finally:
        conn.close()


def _end_with(parent: Connection) -> None:
    """Ends this child when its parent ends, however it ends (SIGKILL included): a thread
    waits on a pipe only the parent holds open, which reads as ready once the parent is
    gone. Without it a child would work on to its end for a caller that no longer waits."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            parent.poll(None)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class ProcessCall(Generic[T]):
    """``fn(*args)`` running in a spawned child; `result` returns it, `close` stops it."""

    def __init__(self, what: str, fn: Callable[..., T], *args: Any) -> None:
        self.what = what  # named in errors: "the verdict count's process"
        context = multiprocessing.get_context("spawn")
        self._receiver, sender = context.Pipe(duplex=False)
        # Never written: the child sees its end ready once this process has ended.
        watched, self._alive = context.Pipe(duplex=False)
        self._process = context.Process(target=_run, args=(fn, args, sender, watched), daemon=True)
        with spawning():
            self._process.start()
        sender.close()  # the child's end: a dead child then reads as EOF here
        watched.close()
        self._done = False

    def ready(self) -> bool:
        """Whether `result` would return (or raise) without waiting."""
        return self._done or self._receiver.poll()

    def result(self) -> T:
        """The call's value; its exception, or the child's death, is raised here."""
        if self._done:
            raise HarnessError(f"{self.what}: its result was taken already")
        try:
            data = self._receiver.recv_bytes()
        except (EOFError, OSError):
            self._process.join(timeout=5)
            raise ChildDied(f"{self.what} died (exit code {self._process.exitcode})") from None
        finally:
            self._done = True
        value: T | Failed = pickle.loads(data)  # what the child sent: its T, or a Failed
        self._process.join(timeout=5)
        if isinstance(value, Failed):
            value.raise_it(self.what)
        return value

    def close(self) -> None:
        """Stops the child if it is still running (a result nobody took), then cleans up."""
        if self._process.is_alive() and not self._done:
            self._process.kill()
        self._process.join()
        self._receiver.close()
        self._alive.close()


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Around a spawned child's start: SIGINT ignored (`sigint_ignored`) and the caller's
    ``__main__`` hidden. multiprocessing's spawn has the child import the parent's main
    module again (to unpickle what was defined there), which runs a script's top level a
    second time when it lacks an ``if __name__ == "__main__"`` guard: a library user's
    script that runs a campaign, then reports on it, would run the campaign again. The
    functions children run here live in the project's modules, never in ``__main__``."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        with sigint_ignored():
            yield
    finally:
        if main is None:
            del sys.modules["__main__"]
        else:
            sys.modules["__main__"] = main


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while a child starts, so it inherits the ignoring: Ctrl-C reaches the
    whole process group, and the parent, which owns the interruption, stops the child
    instead of the child printing a traceback of its own."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; the child then hears Ctrl-C itself
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _iterate(fn: Callable[..., Iterable[Any]], args: tuple[Any, ...], conn: Connection) -> None:
    """The child of `ProcessItems`: each item of ``fn(*args)`` pickled into the pipe, then
    None (the end) or the failure. The collector is paused: the items are plain data, the
    many short-lived objects that make them die by reference counting, and the collector's
    scans of the survivors took about half the CPU of the BiasLens import's reading half."""
    try:
        with gc_paused():
            for item in fn(*args):
                conn.send_bytes(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))
        conn.send_bytes(pickle.dumps(None))
    except BrokenPipeError:
        return  # the parent is gone (killed or failed): nothing left to read this
    except BaseException as exc:
        conn.send_bytes(Failed.pickled(exc))
    finally:
        conn.close()


class ProcessItems(Generic[T]):
    """The items of ``fn(*args)`` computed in a spawned child while this process goes on
    (the BiasLens import reads and encodes its files there while this one writes them).

    A thread reads the child's items ahead into a bounded queue (``read_ahead`` items), so
    the child keeps working while the caller does its own first work; `items` hands them out
    in order, raising the child's exception or its death. The cyclic collector is paused in
    this process too until `close` (`gc_pause`): the unpickled items are half a million
    tuples at a time on a large import, which its generations scanned again and again
    (19.7 s of CPU with it, 10.0 s without, 2026-11-26). ``fn`` and its arguments must
    pickle (a module-level function of the project); each item must be None-free plain
    data. `close` (always) stops a child still running."""

    def __init__(
        self, what: str, fn: Callable[..., Iterable[T]], *args: Any, read_ahead: int = 16
    ) -> None:
        self.what = what  # named in errors: "the import's reading process"
        context = multiprocessing.get_context("spawn")  # the parent may hold threads
        self._receiver, sender = context.Pipe(duplex=False)
        self._process = context.Process(target=_iterate, args=(fn, args, sender), daemon=True)
        self._paused = contextlib.ExitStack()
        self._paused.enter_context(gc_paused())
        with spawning():
            self._process.start()
        sender.close()  # the child's end: a dead child then reads as EOF here
        self._items: queue.Queue[object] = queue.Queue(maxsize=read_ahead)
        self._closing = threading.Event()
        self._finished = False  # every item was handed out: the child is ending by itself
        self._thread = threading.Thread(target=self._read, name="process-items", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            item: object
            try:
                data = self._receiver.recv_bytes()
            except (EOFError, OSError):
                item = _DIED
            else:
                try:
                    item = pickle.loads(data)
                except Exception as exc:  # the consumer must hear of it, not wait forever
                    item = Failed(None, f"an item of {self.what} did not load: {exc!r}")
            if not self._put(item) or item is None or item is _DIED or isinstance(item, Failed):
                return

    def _put(self, item: object) -> bool:
        while not self._closing.is_set():
            try:
                self._items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    async def items(self) -> AsyncIterator[T]:
        """The child's items in order; its exception, or its death, is raised here."""
        loop = asyncio.get_running_loop()
        while True:
            item = await loop.run_in_executor(None, self._items.get)
            if item is None:
                self._finished = True
                return
            if item is _DIED:
                self._process.join(timeout=5)
                raise ChildDied(f"{self.what} died (exit code {self._process.exitcode})")
            if isinstance(item, Failed):
                item.raise_it(self.what)
            yield item  # type: ignore[misc]  # an item of fn(*args), unpickled

    def close(self) -> None:
        """Stops the child if it is still running, then cleans up and resumes the collector."""
        try:
            self._closing.set()
            if self._finished:
                self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.kill()  # the reader thread then reads EOF and ends
                self._process.join()
            self._thread.join()
            self._receiver.close()
            # A consumer cancelled while it waited (Ctrl-C) leaves an executor thread blocked
            # in `get`, and asyncio.run waits for that thread before it returns: wake it. (A
            # full queue has no waiting `get`.)
            with contextlib.suppress(queue.Full):
                self._items.put_nowait(_DIED)
        finally:
            self._paused.close()


_DIED = object()  # the pipe closed before the child's last item
