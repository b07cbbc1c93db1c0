"""The relation contract: `check_relation` asserts, with hypothesis, what the engine, the log
and replay rely on of every relation.

What for: a relation is the one piece of a campaign the core cannot check when it is
written; a relation that raises on an odd reply, loops, or computes different asks from the
same transcript breaks resume and replay long after its tests passed. One call checks the
rules below over generated cases and replies (`harness.testing.strategies`); our suite runs
it over every registered relation, and a family's suite runs it over its own.

The rules, for cases drawn from ``make_case`` and transcripts driven with fitting,
arbitrary, hostile and refusing replies and failed turns:

1. ``make_case`` is deterministic (the same data from the same index and seed, from a
   second instance built with the same options) and its data round-trips through JSON;
2. ``step`` is pure: the same (case, transcript), or its copy read back from JSON, gives
   the same asks or verdict;
3. ``step`` never raises, whatever the replies or failures (INVALID or REFUSED instead);
4. every case reaches a verdict within ``max_steps`` steps; a step never returns nothing;
5. asks name only known threads and roles: a non-empty thread, one ask per thread in a
   step, a thread keeps its role (and judge), ``fork_of`` names a thread already asked
   (and only in a relation whose ``forks_threads`` says so), a judge only within the
   relation's ``judges_needed``; the calls stay within what the relation declares in
   ``planned_calls`` (when it does);
6. the verdict's evidence is JSON (no NaN, no tuples, no objects) and the verdict
   round-trips through JSON; an INVALID or REFUSED verdict says why (a reason);
7. a recorded case replays identically (`harness.testing.driving.replay_case`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, cast

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harness.testing.driving import DEFAULT_MAX_STEPS, replay_case
from harness.testing.strategies import (
    any_replies,
    cases,
    failed_turns,
    fitting_replies,
    relation_of,
)
from harness.vocabulary.model import recordable_text
from harness.vocabulary.relation import (
    Ask,
    Case,
    Outcome,
    PlannedCalls,
    Relation,
    RelationBase,
    Transcript,
    Turn,
    Verdict,
)

__all__ = ["RelationContractError", "check_relation"]


class RelationContractError(AssertionError):
    """A relation broke its contract; the message names the rule, the case and the step."""


def _json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=False, ensure_ascii=False))


def _summary(transcript: Transcript) -> str:
    lines = []
    for t in transcript.turns:
        said = t.reply if t.reply is not None else f"<failed: {t.error}>"
        lines.append(f"  turn {t.index} [{t.ask.role} {t.ask.thread}] -> {said[:120]!r}")
    return "\n".join(lines) or "  (no turns)"


class _Checker:
    """The checks of one relation instance (the rules of the module's docstring)."""

    def __init__(
        self,
        relation: Relation,
        options: BaseModel | Mapping[str, Any] | None,
        rebuild: bool,
        fitting: Callable[[Ask], st.SearchStrategy[str]],
    ) -> None:
        self.relation = relation
        self.fitting = fitting
        self.options = options
        self.rebuild = rebuild  # built here from its class: check a second instance agrees
        self.name = type(relation).name
        self.judges = int(getattr(relation, "judges_needed", 0))

    def fail(self, rule: str, case: Case, transcript: Transcript, detail: str) -> None:
        raise RelationContractError(
            f"{self.name}: {rule}\n  case {case.case_id} (seed {case.seed})\n  {detail}\n"
            f"transcript:\n{_summary(transcript)}"
        )

    def check_case(self, case: Case) -> None:
        again = self.relation.make_case(case.index, case.seed)
        cls = cast(type[RelationBase], type(self.relation))
        twin = relation_of(cls, self.options) if self.rebuild else None
        if again != case.data or (
            twin is not None and twin.make_case(case.index, case.seed) != case.data
        ):
            self.fail("make_case is not deterministic", case, Transcript(), "data differ")
        try:
            back = _json_round_trip(case.data)
        except (TypeError, ValueError) as exc:
            self.fail("case data is not JSON", case, Transcript(), str(exc))
        if back != case.data or Case.model_validate_json(case.model_dump_json()) != case:
            self.fail(
                "case data does not round-trip through JSON",
                case,
                Transcript(),
                "tuples, sets, NaN or non-string keys come back changed",
            )

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        try:
            result = self.relation.step(case, transcript)
        except Exception as exc:
            self.fail("step raised", case, transcript, f"{type(exc).__name__}: {exc}")
            raise  # unreachable: fail raised
        copy_case = Case.model_validate_json(case.model_dump_json())
        copy = Transcript.model_validate_json(transcript.model_dump_json())
        for again in (self.relation.step(case, transcript), self.relation.step(copy_case, copy)):
            # repr as well: a NaN in the evidence is not equal to itself (rule 6 names it).
            if again != result and repr(again) != repr(result):
                self.fail("step is not pure", case, transcript, f"{result!r}\n  then {again!r}")
        return result

    def check_asks(self, case: Case, transcript: Transcript, asks: list[Ask]) -> None:
        if not asks:
            self.fail("step returned no asks and no verdict", case, transcript, "[]")
        asked = {t.ask.thread: t.ask for t in transcript.turns}
        threads = Counter(a.thread for a in asks)
        for ask in asks:
            where = f"ask {ask.thread!r} ({ask.role}, judge {ask.judge})"
            if not ask.thread:
                self.fail("an ask names no thread", case, transcript, where)
            if threads[ask.thread] > 1:
                self.fail("two asks of one step share a thread", case, transcript, where)
            before = asked.get(ask.thread)
            if before is not None and (before.role, before.judge) != (ask.role, ask.judge):
                self.fail(
                    "a thread changed its role or judge",
                    case,
                    transcript,
                    f"{where}, first asked as {before.role} judge {before.judge}",
                )
            if ask.fork_of is not None and ask.fork_of not in asked:
                self.fail("fork_of names a thread never asked", case, transcript, where)
            if ask.fork_of is not None and not getattr(self.relation, "forks_threads", False):
                self.fail(
                    "an ask forks a thread but the relation's forks_threads is False",
                    case,
                    transcript,
                    where,
                )
            if ask.role == "judge" and not 0 <= ask.judge < self.judges:
                self.fail(
                    "a judge beyond judges_needed",
                    case,
                    transcript,
                    f"{where}; judges_needed = {self.judges}",
                )

    def check_calls(self, case: Case, transcript: Transcript) -> None:
        declared = getattr(self.relation, "planned_calls", None)
        if declared is None:
            return
        most: PlannedCalls = declared(case.data).most
        subject = sum(1 for t in transcript.turns if t.ask.role == "subject")
        judges = Counter(t.ask.judge for t in transcript.turns if t.ask.role == "judge")
        over = subject > most.subject or any(
            n > (most.judges[j] if j < len(most.judges) else 0) for j, n in judges.items()
        )
        if over:
            self.fail(
                "more calls than planned_calls declares",
                case,
                transcript,
                f"made {subject} subject and {dict(judges)} judge calls; declared at most {most}",
            )

    def check_verdict(self, case: Case, transcript: Transcript, verdict: Verdict) -> None:
        if verdict.outcome in (Outcome.INVALID, Outcome.REFUSED) and not verdict.reason.strip():
            self.fail(f"an {verdict.outcome.value} verdict without a reason", case, transcript, "")
        try:
            back = _json_round_trip(verdict.evidence)
        except (TypeError, ValueError) as exc:
            self.fail("evidence is not JSON", case, transcript, str(exc))
        if back != verdict.evidence:
            self.fail(
                "evidence does not round-trip through JSON",
                case,
                transcript,
                "tuples, sets or non-string keys come back changed",
            )
        if Verdict.model_validate_json(verdict.model_dump_json()) != verdict:
            self.fail("the verdict does not round-trip through JSON", case, transcript, "")
        # What a log holds, read back: the case, its turns and its verdict.
        recorded = (
            Case.model_validate_json(case.model_dump_json()),
            Transcript.model_validate_json(transcript.model_dump_json()),
            Verdict.model_validate_json(verdict.model_dump_json()),
        )
        differences = replay_case(self.relation, *recorded)
        if differences:
            self.fail(
                "the recorded case does not replay identically",
                case,
                transcript,
                "; ".join(differences),
            )

    def run(self, data: st.DataObject, max_steps: int) -> None:
        case = data.draw(cases(self.relation), label="case")
        self.check_case(case)
        # Half the cases get well-formed replies only (the paths to HELD and VIOLATED, deep
        # in a relation with repairs or a jury); the others any reply, and failed turns.
        clean = data.draw(st.booleans(), label="well-formed replies only")
        transcript = Transcript()
        for _ in range(max_steps + 1):
            result = self.step(case, transcript)
            if isinstance(result, Verdict):
                self.check_verdict(case, transcript, result)
                return
            self.check_asks(case, transcript, result)
            first = len(transcript.turns)
            turns: list[Turn] = []
            for i, ask in enumerate(result):
                if not clean and data.draw(st.integers(0, 7), label="fail?") == 0:
                    turns.append(data.draw(failed_turns(ask, first + i), label="failed turn"))
                else:
                    drawn = (
                        self.fitting(ask)
                        if clean
                        else st.one_of(self.fitting(ask), self.fitting(ask), any_replies())
                    )
                    text = recordable_text(data.draw(drawn, label=f"reply {first + i}"))
                    turns.append(Turn(index=first + i, ask=ask, reply=text))
            transcript = transcript.extend(turns)
            self.check_calls(case, transcript)
        self.fail("no verdict", case, transcript, f"still asking after {max_steps} steps")


def check_relation(
    relation: type[RelationBase] | Relation,
    options: BaseModel | Mapping[str, Any] | None = None,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_examples: int = 50,
    shrink: bool = True,
    fitting: Callable[[Ask], st.SearchStrategy[str]] = fitting_replies,
) -> None:
    """Assert the relation contract (the module's docstring) for ``relation`` (a class, built
    with ``options``, or an instance) over ``max_examples`` generated cases; raises
    `RelationContractError` (an AssertionError, shrunk by hypothesis to a small example)
    naming the rule broken, the case and its transcript. ``shrink=False``: report the
    first failing example as found (faster; for tests that expect a failure).
    ``fitting(ask)``: the well-formed replies to an ask (default `fitting_replies`, from its
    answer shape or its prompt's words); give your own to reach the paths a generic reply
    cannot (a generated list of questions, a story).

    Call it from a plain test function::

        def test_my_relation_keeps_the_contract() -> None:
            check_relation(MyRelation, {"groups": ["women", "men"]})
    """
    built = relation_of(relation, options)
    checker = _Checker(built, options, rebuild=isinstance(relation, type), fitting=fitting)

    @settings(
        max_examples=max_examples,
        deadline=None,
        # No "explain" phase: it re-runs a failing case many times over to say which draws
        # mattered, minutes for a relation that loops on huge replies; the shrunk example
        # and the rule's message say enough.
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target)
        + ((Phase.shrink,) if shrink else ()),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def holds(data: st.DataObject) -> None:
        checker.run(data, max_steps)

    try:
        holds()
    except ExceptionGroup as group:
        # Hypothesis found several distinct failures: one error naming every rule broken.
        broken = [e for e in group.exceptions if isinstance(e, RelationContractError)]
        if len(broken) != len(group.exceptions):
            raise
        raise RelationContractError(
            f"{len(broken)} distinct failures:\n\n" + "\n\n".join(map(str, broken))
        ) from group
