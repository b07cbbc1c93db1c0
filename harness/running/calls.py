"""The call loop: one turn's request sent to a model until it has an outcome, every attempt
logged. The engine and re-judging both send their calls through it.

`CallLoop.send` waits at the model's gate, appends AskSent, calls the model within the
timeout, and on a failure appends AskFailed with the retry decision taken about it, waits
and tries again. An attempt cancelled under way (a stop past its grace period) is recorded
as AskFailed(cancelled, decision retry), so the log never holds a call without an outcome
and resume re-sends it. The turn's final outcome (a reply, or a failure that is not retried)
is returned *unappended*: the caller commits it together with what it decides from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from harness.models.gates import CallGate, estimate_tokens
from harness.running.call_deadlines import CallDeadlines
from harness.running.retry import RetryDecision, RetryPolicy, failure_event
from harness.vocabulary.errors import ModelError, ModelTimeoutError
from harness.vocabulary.events import AskFailed, AskSent, Event, ReplyReceived
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    Model,
    Reply,
    recordable_reply,
    request_key,
)
from harness.vocabulary.relation import Ask

Append = Callable[[Event], Awaitable[object]]
"""Appends one event to the case the call belongs to; awaiting it returns once committed."""


class CallObserver(Protocol):
    def call_ended(self, model: str, reply: Reply | None, error: ModelError | None) -> None:
        """A model call returned or failed (not called for cached answers)."""
        ...

    def retry_scheduled(self, model: str, wait_s: float) -> None: ...


class CallOutcome(NamedTuple):
    """How a turn ended. ``event`` (ReplyReceived or AskFailed) is not in the log yet.

    A named tuple: one is built for every turn, at half a frozen dataclass's cost."""

    event: ReplyReceived | AskFailed
    reply: Reply | None = None
    error: ModelError | None = None
    decision: RetryDecision | None = None  # for a failure: give_up, suspend or abort

    @property
    def cached(self) -> bool:
        return isinstance(self.event, ReplyReceived) and self.event.cached


@dataclass
class CallLoop:
    retry: RetryPolicy
    timeout_s: float
    stop: asyncio.Event  # once set, no new attempt starts; a retry's wait ends early
    observer: CallObserver | None = None
    _deadlines: CallDeadlines = field(init=False, repr=False)
    # Model name -> monotonic time until which no attempt to it starts (an outage pause).
    _paused_until: dict[str, float] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._deadlines = CallDeadlines(self.timeout_s)

    def pause(self, model: str, seconds: float) -> None:
        """Start no attempt to ``model`` for ``seconds`` (a vendor outage: `OutageWatch`)."""
        until = time.monotonic() + max(seconds, 0.0)
        self._paused_until[model] = max(self._paused_until.get(model, 0.0), until)

    def paused(self, model: str) -> bool:
        """True while an outage pause of ``model`` lasts."""
        return self._paused_until.get(model, 0.0) > time.monotonic()

    async def _wait_pause(self, model: str) -> None:
        while not self.stop.is_set():
            left = self._paused_until.get(model, 0.0) - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=left)

    async def send(
        self,
        append: Append,
        model: Model,
        gate: CallGate,
        ask: Ask,
        turn: int,
        messages: list[Message],
        params: GenerationParams,
        *,
        first_attempt: int = 1,
        counted_attempts: int = 0,
        cached: Callable[[], Reply | None] | None = None,
    ) -> CallOutcome | None:
        """The turn's outcome, or None when the loop stopped before it had one.

        ``first_attempt``: the number logged with the next attempt (attempts already in the
        log keep theirs). ``counted_attempts``: earlier attempts of the turn that count
        toward ``max_attempts`` (`TurnState.counted_attempts`): only those that got a
        vendor error, never one cancelled at a stop or lost in a crash.
        ``cached``: looks up an answer reused from an earlier log (no call, no gate).
        """
        key = request_key(model.name, messages, params)
        attempt = first_attempt
        counted = counted_attempts
        while True:
            if self._paused_until and self.paused(model.name):
                await self._wait_pause(model.name)
            if self.stop.is_set():
                return None
            hit = cached() if cached is not None else None
            if hit is None:
                await gate.acquire(
                    estimate_tokens(sum(len(m.content) for m in messages), params.max_tokens)
                )
            sent = AskSent(
                turn=turn,
                attempt=attempt,
                ask=ask,
                model=model.name,
                messages=messages,
                params=params,
                request_key=key,
            )
            try:
                await append(sent)
            except asyncio.CancelledError:
                if hit is None:
                    gate.release(None, None)
                # The batch was queued and commits anyway: give the attempt its outcome.
                await _record_cancelled(append, turn, attempt)
                raise
            except BaseException:
                if hit is None:
                    gate.release(None, None)
                raise
            if hit is not None:
                received = ReplyReceived(turn=turn, attempt=attempt, reply=hit, cached=True)
                return CallOutcome(received, reply=hit)
            reply, error = await self._complete(
                append, model, gate, messages, params, turn, attempt
            )
            if reply is not None:
                tag_of = getattr(model, "batch_tag_of", None)  # a model in batch mode
                tag = tag_of(key) if tag_of is not None else None
                received = ReplyReceived(turn=turn, attempt=attempt, reply=reply, batch=tag)
                return CallOutcome(received, reply)
            assert error is not None
            counted += 1
            decision = self.retry.decide(error, counted)
            failed = failure_event(turn, attempt, error, decision)
            if decision.action != "retry":
                return CallOutcome(failed, error=error, decision=decision)
            await append(failed)
            if self.observer is not None:
                self.observer.retry_scheduled(model.name, decision.wait_s)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=decision.wait_s)
            attempt += 1

    async def _complete(
        self,
        append: Append,
        model: Model,
        gate: CallGate,
        messages: list[Message],
        params: GenerationParams,
        turn: int,
        attempt: int,
    ) -> tuple[Reply | None, ModelError | None]:
        """One attempt: the model's reply or its error; releases the gate."""
        error: ModelError | None = None
        reply: Reply | None = None
        started = time.monotonic()
        try:
            await gate.ready()  # the AskSent commit took a moment: a pause may have begun
            started = time.monotonic()
            # One timer for all the loop's calls (harness.running.call_deadlines), not a timer
            # handle per call (asyncio.timeout) nor a task per call (wait_for).
            if getattr(model, "batched", False):
                # A batch takes its time (up to a vendor's 24 h): no per-call deadline.
                reply = await model.complete(messages, params)
            else:
                reply = await self._deadlines.run(model.complete(messages, params))
        except ModelError as exc:
            error = exc
        except TimeoutError as exc:
            error = ModelTimeoutError(
                f"no reply within {self.timeout_s:g}s (limits.call_timeout_s)"
            )
            error.__cause__ = exc
        except asyncio.CancelledError:
            # Cancelled past the stop grace period: record the outcome so the log never
            # holds a call without one; resume re-sends it.
            gate.release(None, None)
            await _record_cancelled(append, turn, attempt)
            raise
        except Exception as exc:
            # Backends must translate their own errors; this records the bug instead of
            # crashing a campaign of thousands of calls.
            error = ModelError(f"untranslated {type(exc).__name__}: {exc}")
        if reply is not None:
            # Every backend's reply, whatever it holds, is recordable (lone surrogates...).
            reply = recordable_reply(reply)
        gate.release(reply, error)
        if self.observer is not None:
            self.observer.call_ended(model.name, reply, error)
        if reply is not None and not reply.latency_s:
            reply = reply.model_copy(update={"latency_s": time.monotonic() - started})
        return reply, error


async def _record_cancelled(append: Append, turn: int, attempt: int) -> None:
    failed = AskFailed(
        turn=turn,
        attempt=attempt,
        error_kind="cancelled",
        message="call cancelled at stop",
        retryable=True,
        decision="retry",
    )
    with contextlib.suppress(Exception):
        await asyncio.shield(append(failed))
