"""Events: immutable facts appended to the log. All state is a fold over them.

Every event is a pydantic model with a ``kind`` tag and a class-level ``SCHEMA_VERSION``
stored beside its payload. Rows are decoded in exactly one place (`decode_event`), which
first upcasts old payloads through `register_upcaster` functions. Stored rows are never
rewritten: a schema change adds a version and an upcaster, never a migration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.vocabulary.errors import EventDecodeError, RegistryError
from harness.vocabulary.model import GenerationParams, Message, Reply
from harness.vocabulary.relation import Ask, Case, Verdict


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    SCHEMA_VERSION: ClassVar[int] = 1


class CampaignStarted(_Event):
    kind: Literal["CampaignStarted"] = "CampaignStarted"
    name: str
    config: dict[str, Any]  # the resolved campaign, secrets excluded
    config_hash: str
    code_version: str
    harness_version: str
    planned_cases: int | None = None
    # Vendor model name -> {"url", "source"}: the base URL its SDK was given (credentials
    # removed) and where it came from (options.base_url, an environment variable, or the
    # SDK default). Empty in logs written before it was recorded.
    endpoints: dict[str, dict[str, str]] = Field(default_factory=dict)


class CampaignResumed(_Event):
    kind: Literal["CampaignResumed"] = "CampaignResumed"
    code_version: str
    open_cases: int
    in_flight_resent: int
    config_overrides: dict[str, Any] = Field(default_factory=dict)
    endpoints: dict[str, dict[str, str]] = Field(default_factory=dict)  # as CampaignStarted


class CaseOpened(_Event):
    kind: Literal["CaseOpened"] = "CaseOpened"
    case: Case


class AskSent(_Event):
    """One attempt at one turn. ``messages`` is the full request, history included."""

    kind: Literal["AskSent"] = "AskSent"
    turn: int
    attempt: int = 1
    ask: Ask
    model: str
    messages: list[Message]
    params: GenerationParams
    request_key: str


class ReplyReceived(_Event):
    """v2: the reply may carry ``raw_escaped`` (a text repaired to be recordable)."""

    SCHEMA_VERSION: ClassVar[int] = 2
    kind: Literal["ReplyReceived"] = "ReplyReceived"
    turn: int
    attempt: int = 1
    reply: Reply
    cached: bool = False  # served from an earlier campaign's answer, not paid again
    # The tag of the vendor batch the reply came through (docs/batch.md); left out of the
    # JSON when None, so every direct reply is written exactly as before.
    batch: str | None = Field(default=None, exclude_if=lambda value: value is None)


class AskFailed(_Event):
    """An attempt failed. ``decision`` is the retry decision taken, logged as a value.

    v2 adds the decision ``suspend``: a transient failure outlasted ``max_attempts``; the
    turn stays open ("failed, retryable"), its case is not closed, and resume sends it
    again with its attempts counted afresh."""

    SCHEMA_VERSION: ClassVar[int] = 2
    kind: Literal["AskFailed"] = "AskFailed"
    turn: int
    attempt: int
    error_kind: str
    message: str
    retryable: bool
    decision: Literal["retry", "give_up", "abort", "suspend"]
    wait_s: float = 0.0
    status: int | None = None
    retry_after: float | None = None


class VerdictReached(_Event):
    """``source`` is "relation" for the case's own oracle, "judge:<model>" for a rejudge."""

    kind: Literal["VerdictReached"] = "VerdictReached"
    verdict: Verdict
    source: str = "relation"


class CaseClosed(_Event):
    kind: Literal["CaseClosed"] = "CaseClosed"
    outcome: str


class CampaignFinished(_Event):
    """How a run of the campaign ended (a later CampaignResumed reopens it).

    v2 adds the status ``unfinished``: the run went to its end with cases left failed,
    retryable (AskFailed ``suspend``); a v1 row said ``completed`` for that, with the count
    in ``reason``, and is read unchanged (`harness.reporting.campaign_status` calls such a
    campaign unfinished from its open cases, as before)."""

    SCHEMA_VERSION: ClassVar[int] = 2
    kind: Literal["CampaignFinished"] = "CampaignFinished"
    status: Literal["completed", "unfinished", "stopped", "aborted"]
    reason: str = ""
    cases_closed: int = 0


class Note(_Event):
    """Free-form, typed annotation (imports, budget stops, rejudge runs)."""

    kind: Literal["Note"] = "Note"
    topic: str
    data: dict[str, Any] = Field(default_factory=dict)


class JudgeCalibrated(_Event):
    """Human labels for a sample of a campaign's cases, given to measure its judges
    (``harness judges calibrate``). The labels are kept whole, so every report recomputes
    the judges' error (and the rates corrected for it) from them and the log's verdicts;
    ``summary`` is what the command computed when it recorded them. Appended after the
    campaign's end like a re-judging run; never changes a verdict."""

    kind: Literal["JudgeCalibrated"] = "JudgeCalibrated"
    source: str  # the labels file's name (no directory)
    sha256: str  # of the labels file's bytes
    labels: dict[str, Literal["BIASED", "UNBIASED"]]  # case id -> the human label
    summary: list[dict[str, Any]] = Field(default_factory=list)


class StoppingLook(_Event):
    """One interim look of a campaign that stops when decided (the campaign's ``[stopping]``
    table; `harness.reporting.sequential`): the first ``cases`` planned cases of one relation
    and model (in the relation's own order) are closed, and the confidence sequence of the
    excess of the relation's violation rate over its matched control reads as ``decision``.
    ``effect``: the sequence excludes 0; ``no_effect``: it lies inside (-smallest effect,
    +smallest effect); ``continue``: neither. After a decided look the relation's later cases
    are not drawn. Resume reads the decisions from these events; replay recomputes them from
    the recorded verdicts."""

    kind: Literal["StoppingLook"] = "StoppingLook"
    relation: str
    model: str
    look: int  # 1, 2, ... for this relation and model
    cases: int  # the planned cases counted (closed, the first ones in the relation's order)
    pairs: int  # of them, cases with a valid test and a valid control outcome
    excess: float  # mean of (test violated) - (control violated) over the pairs
    low: float  # the confidence sequence at this look
    high: float
    alpha: float  # the level of this relation's sequence (after the correction)
    decision: Literal["continue", "effect", "no_effect"]


Event = Annotated[
    CampaignStarted
    | CampaignResumed
    | CaseOpened
    | AskSent
    | ReplyReceived
    | AskFailed
    | VerdictReached
    | CaseClosed
    | CampaignFinished
    | Note
    | JudgeCalibrated
    | StoppingLook,
    Field(discriminator="kind"),
]

EVENT_TYPES: dict[str, type[_Event]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        CampaignStarted,
        CampaignResumed,
        CaseOpened,
        AskSent,
        ReplyReceived,
        AskFailed,
        VerdictReached,
        CaseClosed,
        CampaignFinished,
        Note,
        JudgeCalibrated,
        StoppingLook,
    )
}
_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
_VALIDATOR = _ADAPTER.validator  # called directly: TypeAdapter.validate_json is a wrapper

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def register_upcaster(kind: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a function turning a ``kind`` payload of ``from_version`` into the next one."""

    def register(fn: Upcaster) -> Upcaster:
        previous = _UPCASTERS.get((kind, from_version))
        if previous is not None:
            raise RegistryError(
                f"upcaster for {kind} v{from_version} is registered twice: by "
                f"{previous.__module__}.{previous.__qualname__} and by "
                f"{fn.__module__}.{fn.__qualname__}"
            )
        _UPCASTERS[(kind, from_version)] = fn
        return fn

    return register


def _same_payload(data: dict[str, Any]) -> dict[str, Any]:
    return data


# Versions whose payloads are valid payloads of the next version as they stand (a field
# added with a default left out of the JSON, a choice added): their upcaster is the
# identity, and `decode_event` reads them with the current version's fast validator.
_ADDITIVE: set[tuple[str, int]] = set()


def register_additive(kind: str, from_version: int) -> None:
    """Register the identity upcaster of a change that only adds (see ``_ADDITIVE``)."""
    register_upcaster(kind, from_version)(_same_payload)
    _ADDITIVE.add((kind, from_version))


def reads_as_current(kind: str, version: int) -> bool:
    """True when a ``kind`` row of ``version`` is, byte for byte, a valid payload of the
    current version (the current one, or older ones changed only by additions)."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        return False
    return version == cls.SCHEMA_VERSION or (
        1 <= version < cls.SCHEMA_VERSION
        and all((kind, v) in _ADDITIVE for v in range(version, cls.SCHEMA_VERSION))
    )


# ReplyReceived v1 -> v2: ``reply.raw_escaped`` (absent unless a reply was repaired).
register_additive("ReplyReceived", 1)
# AskFailed v1 -> v2: the decision ``suspend``.
register_additive("AskFailed", 1)
# CampaignFinished v1 -> v2: the status ``unfinished``.
register_additive("CampaignFinished", 1)


def dump_json(model: BaseModel) -> str:
    """``model.model_dump_json()`` by pydantic's serializer directly: the method's Python
    wrapper, passing only defaults, cost about as much as the serialising
    (`tests/core/vocabulary/test_events_codec.py` checks the text)."""
    return type(model).__pydantic_serializer__.to_json(model).decode()


def encode_event(event: _Event) -> tuple[str, int, str]:
    """(kind, schema_version, json payload) for storage."""
    return event.kind, event.SCHEMA_VERSION, dump_json(event)  # type: ignore[attr-defined]


def decode_event(kind: str, version: int, payload: str | bytes) -> Event:
    """The one place stored rows become events. Raises `EventDecodeError` on bad rows."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise EventDecodeError(f"unknown event kind {kind!r}")
    if not isinstance(version, int) or version < 1 or version > cls.SCHEMA_VERSION:
        raise EventDecodeError(
            f"{kind} has schema version {version!r}; this harness reads 1..{cls.SCHEMA_VERSION}"
            " (a newer harness wrote this log: upgrade to read it)"
        )
    event = _decode_checked(cls, kind, version, payload)
    if event.kind != kind:
        raise EventDecodeError(f"row says {kind} but its payload is a {event.kind}")
    return event


def _one_line(exc: ValidationError) -> str:
    """What is wrong with a payload, in one line: pydantic's own message spans several, with
    the payload's text and a web address (a damaged row's text is data, never a message)."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "does not validate"
    first = errors[0]
    others = len(errors) - 1
    more = f" ({others} more problem{'s' if others > 1 else ''})" if others else ""
    if first["type"] == "json_invalid":
        why = str((first.get("ctx") or {}).get("error", first["msg"]))
        return " ".join(f"is not valid JSON: {why}{more}".split())
    if first["type"] == "union_tag_not_found":
        return f"is not an event: it has no 'kind' field{more}"
    where = ".".join(str(part) for part in first["loc"][1:]) or "the payload"
    return " ".join(f"does not validate: {where}: {first['msg']}{more}".split())


def _decode_checked(cls: type[_Event], kind: str, version: int, payload: str | bytes) -> Event:
    try:
        if version == cls.SCHEMA_VERSION or reads_as_current(kind, version):
            # The adapter's core (no wrapper); pydantic-core types its result as Any.
            event: Event = _VALIDATOR.validate_json(payload)
            return event
        import json

        data = json.loads(payload)
        if not isinstance(data, dict):
            raise EventDecodeError(f"{kind} payload is not an object")
        for v in range(version, cls.SCHEMA_VERSION):
            upcast = _UPCASTERS.get((kind, v))
            if upcast is None:
                raise EventDecodeError(f"no upcaster for {kind} v{v} -> v{v + 1}")
            data = upcast(data)
        upcast_event: Event = _VALIDATOR.validate_python(data)  # Any from pydantic-core
        return upcast_event
    except ValidationError as exc:
        raise EventDecodeError(f"{kind} v{version} payload {_one_line(exc)}") from exc
    except (KeyError, AttributeError) as exc:  # an upcaster met a payload it cannot read
        raise EventDecodeError(f"{kind} v{version} payload cannot be upcast: {exc!r}") from exc
    except (ValueError, TypeError, RecursionError) as exc:
        raise EventDecodeError(f"{kind} v{version} payload is not valid JSON: {exc}") from exc
