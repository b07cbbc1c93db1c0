"""`FakeModel`: a `harness.vocabulary.model.Model` for offline tests, scripted or computed.

What for: a relation's tests, and the core's own, need a model whose answers they choose
(a reply that triggers the repair turn, a failure on the third call, a delay that lets two
calls overlap) and whose calls they can count, without a vendor or a hand-written class per
test. It answers from, in this order of precedence:

- ``replies``: a sequence of replies in order (a ``str``, a `Reply`, or an exception to
  raise), one per call; a call past the end fails the test with `ScriptExhausted`;
- or a function of the messages (``answer(messages) -> str | Reply``, or a coroutine
  function, which may wait on an event; it may raise, or return an exception to raise);
- or another model to wrap (``wraps=SimModel(...)``): its answers, counted and watched.

Every call is recorded (`calls`, `requests`, `prompts`, `max_in_flight`), and ``fail_first``
raises given errors before answering (on the first calls, or per prompt).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from harness.vocabulary.model import GenerationParams, Message, Model, Reply

__all__ = ["FakeModel", "ScriptExhausted", "SentRequest"]

ScriptedReply = str | Reply | BaseException
Answer = Callable[[Sequence[Message]], ScriptedReply | Awaitable[ScriptedReply]]


class ScriptExhausted(AssertionError):
    """A `FakeModel` was called more often than its script has replies: a test's mistake,
    raised as an assertion so it fails the test instead of reading as a vendor failure."""


@dataclass(frozen=True)
class SentRequest:
    """One call a `FakeModel` received."""

    messages: tuple[Message, ...]
    params: GenerationParams

    @property
    def prompt(self) -> str:
        """The last message's text (the prompt of the ask)."""
        return self.messages[-1].content if self.messages else ""


class FakeModel:
    """A scripted or computed model (see the module's docstring).

    ``name``: the campaign-level name (the key of the engine's ``models`` mapping, or an
    override of a campaign's model). ``delay``: seconds each call waits before answering.
    ``fail_first``: errors raised by the first calls in order, one each; with
    ``per_prompt=True`` each distinct prompt meets them anew (a retry of that prompt
    consumes them). `failures` maps a prompt to the errors its next calls raise first (set
    it to fail one prompt only). ``on_call(messages, params)``: called at the start of every
    call (to look at the log, the clock or the collector at that moment); it may raise.
    With neither replies nor ``wraps``, every call answers the empty string.
    """

    def __init__(
        self,
        replies: Sequence[ScriptedReply] | Answer | None = None,
        *,
        name: str = "fake:model",
        wraps: Model | None = None,
        delay: float = 0.0,
        fail_first: Sequence[BaseException] = (),
        per_prompt: bool = False,
        on_call: Callable[[Sequence[Message], GenerationParams], None] | None = None,
    ) -> None:
        if replies is not None and wraps is not None:
            raise ValueError("FakeModel: give replies (or an answer function) or wraps, not both")
        self.name = name
        self.delay = delay
        self.on_call = on_call
        self._wraps = wraps
        self._answer: Answer | None = None
        self._script: list[ScriptedReply] | None = None
        if callable(replies):
            self._answer = replies
        elif replies is not None:
            self._script = list(replies)
        self._fail_first = list(fail_first)
        self._per_prompt = per_prompt
        self.failures: dict[str, list[BaseException]] = {}
        self.requests: list[SentRequest] = []
        self.prompts: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = False

    @property
    def calls(self) -> int:
        """How many calls it received (failed ones included)."""
        return len(self.requests)

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        request = SentRequest(tuple(messages), params)
        self.requests.append(request)
        self.prompts[request.prompt] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.on_call is not None:
                self.on_call(messages, params)
            if self.delay:
                await asyncio.sleep(self.delay)
            pending = self.failures.get(request.prompt)
            if pending is None and self._per_prompt:
                pending = self.failures.setdefault(request.prompt, list(self._fail_first))
            if pending:
                raise pending.pop(0)
            if self._fail_first and not self._per_prompt:
                raise self._fail_first.pop(0)
            return await self._reply(messages, params)
        finally:
            self.in_flight -= 1

    async def _reply(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        if self._wraps is not None:
            return await self._wraps.complete(messages, params)
        if self._answer is not None:
            answered = self._answer(messages)
            found: ScriptedReply = await answered if inspect.isawaitable(answered) else answered
        elif self._script:
            found = self._script.pop(0)
        elif self._script is not None:
            raise ScriptExhausted(
                f"{self.name}: no scripted reply left for call {self.calls} "
                f"(prompt {self.requests[-1].prompt[:80]!r})"
            )
        else:
            found = ""
        if isinstance(found, BaseException):
            raise found
        # As given, unrepaired: the engine's own repair (`recordable_reply`) is under test too.
        return found if isinstance(found, Reply) else Reply(text=found)

    async def aclose(self) -> None:
        self.closed = True
        if self._wraps is not None:
            await self._wraps.aclose()
