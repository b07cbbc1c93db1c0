"""The five events of one imported BiasLens answer, encoded straight to their stored rows.

An import writes five events per answer (half a million for GPT-4o-mini's column). Building
each as a pydantic event and dumping it took about a third of the import's CPU, although
most of an event is the same for every case: the request of a question is the same in its
three runs, the request parameters and a reply's metadata are the same everywhere. Here the
pydantic models encode each distinct part once: a question's AskSent whole (per model), the
other events as the JSON around their one varying part (`_around`); each case's own values
(the Case, the verdict, the answer text) are dumped by their own models or pydantic_core's
serialiser, the one the models use. tests/test_biaslens_import_events.py checks, over
generated cases and answers, that the rows carry exactly `encode_event`'s output for the
pydantic events.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic_core import to_json

from harness.events import (
    AskSent,
    CaseClosed,
    CaseOpened,
    Event,
    ReplyReceived,
    VerdictReached,
    encode_event,
)
from harness.model import GenerationParams, Message, Reply, request_key
from harness.relation import Case, Outcome, Verdict
from harness.store.compact_templates import PayloadTemplate
from relations.biaslens.questionset import QType
from relations.biaslens.relations import BiasLensAnswer

# A stored row without its batch number and timestamp (the writer adds them):
# (campaign, case_id, seq, kind, schema_version, turn, attempt, payload).
EncodedRow = tuple[str, str, int, str, int, int | None, int | None, str]

_MARK = "\x00biaslens-import-part\x00"  # stands for the varying part in a template


def _json(value: Any) -> str:
    return to_json(value).decode()


def _around(event: Event, part: str) -> tuple[str, str]:
    """``event``'s stored JSON before and after ``part`` (the JSON of its one varying field,
    found exactly once)."""
    kind, _, whole = encode_event(event)
    if whole.count(part) != 1:
        raise AssertionError(f"{kind}: the varying part is not found exactly once")
    before, after = whole.split(part)
    return before, after


class ImportEncoder:
    """Encodes imported answers of one relation; one encoder per import (it caches asks)."""

    def __init__(
        self, relation: BiasLensAnswer, params: GenerationParams, *, templates: bool = False
    ) -> None:
        """``templates``: hand payloads over as `TemplatedPayload` (for a log of format 2;
        a format-1 log gains nothing from them and they cost a little to build)."""
        self.relation = relation
        self.params = params
        self.templates = templates
        mark = _json(_MARK)
        probe = Case(case_id="", relation="", model="", index=0, repeat=0, seed=0, data={})
        self._case = _around(CaseOpened(case=probe), probe.model_dump_json())
        # The reply's JSON around its text, as a template: log format 2 then splits a reply
        # without scanning its constant JSON (any store writes the payload text unchanged).
        self._reply_parts = _around(ReplyReceived(turn=0, reply=Reply(text=_MARK)), mark)
        self._reply = PayloadTemplate(self._reply_parts)
        verdict = Verdict(outcome=Outcome.HELD, reason=_MARK)
        self._verdict = _around(VerdictReached(verdict=verdict), verdict.model_dump_json())
        self._closed = {o.value: CaseClosed(outcome=o.value).model_dump_json() for o in Outcome}
        # Each case's rows; the schema versions come from the models.
        self._versions = {
            cls.__name__: cls.SCHEMA_VERSION
            for cls in (CaseOpened, AskSent, ReplyReceived, VerdictReached, CaseClosed)
        }

    @functools.lru_cache(maxsize=65_536)  # noqa: B019  (one encoder per import)
    def ask_sent(self, model: str, prompt: str, qtype: QType) -> str:
        """A question's AskSent, built and dumped by the models (its three runs share it; as
        a template without values, log format 2 splits it once)."""
        ask = self.relation.answer_ask(prompt, qtype)
        messages = [Message(role="user", content=ask.prompt)]
        sent = AskSent(
            turn=0,
            ask=ask,
            model=model,
            messages=messages,
            params=self.params,
            request_key=request_key(model, messages, self.params),
        )
        payload = sent.model_dump_json()
        return PayloadTemplate([payload]).fill([]) if self.templates else payload

    def _reply_text(self, answer: str) -> str:
        if self.templates:
            return self._reply.fill([answer])
        before, after = self._reply_parts
        return before + answer + after

    def rows(self, campaign: str, case: Case, answer: str, verdict: Verdict) -> list[EncodedRow]:
        """The rows of CaseOpened, AskSent, ReplyReceived, VerdictReached and CaseClosed of
        an answered case (its data has no "prompt": the imported prompt is the bare question)."""
        data = case.data
        case_id, v = case.case_id, self._versions
        ask = self.ask_sent(case.model, data["question"], QType.parse(data["type"]))
        case_before, case_after = self._case
        verdict_before, verdict_after = self._verdict
        return [
            (
                campaign,
                case_id,
                1,
                "CaseOpened",
                v["CaseOpened"],
                None,
                None,
                case_before + case.model_dump_json() + case_after,
            ),
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
                verdict_before + verdict.model_dump_json() + verdict_after,
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
