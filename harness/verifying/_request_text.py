"""The JSON text of the request an ask sends, kept per thread across a case's prefixes.

What for: ``replay --verify`` compares every logged request with the one today's code
builds. Built as the engine builds it (`harness.store.fold.messages_for`, one `Message` model per
message of the history, then the list's serialiser), each turn's history was rebuilt and
re-serialised at every later prefix of the case. Here each finished turn's two messages are
written once, when the turn is added, and a request is its thread's pieces joined: the same
text (`tests/core/verifying/test_request_text.py` checks it against ``messages_for`` by hypothesis,
threads, forks, system prompts and failed turns included).
"""

from __future__ import annotations

from pydantic import TypeAdapter

from harness.vocabulary.relation import Ask, Turn

# The serialiser of a str field: `Message.content` is one, so a message's JSON is its role's
# fixed head and this text (checked against `Message.model_dump_json` in the tests).
_STR = TypeAdapter(str).serializer
_SYSTEM = '{"role":"system","content":'
_USER = '{"role":"user","content":'
_ASSISTANT = '{"role":"assistant","content":'


def message_json(head: str, content: str) -> str:
    """``Message(role=..., content=content).model_dump_json()``, ``head`` naming the role."""
    return head + _STR.to_json(content).decode() + "}"


class RequestText:
    """The requests of one conversation as turns are added to it, in transcript order:
    ``json(ask)`` is the JSON list of ``messages_for(ask, transcript)`` (each message as its
    ``model_dump_json`` writes it, as an AskSent holds the request) for the transcript of the
    turns added so far."""

    def __init__(self) -> None:
        # thread -> the JSON of its answered turns' messages (user, assistant, ...); a thread
        # is a key from its first turn on, answered or not (as `messages_for` sees a history).
        self._history: dict[str, list[str]] = {}
        self._system: dict[str, str | None] = {}  # thread -> its first turn's system prompt

    def add(self, turn: Turn) -> None:
        """Record a finished turn (the next of the transcript)."""
        thread = turn.ask.thread
        pieces = self._history.get(thread)
        if pieces is None:
            pieces = self._history[thread] = []
            self._system[thread] = turn.ask.system
        if turn.reply is not None:  # a failed turn is left out of the history
            pieces.append(message_json(_USER, turn.ask.prompt))
            pieces.append(message_json(_ASSISTANT, turn.reply))

    def json(self, ask: Ask) -> str:
        """The JSON of the request ``ask`` sends after the turns added so far."""
        source = ask.thread
        if source not in self._history and ask.fork_of is not None:
            source = ask.fork_of
        pieces = self._history.get(source)
        system = self._system[source] if pieces is not None else ask.system
        prompt = message_json(_USER, ask.prompt)
        if system:
            return "[" + ",".join([message_json(_SYSTEM, system), *(pieces or ()), prompt]) + "]"
        if pieces:
            return "[" + ",".join(pieces) + "," + prompt + "]"
        return "[" + prompt + "]"
