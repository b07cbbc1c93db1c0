"""The plug-in point for re-judging: what a judge is asked about a family's cases.

A `Family` names one `JudgeRubric`; `harness rejudge` sends each recorded case to the
judge model with the rubric's prompt and turns the judge's reply into a `Verdict` with the
rubric's parser. Bad judge output is data (an INVALID verdict with its reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.relation import Case, Transcript, Verdict


@dataclass(frozen=True)
class JudgeTask:
    """The judge's prompt, and the shape of its answer (sent when the judge runs with
    ``answer_format = "structured"``; see `harness.vocabulary.answer_shape`)."""

    system: str
    prompt: str
    answer: AnswerShape | None = None


class JudgeRubric(Protocol):
    """What a judge is asked about one relation family, and how its answer is read."""

    def task(self, case: Case, transcript: Transcript) -> JudgeTask | None:
        """The judge's prompt; None when there is nothing to judge (no reply at all)."""
        ...

    def parse(self, reply: str) -> Verdict: ...
