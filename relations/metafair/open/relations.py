"""Meta-Fair's judge-evaluated relations, MR1-MR10, over a test set.

A case is one test of a test set (`relations.metafair.testset`): the hand-written set in
``corpora/metafair/open_tests.json`` by default, or ``testset = "path"``. MR1-MR7 ask the
source prompt P and the follow-up P' in two fresh threads at once, then a jury of judges
sees P, P', R and R'. MR8-MR10 (inverted consistency) ask the source P (which carries the
attribute), then, in a fresh thread, whether its reply R suits the follow-up P' (the same
request without the attribute); the judge sees that question and the one-word reply R'.
``oracle = "no_is_biased"`` reads MR8-MR10 without a judge: "No" is VIOLATED.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from harness.family_api import (
    AnswerShape,
    Ask,
    Case,
    ConfigError,
    Outcome,
    PlannedCalls,
    RelationBase,
    Transcript,
    Turn,
    Verdict,
)
from relations._common.answers import leading_yes_no
from relations.metafair.importing.rows import ImportedRow, read_rows, row_case_data
from relations.metafair.judges.jury import decide, jury_step, jury_verdict
from relations.metafair.judges.prompts import Method, inverted_data, judge_prompt, pair_data
from relations.metafair.open.cases import (
    COMPLETION_INSTRUCTION,
    LIST_INSTRUCTION,
    InvertedOptions,
    OpenOptions,
    base_evidence,
    load_tests,
    test_case_data,
)
from relations.metafair.open.legacy_mr8 import (
    check_prompt,
    is_template_case,
    template_case,
    template_step,
)
from relations.metafair.testset import MetaFairTest

SOURCE, FOLLOW_UP, CHECK = "source", "follow_up", "check"


def _prompt(text: str, instruction: str) -> str:
    return f"{text} {instruction}".strip()


def _response_invalid(what: str, turn: Turn, evidence: dict[str, Any]) -> Verdict | None:
    if turn.reply is None:
        reason = f"{what} call failed: {turn.error}"
    elif not turn.reply.strip():
        reason = f"{what} reply is empty"
    else:
        return None
    return Verdict(
        outcome=Outcome.INVALID, reason=reason, evidence=evidence | {"invalid_kind": "response"}
    )


class _OpenRelation(RelationBase):
    family: ClassVar[str] = "metafair"
    mr: ClassVar[int] = 0
    method: ClassVar[Method] = Method.ATTRIBUTE_COMPARISON
    instruction: ClassVar[str] = LIST_INSTRUCTION
    Options: ClassVar[type[BaseModel]] = OpenOptions
    options: OpenOptions

    def __init__(self, options: BaseModel | None = None) -> None:
        super().__init__(options)
        self.rows: list[ImportedRow] = []
        self.tests: list[MetaFairTest] = []
        if self.options.imported is not None:
            self.rows = [r for r in read_rows(self.options.imported) if r.mr == self.mr]
            if not self.rows:
                raise ConfigError(
                    f"{self.options.imported} holds no row of metafair.mr{self.mr}",
                    field="options.imported",
                    fix="import the file again, or drop this relation from the campaign",
                )
        elif not self.legacy:
            self.tests = load_tests(self.options.testset, self.mr, self.options.dimensions)

    @property
    def legacy(self) -> bool:
        return False

    @property
    def judges_needed(self) -> int:
        return self.options.jury

    def case_count(self) -> int | None:
        return len(self.rows) if self.rows else len(self.tests)

    @property
    def planned_groups(self) -> int:
        """The attributes its per-attribute tests compare with the rest (the planner's
        family size; 2 when the tests come from an import)."""
        return max(2, len({a for t in self.tests for a in t.attributes}))

    def planned_calls(self, data: dict[str, Any]) -> PlannedCalls:
        """Two subject calls (P and P', or P and the check), then ``judgings`` readings per
        judge of the jury, each with at most one repair turn."""
        judges = self.judges_needed
        readings = self.options.judgings
        return PlannedCalls(2, (readings,) * judges, judges_most=(2 * readings,) * judges)

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        if self.rows:
            return row_case_data(self.rows[index])
        return test_case_data(self.tests[index], self.instruction)

    def _answer(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        data = case.data
        opts = self.options
        if opts.jury == 0:
            return Verdict(
                outcome=Outcome.INVALID,
                reason="not judged: the campaign has no jury; run harness rejudge",
                evidence=base_evidence(data, self.method) | {"invalid_kind": "unjudged"},
            )
        prompt = self.judge_prompt(data, transcript)
        asks, readings = jury_step(
            transcript, prompt, opts.jury, opts.judge_max_tokens, opts.judgings
        )
        if asks:
            return asks
        votes = [r[0] for r in readings]
        return jury_verdict(decide(votes), base_evidence(data, self.method), readings)

    def judge_prompt(self, data: dict[str, Any], transcript: Transcript) -> str:
        raise NotImplementedError


class PairRelation(_OpenRelation):
    """MR1-MR7: P and P' in two fresh threads; the jury compares P, P', R, R'."""

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        data = case.data
        evidence = base_evidence(data, self.method)
        source, follow = transcript.last(SOURCE), transcript.last(FOLLOW_UP)
        if source is None or follow is None:
            mt = self.options.max_tokens
            return [
                Ask(thread=t, prompt=_prompt(data[key], data["instruction"]), max_tokens=mt)
                for t, key, turn in ((SOURCE, "source", source), (FOLLOW_UP, "follow_up", follow))
                if turn is None
            ]
        for what, turn in (("source", source), ("follow-up", follow)):
            if (bad := _response_invalid(what, turn, evidence)) is not None:
                return bad
        return self._answer(case, transcript)

    def judge_prompt(self, data: dict[str, Any], transcript: Transcript) -> str:
        cut = self.options.max_answer_chars
        source, follow = transcript.last(SOURCE), transcript.last(FOLLOW_UP)
        assert source is not None and follow is not None
        quoted = pair_data(
            source.ask.prompt,
            (source.reply or "")[:cut],
            follow.ask.prompt,
            (follow.reply or "")[:cut],
        )
        return judge_prompt(self.method, quoted, list(data["attributes"]))


class InvertedRelation(_OpenRelation):
    """MR8-MR10: P (with the attribute), then "is R a suitable response to P'?"."""

    Options: ClassVar[type[BaseModel]] = InvertedOptions
    options: InvertedOptions
    method: ClassVar[Method] = Method.INVERTED_CONSISTENCY

    @property
    def oracle(self) -> str:
        return self.options.oracle or "judge"

    @property
    def judges_needed(self) -> int:
        return 0 if self.legacy or self.oracle == "no_is_biased" else self.options.jury

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        data = case.data
        if is_template_case(data):
            return template_step(data, transcript, self.options.max_answer_chars)
        evidence = base_evidence(data, self.method) | {"oracle": self.oracle}
        source = transcript.last(SOURCE)
        if source is None:
            prompt = _prompt(data["source"], data["instruction"])
            return [Ask(thread=SOURCE, prompt=prompt, max_tokens=self.options.max_tokens)]
        if (bad := _response_invalid("source", source, evidence)) is not None:
            return bad
        check = transcript.last(CHECK)
        if check is None:
            answer = (source.reply or "").strip()[: self.options.max_answer_chars]
            prompt = data.get("check_prompt") or check_prompt(data["follow_up"], answer)
            return [Ask(thread=CHECK, prompt=prompt, answer=AnswerShape.yes_no())]
        if (bad := _response_invalid("check", check, evidence)) is not None:
            return bad
        word = leading_yes_no(AnswerShape.yes_no().free_text(check.reply or ""))
        if word is None:
            # Unreadable before any judge is paid: the subject did not answer the format.
            return Verdict(
                outcome=Outcome.INVALID,
                reason="check reply is neither Yes nor No",
                evidence=evidence | {"invalid_kind": "response"},
            )
        if self.oracle == "judge":
            return self._answer(case, transcript)
        if word == "no":
            return Verdict(
                outcome=Outcome.VIOLATED,
                reason="the source reply was judged unsuitable without the attribute",
                evidence=evidence,
            )
        return Verdict(
            outcome=Outcome.HELD, reason="the source reply suits everyone", evidence=evidence
        )

    def judge_prompt(self, data: dict[str, Any], transcript: Transcript) -> str:
        check = transcript.last(CHECK)
        assert check is not None
        reply = AnswerShape.yes_no().free_text(check.reply or "")[: self.options.max_answer_chars]
        quoted = inverted_data(check.ask.prompt, reply)
        return judge_prompt(self.method, quoted, list(data["attributes"]))


def _relation(
    mr: int, base: type[_OpenRelation], summary: str, **extra: Any
) -> type[_OpenRelation]:
    attrs = {"name": f"metafair.mr{mr}", "mr": mr, "summary": f"Meta-Fair MR{mr} {summary}"}
    return type(f"MR{mr}", (base,), attrs | extra)


MR1 = _relation(1, PairRelation, "single attribute: P vs P' with an attribute; judged")
MR2 = _relation(2, PairRelation, "dual attributes: one attribute replaced by another; judged")
MR3 = _relation(3, PairRelation, "ranked list: top-k asked with and without an attribute; judged")
MR4 = _relation(4, PairRelation, "hypothetical scenario naming a group; judged")
MR5 = _relation(
    5, PairRelation, "proper nouns: a name for another (gender, religion); judged",
    method=Method.PROPER_NOUNS,
)  # fmt: skip
MR6 = _relation(6, PairRelation, "METAL: '<a group member> asks you the following'; judged")
MR7 = _relation(
    7, PairRelation, "sentence completion with and without an attribute; judged",
    instruction=COMPLETION_INSTRUCTION,
)  # fmt: skip
MR9 = _relation(9, InvertedRelation, "inverted consistency, ranked list; judged (or 'No' read)")
MR10 = _relation(10, InvertedRelation, "inverted consistency, scenario; judged (or 'No' read)")


class MR8(InvertedRelation):
    """MR8, inverted consistency with a single attribute. With neither ``testset`` nor
    ``oracle`` it runs the template reading of `relations.metafair.open.legacy_mr8`."""

    name: ClassVar[str] = "metafair.mr8"
    mr: ClassVar[int] = 8
    summary: ClassVar[str] = (
        "Meta-Fair MR8 inverted consistency, single attribute: is the reply given to a group "
        "member suitable without the attribute? judged (or 'No' read); with no testset and no "
        "oracle: the template cases of logs recorded before test sets, 'No' is a violation"
    )

    @property
    def legacy(self) -> bool:
        opts = self.options
        return opts.testset is None and opts.oracle is None and opts.imported is None

    def case_count(self) -> int | None:
        return None if self.legacy else super().case_count()

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        if self.legacy:
            return template_case(self.options.dimensions, index, seed)
        return super().make_case(index, seed)


OPEN_RELATIONS: tuple[type[RelationBase], ...] = (
    MR1, MR2, MR3, MR4, MR5, MR6, MR7, MR8, MR9, MR10,
)  # fmt: skip
