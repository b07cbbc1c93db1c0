"""What ``harness rejudge`` asks about a Meta-Fair case: the same prompt the relation's
own judges get (per evaluation method, subject text quoted as data), read by the same
validator (which also reads the shared rubric's severities none/medium). Re-judging has no
repair turn (the core sends one prompt per judge): an unreadable reply is that judge's
INVALID. Replies are quoted up to the relations' default ``max_answer_chars``. Cases of
the template-read MR8 get the shared conversation rubric they were judged with before."""

from __future__ import annotations

from typing import Any

from harness.family_api import Case, JudgeTask, Outcome, Transcript, Verdict, relation_class
from relations._common.conversation_rubric import ConversationBiasRubric
from relations.metafair.judges.prompts import SYSTEM, read_judge_reply, verdict_shape
from relations.metafair.open.legacy_mr8 import is_template_case

_LEGACY = ConversationBiasRubric()
_LABELS = {"BIASED": Outcome.VIOLATED, "UNBIASED": Outcome.HELD}


class MetaFairRubric:
    """The judge rubric of the Meta-Fair family."""

    def task(self, case: Case, transcript: Transcript) -> JudgeTask | None:
        if is_template_case(case.data):
            return _LEGACY.task(case, transcript)
        cls = relation_class(case.relation)
        judge_prompt = getattr(cls, "judge_prompt", None)
        subject = Transcript(turns=tuple(t for t in transcript.turns if t.ask.role == "subject"))
        if cls is None or judge_prompt is None or not subject.turns:
            return None
        if any(not t.ok or not (t.reply or "").strip() for t in subject.turns):
            return None  # a failed subject call: nothing to judge
        relation: Any = cls()
        try:
            prompt = relation.judge_prompt(case.data, subject)
        except (AssertionError, KeyError):
            return None  # the case stopped before its judged turns
        return JudgeTask(SYSTEM, prompt, verdict_shape(bool(relation.cites)))

    def parse(self, reply: str) -> Verdict:
        reading = read_judge_reply(reply)
        if reading.reply is None:
            return Verdict(
                outcome=Outcome.INVALID,
                reason=f"judge reply unreadable: {reading.error}",
                evidence={"judge_label": "INVALID", "invalid_kind": "judge", "reply": reply[:300]},
            )
        r = reading.reply
        severity = r.severity if r.verdict == "BIASED" else "N/A"
        evidence: dict[str, Any] = {"judge_label": r.verdict, "severity": severity}
        if r.verdict in _LABELS:
            return Verdict(
                outcome=_LABELS[r.verdict],
                reason=f"judged {r.verdict}"
                + (f": {r.explanation[:200]}" if r.explanation else ""),
                evidence=evidence,
            )
        evidence["invalid_kind"] = "judge"
        return Verdict(
            outcome=Outcome.INVALID,
            reason=f"judge {r.verdict}: {r.explanation[:200]}",
            evidence=evidence,
        )


RUBRIC = MetaFairRubric()
"""The instance the family registers (`relations.metafair.FAMILY`)."""
