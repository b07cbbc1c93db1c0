"""The quick path of ``replay --verify``: a case whose rows are, byte for byte, what today's
code writes is verified without decoding its asks and verdict or dumping them back to JSON.

What for: decoding every event with pydantic and dumping both sides to JSON to compare them
was most of a replay's time. Here the recorded payload of each AskSent is compared, as a
string, with the JSON of the ask and the request today's code derives (the same
serialisation `verify_case` compares after decoding), and the recorded VerdictReached and
CaseClosed with the events today's code would write. Equal strings are equal asks,
requests and verdicts: decoding a payload and dumping it again gives the same text.

Only the plain shape of a case is modelled: one attempt per turn answered, no failure, no
re-judging, one verdict, closed, every row of the current schema version. Anything else, and
any difference at all, answers None: `harness.verifying.replay.verify_case` then decides on the
decoded events, so differences are listed exactly as before and the counts are the same.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.verifying._request_text import RequestText
from harness.vocabulary.errors import StoreError
from harness.vocabulary.events import (
    EVENT_TYPES,
    CaseClosed,
    CaseOpened,
    ReplyReceived,
    dump_json,
    reads_as_current,
)
from harness.vocabulary.model import GenerationParams
from harness.vocabulary.refusal import as_recorded
from harness.vocabulary.relation import (
    Case,
    Outcome,
    Relation,
    Transcript,
    Turn,
    Verdict,
    seed_deriver,
)

_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]


class Row(NamedTuple):
    """One stored event of a case, undecoded (a tuple: built for every row of the log)."""

    gseq: int
    seq: int
    kind: str
    version: int
    turn: int | None
    attempt: int | None
    ts: float
    payload: str

    @property
    def encoded(self) -> tuple[str, int, str]:
        """What `decode_event` takes."""
        return self.kind, self.version, self.payload


def raw_cases(
    connection: Any, campaign: str, shown: str, first: str | None = None, end: str | None = None
) -> Iterator[tuple[str, list[Row]]]:
    """Each case's rows in per-case order, undecoded, one case at a time (``connection``:
    an `EventLog`'s, SQLite's or PostgreSQL's; ``shown``: the log named in errors), for the
    case ids in [first, end) (None: unbounded)."""
    where, args = "campaign = ? AND case_id != ''", [campaign]
    if first is not None:
        where, args = where + " AND case_id >= ?", [*args, first]
    if end is not None:
        where, args = where + " AND case_id < ?", [*args, end]
    sql = (
        "SELECT case_id, gseq, seq, kind, schema_version, turn, attempt, ts, payload"
        f" FROM events WHERE {where} ORDER BY case_id, seq"
    )
    current: str | None = None
    bucket: list[Row] = []
    make = Row._make  # from the row's slice: no per-row unpacking and Python-level __new__
    try:
        for values in connection.execute(sql, tuple(args)):
            if values[0] != current:
                if current is not None:
                    yield current, bucket
                current, bucket = values[0], []
            bucket.append(make(values[1:]))
    except sqlite3.Error as exc:
        raise StoreError(f"reading {shown} failed: {exc}") from exc
    if current is not None:
        yield current, bucket


@dataclass(frozen=True)
class QuickCounts:
    asks: int
    verdicts: int = 1


def step_safely(relation: Relation, case: Case, transcript: Transcript) -> object:
    """``relation.step`` as the engine calls it: a relation bug becomes an INVALID verdict."""
    try:
        return relation.step(case, transcript)
    except Exception as exc:
        return Verdict(
            outcome=Outcome.INVALID,
            reason=f"relation raised {type(exc).__name__}: {exc}",
            evidence={"relation_error": True},
        )


def _ask_matches(payload: str, turn: int, ask_json: str, request_json: str) -> bool:
    prefix = f'{{"kind":"AskSent","turn":{turn},"attempt":1,"ask":{ask_json},"model":'
    if not payload.startswith(prefix) or payload[len(prefix) : len(prefix) + 1] != '"':
        return False
    try:
        _, end = _scan_string(payload, len(prefix) + 1)  # the model's name, a JSON string
    except ValueError:
        return False
    messages = f',"messages":{request_json},'
    if not payload.startswith(messages, end):
        return False
    # The rest is not compared (verify never did), but it must decode as the exact path
    # decodes it: a row it would reject is not passed here.
    return tail_decodes(payload[end + len(messages) :])


# ``"params":P,"request_key":"K"}`` with K plain hex, as the engine writes it (a sha256).
_KEY_HEAD = ',"request_key":"'
_HEX_KEY = re.compile(r'[0-9a-f]{1,128}"}\Z')
_PARAMS_HEAD = '"params":'
# The engine writes each request's own sampling seed into its params: the params texts of a
# model differ by that number only. The integer value of a "seed" key, as JSON writes it.
_SEED = '"seed":'
_SEED_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?=[,}])")
_SEED_VALUE = re.compile(_SEED + _SEED_INT.pattern)
# Params texts, their seeds set to 0, seen to decode in a tail with a hex key: one pydantic
# call per model and answer shape, not per ask.
_DECODED_SHAPES: set[str] = set()
_MAX_SHAPES = 4096  # beyond this many distinct shapes each tail is validated on its own


def _params_shape(tail: str) -> str | None:
    """P of a tail ``"params":P,"request_key":"K"}`` (K hex, no backslash anywhere) with
    each "seed" value written as 0, or None for any other tail."""
    key = tail.rfind(_KEY_HEAD)
    if key < 0 or not tail.startswith(_PARAMS_HEAD) or "\\" in tail:
        return None
    if _HEX_KEY.match(tail, key + len(_KEY_HEAD)) is None:
        return None
    params = tail[len(_PARAMS_HEAD) : key]
    seed = params.find(_SEED)
    if seed < 0:
        return params
    if params.find(_SEED, seed + 1) >= 0:  # more than one: each of them
        return _SEED_VALUE.sub(_SEED + "0", params)
    found = _SEED_INT.match(params, seed + len(_SEED))
    return params if found is None else params[: seed + len(_SEED)] + "0" + params[found.end() :]


def tail_decodes(tail: str) -> bool:
    """True when ``"{" + tail`` decodes as the fields after an AskSent's messages (with
    AskSent's own field types and its forbidding of other keys).

    Two tails of one shape (`_params_shape`) both decode or both fail, so the pydantic call
    is made once per shape. Without a backslash every quote opens or closes a string, so the
    two texts split into the same JSON tokens and differ only in the digits of (a) the key,
    a run of hex digits after ``"request_key":"``: inside that string, or, if P left a string
    open, right after one, where nothing may follow; and (b) integer values right after a
    ``"seed":`` string: if that string is a key, its value is GenerationParams.seed (any int
    or None) or sits in a dict of any values (an answer shape's ``verdict_schema``; no other
    model of the params has a "seed" field); if it is not a key, neither text is JSON.
    `tests/core/verifying/test_replay_quick_tamper.py` checks the field types this rests on.
    """
    shape = _params_shape(tail)
    if shape is not None and shape in _DECODED_SHAPES:
        return True
    try:
        _AskTail.__pydantic_validator__.validate_json("{" + tail)
    except ValidationError:
        return False
    if shape is not None and len(_DECODED_SHAPES) < _MAX_SHAPES:
        _DECODED_SHAPES.add(shape)
    return True


class _AskTail(BaseModel):
    """The fields of an AskSent payload after its messages, typed as `AskSent` types them."""

    model_config = ConfigDict(extra="forbid")
    params: GenerationParams
    request_key: str


def quick_verify(
    rows: Sequence[Row],
    relations: dict[str, Relation],
    campaign_seed: int,
    dressed: frozenset[str] = frozenset(),
) -> QuickCounts | None:
    """The counts of a case verified without a difference, or None (see the module).
    ``dressed``: models whose requests carry a system prompt or template (`ModelSpec.dress`):
    their cases take the exact path, which builds requests as the engine does."""
    if len(rows) < 3 or rows[0].kind != "CaseOpened":
        return None
    versions = _CURRENT_VERSION
    for r in rows:
        if r.version != versions.get(r.kind, r.version) and not reads_as_current(r.kind, r.version):
            return None
    closing, verdict_row = rows[-1], rows[-2]
    if closing.kind != "CaseClosed" or verdict_row.kind != "VerdictReached":
        return None
    sent, received = _turn_rows(rows[1:-2])
    if sent is None or received is None:
        return None
    opened = _decoded(CaseOpened, rows[0].payload)
    if opened is None:
        return None
    case = opened.case
    if case.model in dressed:
        return None
    relation = relations.get(case.relation)
    if relation is None:
        return None
    seed = _seed_of(campaign_seed, case.relation)(case.index)
    try:
        data = as_recorded(case.data, relation.make_case(case.index, seed))
    except Exception:
        return None
    if opened_json(_with(case, seed, data)) != rows[0].payload:
        return None
    return _steps(case, relation, sent, received, verdict_row, closing)


def _turn_rows(middle: Sequence[Row]) -> tuple[list[Row], list[Row]] | tuple[None, None]:
    """The AskSent and the ReplyReceived row of each turn 0..n-1 (one attempt each, the ask
    before its reply; turns may interleave, as asks of one step do), or (None, None)."""
    n, odd = divmod(len(middle), 2)
    if odd:
        return None, None
    sent: list[Row | None] = [None] * n
    received: list[Row | None] = [None] * n
    for r in middle:
        turn = r.turn
        if r.attempt != 1 or turn is None or not 0 <= turn < n or received[turn] is not None:
            return None, None
        if r.kind == "AskSent" and sent[turn] is None:
            sent[turn] = r
        elif r.kind == "ReplyReceived" and sent[turn] is not None:
            received[turn] = r
        else:
            return None, None
    # 2n rows, at most one of each kind per turn, none missing: every slot is filled.
    return sent, received  # type: ignore[return-value]


# Each event kind's current schema version (a row of another kind is not checked here).
_CURRENT_VERSION: dict[str, int] = {kind: cls.SCHEMA_VERSION for kind, cls in EVENT_TYPES.items()}


@functools.lru_cache(maxsize=256)  # one per (campaign seed, relation) of a log
def _seed_of(campaign_seed: int, relation: str) -> Callable[[object], int]:
    """``derive_seed(campaign_seed, relation, index)`` as a function of the index."""
    return seed_deriver(campaign_seed, relation)


# pydantic's own calls, without the Python wrappers of ``model_dump_json`` and
# ``model_validate_json`` around them (`harness.vocabulary.events.dump_json`): with the defaults
# those wrappers pass, the same call, and the wrappers were about half the cost of each dump and
# decode of the quick path.


_E = TypeVar("_E", bound=BaseModel)


def _decoded(cls: type[_E], payload: str) -> _E | None:
    """``payload`` (a row of the current schema version) as a ``cls``, or None when it does
    not validate: the exact path then decodes it and raises `EventDecodeError` as before."""
    try:
        decoded: _E = cls.__pydantic_validator__.validate_json(payload)  # Any: pydantic-core
        return decoded
    except ValidationError:
        return None


# The payloads of the three events a plain case's ends are compared with, written around the
# JSON of their one variable field: the event models dump their fields in declared order and
# a nested model as its own ``model_dump_json`` (`tests/core/verifying/test_replay_quick.py` checks
# each against the event model's dump). Saves constructing and dumping one wrapper per event.
_OPENED_HEAD = '{"kind":"CaseOpened","case":'
_VERDICT_HEAD = '{"kind":"VerdictReached","verdict":'
_VERDICT_TAIL = ',"source":"relation"}'


def opened_json(case: Case) -> str:
    """``CaseOpened(case=case).model_dump_json()``."""
    return _OPENED_HEAD + dump_json(case) + "}"


def verdict_json(verdict: Verdict) -> str:
    """``VerdictReached(verdict=verdict).model_dump_json()`` (source: the relation)."""
    return _VERDICT_HEAD + dump_json(verdict) + _VERDICT_TAIL


@functools.lru_cache(maxsize=64)  # keyed by the outcome, the event's only field
def closed_json(outcome: str) -> str:
    """``CaseClosed(outcome=outcome).model_dump_json()``."""
    return CaseClosed(outcome=outcome).model_dump_json()


def _with(case: Case, seed: int, data: dict[str, object]) -> Case:
    """``case.model_copy(update={"seed": seed, "data": data})``, without the method's
    Python-level bookkeeping (a copy of the field dict and the three pydantic slots; about
    half its time): only dumped, to be compared with the recorded CaseOpened."""
    copy = _new_case(Case)
    _set(copy, "__dict__", {**case.__dict__, "seed": seed, "data": data})
    _set(copy, "__pydantic_fields_set__", {*case.__pydantic_fields_set__, "seed", "data"})
    _set(copy, "__pydantic_extra__", None)
    _set(copy, "__pydantic_private__", None)
    return copy


_new_case = Case.__new__
_set = object.__setattr__


def _steps(
    case: Case,
    relation: Relation,
    sent: list[Row],
    received: list[Row],
    verdict_row: Row,
    closing: Row,
) -> QuickCounts | None:
    transcript = Transcript()
    requests = RequestText()  # each turn's messages written once, not at every later prefix
    asked = 0
    answered_at = 0  # seq of the last reply of the steps before: a step is asked after it
    while True:
        result = step_safely(relation, case, transcript)
        if isinstance(result, Verdict):
            if asked != len(sent):
                return None
            if verdict_json(result) != verdict_row.payload:
                return None
            if closed_json(result.outcome.value) != closing.payload:
                return None
            return QuickCounts(asks=asked)
        if not isinstance(result, list) or not result or asked + len(result) > len(sent):
            return None
        new: list[Turn] = []
        replied_at = answered_at
        for number, ask in enumerate(result, asked):
            if sent[number].seq < answered_at:  # reordered: the exact path lists it
                return None
            if not _ask_matches(sent[number].payload, number, dump_json(ask), requests.json(ask)):
                return None
            reply = _decoded(ReplyReceived, received[number].payload)
            if reply is None or reply.turn != number or reply.attempt != 1:
                return None
            new.append(Turn(index=number, ask=ask, reply=reply.reply.text))
            replied_at = max(replied_at, received[number].seq)
        answered_at = replied_at
        transcript = transcript.extend(new)
        for turn in new:
            requests.add(turn)
        asked += len(result)
