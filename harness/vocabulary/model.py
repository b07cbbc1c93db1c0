"""The model interface every backend implements (sim, local, replay, vendors).

A model is anything with ``async complete(messages, params) -> Reply``. Backends are
contributed per URI scheme by a `Family` (``model_backends``; the core's own in
`harness.builtins`) and built from a `ModelSpec`
(``"sim:default"``, ``"local:smollm2"``, ``"openai:gpt-4o-mini"``...). Failures are raised
as subclasses of `harness.vocabulary.errors.ModelError`; nothing else may escape ``complete``.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from harness.vocabulary.answer_shape import AnswerFormat, AnswerShape
from harness.vocabulary.config_bounds import MAX_IN_FLIGHT

Role = Literal["system", "user", "assistant"]

PROMPT_PLACEHOLDER = "{prompt}"
"""Where an ask's prompt goes in a model's ``template`` (and an ``http:`` request body)."""


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role
    content: str


class GenerationParams(BaseModel):
    """Sampling parameters. ``None`` means the backend's default.

    ``answer_shape`` is set by the engine, never in a campaign file: the shape a structured
    answer must take (absent for free answers, so their request keys are unchanged).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    top_p: float | None = None
    answer_shape: AnswerShape | None = None


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0


class Reply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    text: str
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    request_id: str | None = None
    latency_s: float = 0.0
    cost_usd: float | None = None
    # The vendor's text with every code point that UTF-8 cannot encode kept as an escape
    # (`recordable_reply`), set only when ``text`` had to be repaired; left out of the JSON
    # when None, so every other reply is written exactly as before (ReplyReceived v2).
    raw_escaped: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # The conversation id an ``http:`` target's endpoint returned (``conversation = "id"``):
    # recorded with the reply of its thread's turn, so a resumed run carries it on. Left out
    # of the JSON when None, like ``raw_escaped``.
    conversation_id: str | None = Field(default=None, exclude_if=lambda value: value is None)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def recordable_text(text: str) -> str:
    """``text`` as UTF-8 can encode it: surrogate pairs joined, lone surrogates (legal in
    JSON's ``\\ud800``, which no log, terminal or report can store) replaced by U+FFFD."""
    if _encodable(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def recordable_reply(reply: Reply) -> Reply:
    """``reply`` as the log can always record it: a reply is data, never a crash.

    The text keeps what UTF-8 can encode; when it had to be repaired, the original is kept
    in ``raw_escaped`` as ``unicode_escape`` ASCII, from which ``raw.encode("ascii")
    .decode("unicode_escape")`` gives back the exact string the vendor sent. The other
    strings (finish reason, request id) are only repaired. Costs one encode per reply when
    nothing needs repairing (the same object is returned)."""
    text, finish, request = reply.text, reply.finish_reason, reply.request_id
    if (
        _encodable(text)
        and (finish is None or _encodable(finish))
        and (request is None or _encodable(request))
    ):
        return reply
    updates: dict[str, object] = {
        "finish_reason": None if finish is None else recordable_text(finish),
        "request_id": None if request is None else recordable_text(request),
    }
    if not _encodable(text):
        updates["text"] = recordable_text(text)
        updates["raw_escaped"] = text.encode("unicode_escape").decode("ascii")
    return reply.model_copy(update=updates)


conversation_scope: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "conversation_scope", default=None
)
"""The conversation a call belongs to (the engine sets its case and thread, `scope_of`): a
model that keeps state per conversation (an ``http:`` endpoint's conversation id) keys it
by this, never by the text alone, which two repeats of a case may share word for word."""


def scope_of(case_id: str, thread: str) -> str:
    """The `conversation_scope` of a case's thread."""
    return f"{case_id}\x1f{thread}"


@runtime_checkable
class Model(Protocol):
    """A chat model. ``name`` is the campaign-level identifier (``"sim:default"``)."""

    name: str

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply: ...

    async def aclose(self) -> None: ...


class ModelSpec(BaseModel):
    """One model as named in a campaign file.

    ``backend``: the "scheme:identifier" of the model when ``name`` is only a label, so one
    model can be listed twice (e.g. once per answer format). ``answer_format``: free text or
    structured answers (None: the campaign's ``answer_format``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str  # "scheme:identifier" (or a label with ``backend``): the key in events, reports
    params: GenerationParams = Field(default_factory=GenerationParams)
    options: dict[str, Any] = Field(default_factory=dict)  # backend-specific
    # Bounded: each call in flight is a worker task and a connection (config_bounds).
    max_in_flight: int = Field(default=8, ge=1, le=MAX_IN_FLIGHT)
    backend: str | None = None
    answer_format: AnswerFormat | None = None
    # What the application under test wraps around a user's text (docs/targets.md): its
    # system prompt, a template with PROMPT_PLACEHOLDER where an ask's prompt goes, and
    # messages sent before the conversation (few-shot examples). Part of every request the
    # subject is sent, so of the logged request, its key, the cache and replay; never of a
    # judge's. Left out of the recorded config when unset: old config hashes are unchanged.
    system: str | None = Field(default=None, exclude_if=lambda value: value is None)
    template: str | None = Field(default=None, exclude_if=lambda value: value is None)
    prefix: tuple[Message, ...] = Field(default=(), exclude_if=lambda value: not value)
    # How the engine sends this model's requests: one call each ("direct"), or in waves
    # through the vendor's batch API ("batch", docs/batch.md). Left out of the recorded
    # config when "direct": old config hashes are unchanged.
    mode: Literal["direct", "batch"] = Field(
        default="direct", exclude_if=lambda value: value == "direct"
    )

    @property
    def dressed(self) -> bool:
        """True when requests to this model are wrapped (`dress`)."""
        return bool(self.system or self.template or self.prefix)

    def dress(self, messages: list[Message]) -> list[Message]:
        """``messages`` (a relation's request, `harness.store.fold.messages_for`) as the
        application sends them: its system prompt first (joined with a relation's own, which
        follows it), then the prefix messages, then the conversation with every user
        message put in the template. The same list when nothing is set."""
        if not self.dressed:
            return messages
        rest = messages
        own: str | None = None
        if rest and rest[0].role == "system":
            own, rest = rest[0].content, rest[1:]
        system = "\n\n".join(text for text in (self.system, own) if text)
        out = [Message(role="system", content=system)] if system else []
        out.extend(self.prefix)
        template = self.template
        for message in rest:
            if template is not None and message.role == "user":
                message = Message(
                    role="user", content=template.replace(PROMPT_PLACEHOLDER, message.content)
                )
            out.append(message)
        return out

    @property
    def target(self) -> str:
        """The "scheme:identifier" that selects the backend and the vendor model."""
        return self.backend or self.name

    @property
    def scheme(self) -> str:
        return self.target.split(":", 1)[0]

    @property
    def identifier(self) -> str:
        return self.target.split(":", 1)[1] if ":" in self.target else ""


ModelFactory = Callable[[ModelSpec], Model]
"""Builds a model from its spec; registered per scheme by a `Family` (the core's included)."""


def request_key(model: str, messages: Sequence[Message], params: GenerationParams) -> str:
    """Content address of a request: same model, params and full history -> same key.

    The hashed text is ``json.dumps({"model", "messages", "params"}, sort_keys=True,
    ensure_ascii=False, separators=(",", ":"))`` with each message dumped as its two fields,
    written out by `request_key_text` (tests/core/vocabulary/test_hot_path_encoding.py holds
    it to that ``json.dumps``).
    """
    text = request_key_text(model, messages, params)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def request_key_text(model: str, messages: Sequence[Message], params: GenerationParams) -> str:
    """The text `request_key` hashes (sorted keys: "messages" < "model" < "params")."""
    esc = encode_basestring  # what json.dumps(ensure_ascii=False) does to a str
    body = ",".join([f'{{"content":{esc(m.content)},"role":{esc(m.role)}}}' for m in messages])
    return f'{{"messages":[{body}],"model":{esc(model)},"params":{_params_json(params)}}}'


_KEY_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
_PARAMS_DUMP = GenerationParams.__pydantic_serializer__.to_python
_FLAT_PARAMS = ("max_tokens", "seed", "temperature", "top_p")  # sorted, after "answer_shape"


def _params_json(params: GenerationParams) -> str:
    """``json.dumps(params.model_dump(exclude_none=True), sort_keys=True, ...)`` as
    `request_key_text` writes it. The numbers are written as json writes them; json.dumps
    built a JSONEncoder per call, which was half of the key's time. Only a structured
    ask's answer shape (a nested object) goes through an encoder."""
    items = []
    if params.answer_shape is not None:
        shape = _PARAMS_DUMP(params, exclude_none=True)["answer_shape"]
        items.append(f'"answer_shape":{_KEY_ENCODER.encode(shape)}')
    for name in _FLAT_PARAMS:
        value = getattr(params, name)
        if value is not None:
            items.append(f'"{name}":{_json_number(value)}')
    return "{" + ",".join(items) + "}"


def _json_number(value: float) -> str:
    """A parameter's value as json.dumps writes it: finite numbers by their repr (what json
    does), anything else (NaN, the infinities) by the encoder itself."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and value - value == 0:  # finite
        return float.__repr__(value)
    return _KEY_ENCODER.encode(value)
