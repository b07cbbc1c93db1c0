"""The five events of one imported BiasLens answer, encoded straight to their stored rows.

An import writes five events per answer (half a million for GPT-4o-mini's column). Building
each as a pydantic event and dumping it would repeat the same work for every case, although
most of an event is the same for every case: the request of a question is the same in its
three runs, the request parameters and a reply's metadata are the same everywhere. Here the
pydantic models encode each event once with marker values in its varying fields, and each
case fills that JSON (`_Slots`) with its own values dumped by pydantic_core's serialiser,
the one the models use: a question's AskSent (its prompt, twice, and its request key), the
verdict's reason and evidence, the answer text.
The Case is not built at all: CaseOpened is a template too, with holes for the case's fields
(building and validating one would cost as much as encoding all five events). A verdict
shared by many answers (`relations.biaslens.relations._decided`) is encoded once.
tests/families/biaslens/test_biaslens_import_events.py checks, over generated cases and answers,
that the rows carry exactly `encode_event`'s output for the pydantic events.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pydantic_core import to_json

from harness.family_api import (
    AskSent,
    Case,
    CaseClosed,
    CaseOpened,
    EncodedEvent,
    Event,
    GenerationParams,
    Message,
    Outcome,
    Reply,
    ReplyReceived,
    Verdict,
    VerdictReached,
    dump_json,
    encode_event,
    request_key,
)
from relations.biaslens.questionset import QType
from relations.biaslens.relations import BiasLensAnswer

ROWS_PER_ANSWER = 5  # CaseOpened, AskSent, ReplyReceived, VerdictReached, CaseClosed

# Stand for the varying parts in a template (no real text holds a NUL between these words).
_MARK = "\x00biaslens-import-part\x00"
_OTHER_MARK = "\x00biaslens-import-other-part\x00"
# A CaseOpened's holes: its case's fields, in their order. Strings are marked by strings;
# the integers by negative numbers no case has, none the prefix of another.
_CASE_MARKS = {
    "case_id": "\x00biaslens-import-case-id\x00",
    "relation": "\x00biaslens-import-relation\x00",
    "model": "\x00biaslens-import-model\x00",
    "index": -7_130_000_001,
    "repeat": -7_130_000_002,
    "seed": -7_130_000_003,
    "data": {"\x00biaslens-import-data\x00": 0},
}
_VERDICTS_KEPT = 4_096  # encoded verdicts kept by identity (the shared ones: a few hundred)


def _json(value: Any) -> str:
    return to_json(value).decode()


class _Slots:
    """A text with named holes: the text cut at every occurrence of each hole's marker text,
    filled by joining the pieces with each hole's value. Built once per template, so a fill
    never scans the values it inserts."""

    def __init__(self, text: str, marks: dict[str, str]) -> None:
        by_mark = {mark: name for name, mark in marks.items()}
        parts = re.split("(" + "|".join(map(re.escape, by_mark)) + ")", text)
        self.pieces = parts[0::2]
        self.names = [by_mark[mark] for mark in parts[1::2]]
        missing = set(marks) - set(self.names)
        if missing:
            raise AssertionError(f"no place for {sorted(missing)} in the template")

    def fill(self, values: dict[str, str]) -> str:
        out = [self.pieces[0]]
        for name, piece in zip(self.names, self.pieces[1:], strict=True):
            out.append(values[name])
            out.append(piece)
        return "".join(out)


def _around(event: Event, part: str) -> tuple[str, str]:
    """``event``'s stored JSON before and after ``part`` (the JSON of its one varying field,
    found exactly once): a `_Slots` of one hole."""
    kind, _, whole = encode_event(event)
    slots = _Slots(whole, {"part": part})
    if len(slots.names) != 1:
        raise AssertionError(f"{kind}: the varying part is not found exactly once")
    before, after = slots.pieces
    return before, after


class ImportEncoder:
    """Encodes imported answers of one relation; one encoder per import (it caches asks)."""

    def __init__(self, relation: BiasLensAnswer, params: GenerationParams) -> None:
        self.relation = relation
        self.params = params
        mark = _json(_MARK)
        probe = Case(**_CASE_MARKS)  # type: ignore[arg-type]
        opened = _Slots(
            encode_event(CaseOpened(case=probe))[2],
            {name: _json(value) for name, value in _CASE_MARKS.items()},
        )
        # Joined in the order of the Case's fields (a str.format by name cost 4x as much).
        if tuple(opened.names) != tuple(_CASE_MARKS):
            raise AssertionError(f"CaseOpened's fields moved: {opened.names}")
        self._case_pieces = tuple(opened.pieces)
        self._relation_json = _json(relation.name)
        # VerdictReached payloads by the verdict's identity, the verdict held so that its id
        # is not reused while its entry lives.
        self._reached: dict[int, tuple[Verdict, str]] = {}
        # The reply's JSON around its text.
        self._reply_parts = _around(ReplyReceived(turn=0, reply=Reply(text=_MARK)), mark)
        # A VerdictReached per outcome, with holes for the reason and the evidence.
        evidence = {_OTHER_MARK: 0}
        self._verdicts = {
            o: _Slots(
                encode_event(
                    VerdictReached(verdict=Verdict(outcome=o, reason=_MARK, evidence=evidence))
                )[2],
                {"reason": mark, "evidence": _json(evidence)},
            )
            for o in Outcome
        }
        self._closed = {o.value: CaseClosed(outcome=o.value).model_dump_json() for o in Outcome}
        # Each case's rows; the schema versions come from the models.
        self._versions = {
            cls.__name__: cls.SCHEMA_VERSION
            for cls in (CaseOpened, AskSent, ReplyReceived, VerdictReached, CaseClosed)
        }

    @functools.lru_cache(maxsize=1024)  # noqa: B019  (one encoder per import)
    def _ask_template(self, model: str, type_name: str) -> _Slots:
        """A question type's AskSent to ``model``, built and dumped by the models, with holes
        for the prompt and the request key."""
        ask = self.relation.answer_ask(_MARK, QType.parse(type_name))
        sent = AskSent(
            turn=0,
            ask=ask,
            model=model,
            messages=[Message(role="user", content=ask.prompt)],
            params=self.params,
            request_key=_OTHER_MARK,
        )
        return _Slots(dump_json(sent), {"prompt": _json(_MARK), "key": _json(_OTHER_MARK)})

    @functools.lru_cache(maxsize=8_192)  # noqa: B019  (a question's runs: files read one after another)
    def ask_sent(self, model: str, prompt: str, type_name: str) -> str:
        """A question's AskSent (its three runs share it)."""
        messages = [Message(role="user", content=prompt)]
        key = request_key(model, messages, self.params)
        return self._ask_template(model, type_name).fill(
            {"prompt": _json(prompt), "key": _json(key)}
        )

    def _reply_text(self, answer: str) -> str:
        before, after = self._reply_parts
        return before + answer + after

    def _verdict_reached(self, verdict: Verdict) -> str:
        kept = self._reached.get(id(verdict))
        if kept is not None and kept[0] is verdict:
            return kept[1]
        reached = self._verdicts[verdict.outcome].fill(
            {"reason": _json(verdict.reason), "evidence": _json(verdict.evidence)}
        )
        if len(self._reached) >= _VERDICTS_KEPT:
            self._reached.clear()
        self._reached[id(verdict)] = (verdict, reached)
        return reached

    def rows(self, campaign: str, case: Case, answer: str, verdict: Verdict) -> list[EncodedEvent]:
        """The rows of CaseOpened, AskSent, ReplyReceived, VerdictReached and CaseClosed of
        an answered case (its data has no "prompt": the imported prompt is the bare question)."""
        return self.answer_rows(
            campaign,
            case.case_id,
            case.model,
            case.index,
            case.repeat,
            case.seed,
            case.data,
            answer,
            verdict,
            relation=case.relation,
        )

    def answer_rows(
        self,
        campaign: str,
        case_id: str,
        model: str,
        index: int,
        repeat: int,
        seed: int,
        data: dict[str, Any],
        answer: str,
        verdict: Verdict,
        relation: str | None = None,
    ) -> list[EncodedEvent]:
        """`rows` of the case these fields make (the relation's own), without building it:
        the fields must be of the Case's types (str, int, a dict of JSON values), as the
        importer derives them. ``relation``: the encoder's own unless named."""
        v = self._versions
        ask = self.ask_sent(model, data["question"], data["type"])
        p0, p1, p2, p3, p4, p5, p6, p7 = self._case_pieces
        opened = "".join(
            (
                p0,
                _json(case_id),
                p1,
                self._relation_json if relation is None else _json(relation),
                p2,
                _json(model),
                p3,
                str(index),
                p4,
                str(repeat),
                p5,
                str(seed),
                p6,
                _json(data),
                p7,
            )
        )
        return [
            (campaign, case_id, 1, "CaseOpened", v["CaseOpened"], None, None, opened),
            (campaign, case_id, 2, "AskSent", v["AskSent"], 0, 1, ask),
            (
                campaign,
                case_id,
                3,
                "ReplyReceived",
                v["ReplyReceived"],
                0,
                1,
                self._reply_text(_json(answer)),
            ),
            (
                campaign,
                case_id,
                4,
                "VerdictReached",
                v["VerdictReached"],
                None,
                None,
                self._verdict_reached(verdict),
            ),
            (
                campaign,
                case_id,
                5,
                "CaseClosed",
                v["CaseClosed"],
                None,
                None,
                self._closed[verdict.outcome.value],
            ),
        ]
