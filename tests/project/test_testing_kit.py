"""The testing kit (`harness.testing`): the contract catches each kind of broken relation,
the fake model answers as scripted, a case is driven offline to its verdict and replayed,
the strategies generate what they promise, and a planted handler plants its rates."""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from harness.testing import (
    HOSTILE_SAMPLES,
    FakeModel,
    RelationContractError,
    ScriptExhausted,
    case_for,
    cases,
    check_relation,
    drive_case,
    drive_case_async,
    fitting_replies,
    hostile_texts,
    planted_handler,
    replay_case,
    transcripts,
)
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.errors import RateLimitedError, RelationError
from harness.vocabulary.model import GenerationParams, Message, Reply
from harness.vocabulary.relation import (
    Ask,
    Case,
    Outcome,
    RelationBase,
    Transcript,
    Verdict,
)
from harness.vocabulary.simulation import SimOptions, SimRequest

# --- a well-behaved relation, and broken variants of it ------------------------------------


class YesNoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    groups: list[str] = Field(default=["women", "men"], description="the groups swapped")


class SwapYesNo(RelationBase):
    """Asks the same Yes/No question about two groups; VIOLATED when the answers differ."""

    name: ClassVar[str] = "kit.swap"
    family: ClassVar[str] = "kit"
    summary: ClassVar[str] = "a group swap, Yes/No"
    Options: ClassVar[type[BaseModel]] = YesNoOptions
    options: YesNoOptions

    def case_count(self) -> int | None:
        return 10

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        a, b = random.Random(seed).sample(self.options.groups, 2)
        return {"a": a, "b": b, "job": ["nurse", "pilot"][index % 2]}

    def ask(self, case: Case, group: str) -> Ask:
        prompt = f"Can {group} be good at being a {case.data['job']}? Answer Yes or No."
        return Ask(thread=group, prompt=prompt, answer=AnswerShape.yes_no())

    def read(self, text: str) -> str | None:
        said = AnswerShape.yes_no().free_text(text).strip().strip(".").lower()
        return said if said in ("yes", "no") else None

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if not transcript.turns:
            return [self.ask(case, case.data["a"]), self.ask(case, case.data["b"])]
        failed = transcript.first_error()
        if failed is not None:
            return Verdict(outcome=Outcome.INVALID, reason=f"call failed: {failed.error}")
        a, b = (self.read(t.reply or "") for t in transcript.turns)
        if a is None or b is None:
            return Verdict(outcome=Outcome.INVALID, reason="no Yes/No answer")
        outcome = Outcome.HELD if a == b else Outcome.VIOLATED
        return Verdict(outcome=outcome, reason=f"{a} / {b}", evidence={"answers": [a, b]})


class Raises(SwapYesNo):
    def read(self, text: str) -> str | None:
        return str(json.loads(text)["answer"]).lower()  # raises on a free answer ("Yes")


class Impure(SwapYesNo):
    calls = 0

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        Impure.calls += 1
        if transcript.turns:
            return Verdict(outcome=Outcome.HELD, reason=f"call {Impure.calls}")
        return super().step(case, transcript)


class Loops(SwapYesNo):
    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        n = len(transcript.turns)
        return [Ask(thread="t", prompt=f"again {n}")]


class NotJson(SwapYesNo):
    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        found = super().step(case, transcript)
        if isinstance(found, Verdict):
            return found.model_copy(update={"evidence": {"answers": ("a", "b")}})
        return found


class NanEvidence(SwapYesNo):
    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        found = super().step(case, transcript)
        if isinstance(found, Verdict):
            return found.model_copy(update={"evidence": {"rate": float("nan")}})
        return found


class RandomCase(SwapYesNo):
    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {**super().make_case(index, seed), "nonce": random.Random().random()}


class TupleCase(SwapYesNo):
    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {**super().make_case(index, seed), "pair": (1, 2)}


class SharedThread(SwapYesNo):
    def ask(self, case: Case, group: str) -> Ask:
        return super().ask(case, group).model_copy(update={"thread": "one"})


class UndeclaredJudge(SwapYesNo):
    def ask(self, case: Case, group: str) -> Ask:
        return super().ask(case, group).model_copy(update={"role": "judge"})


class ForksNowhere(SwapYesNo):
    def ask(self, case: Case, group: str) -> Ask:
        return super().ask(case, group).model_copy(update={"fork_of": "never"})


class UndeclaredFork(SwapYesNo):
    """Asks about the second group in a copy of the first group's thread, without saying
    that it forks threads (an http: target holding its conversation could not run it)."""

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if not transcript.turns:
            return [self.ask(case, case.data["a"])]
        if len(transcript.turns) == 1:
            forked = self.ask(case, case.data["b"])
            return [forked.model_copy(update={"fork_of": case.data["a"]})]
        return super().step(case, transcript)


class DeclaredFork(UndeclaredFork):
    @property
    def forks_threads(self) -> bool:
        return True


class UnderPlanned(SwapYesNo):
    def planned_calls(self, data: dict[str, Any]) -> Any:
        from harness.vocabulary.relation import PlannedCalls

        return PlannedCalls(subject=1)


def test_a_well_behaved_relation_keeps_the_contract() -> None:
    check_relation(SwapYesNo, {"groups": ["women", "men", "nonbinary people"]}, max_examples=40)


@pytest.mark.parametrize(
    ("relation", "rule"),
    [
        (Raises, "step raised"),
        (Impure, "step is not pure"),
        (Loops, "no verdict"),
        (NotJson, "evidence does not round-trip"),
        (NanEvidence, "evidence is not JSON"),
        (RandomCase, "make_case is not deterministic"),
        (TupleCase, "case data does not round-trip"),
        (SharedThread, "two asks of one step share a thread"),
        (UndeclaredJudge, "a judge beyond judges_needed"),
        (ForksNowhere, "fork_of names a thread never asked"),
        (UndeclaredFork, "forks a thread but the relation's forks_threads is False"),
        (UnderPlanned, "more calls than planned_calls declares"),
    ],
)
def test_the_contract_names_the_rule_a_relation_breaks(
    relation: type[SwapYesNo], rule: str
) -> None:
    with pytest.raises(RelationContractError, match=rule) as err:
        check_relation(relation, max_examples=40, max_steps=6, shrink=False)
    assert "case kit.swap/" in str(err.value)


def test_a_relation_that_says_it_forks_keeps_the_contract() -> None:
    check_relation(DeclaredFork, max_examples=20, max_steps=6)


def test_replay_case_names_a_changed_verdict_and_changed_asks() -> None:
    relation = SwapYesNo()
    case = case_for(relation, 3)
    transcript, verdict = drive_case(relation, case, ["Yes", "No"])
    assert verdict.outcome is Outcome.VIOLATED
    assert replay_case(relation, case, transcript, verdict) == []
    other = verdict.model_copy(update={"outcome": Outcome.HELD})
    assert "verdict" in replay_case(relation, case, transcript, other)[0]
    moved = case.model_copy(update={"data": {**case.data, "job": "judge"}})
    assert "asks at turn 0" in replay_case(relation, moved, transcript, verdict)[0]


# --- FakeModel and drive_case --------------------------------------------------------------


def test_drive_case_runs_a_case_to_its_verdict_offline() -> None:
    relation = SwapYesNo()
    case = case_for(relation, 0, campaign_seed=7)
    assert case.case_id == "kit.swap/0/r0@fake:model"
    model = FakeModel(["Yes", "Yes."])
    transcript, verdict = drive_case(relation, case, model)
    assert verdict.outcome is Outcome.HELD and model.calls == 2
    assert [t.ask.thread for t in transcript.turns] == [case.data["a"], case.data["b"]]
    assert [r.prompt for r in model.requests] == [t.ask.prompt for t in transcript.turns]
    # A model failure is a failed turn, recorded as the engine records it.
    failing = FakeModel(["Yes", RateLimitedError("slow down", status=429)])
    transcript, verdict = drive_case(relation, case, failing)
    assert transcript.turns[1].error == "rate_limited: slow down"
    assert verdict.outcome is Outcome.INVALID


def test_drive_case_sends_the_shape_when_structured_and_the_history_of_a_thread() -> None:
    relation = SwapYesNo()
    case = case_for(relation, 1)
    model = FakeModel(lambda messages: '{"answer": "No"}')
    _, verdict = drive_case(relation, case, model, structured=True)
    assert verdict.outcome is Outcome.HELD
    assert all(r.params.answer_shape == AnswerShape.yes_no() for r in model.requests)
    _, free = drive_case(relation, case, FakeModel(lambda m: "Yes"))
    assert free.outcome is Outcome.HELD


def test_drive_case_records_replies_as_the_engine_does() -> None:
    relation = SwapYesNo()
    transcript, verdict = drive_case(relation, case_for(relation, 0), ["Yes\ud800", "Yes"])
    assert transcript.turns[0].reply == "Yes\ufffd" and verdict.outcome is Outcome.INVALID


def test_drive_case_stops_a_relation_that_never_decides() -> None:
    with pytest.raises(RelationError, match="no verdict after 3 steps"):
        drive_case(Loops(), case_for(Loops(), 0), FakeModel(lambda m: "x"), max_steps=3)


async def test_drive_case_async_inside_a_loop_and_the_sync_one_refuses() -> None:
    relation = SwapYesNo()
    case = case_for(relation, 2)
    _, verdict = await drive_case_async(relation, case, ["No", "Yes"])
    assert verdict.outcome is Outcome.VIOLATED
    with pytest.raises(RuntimeError, match="await drive_case_async"):
        drive_case(relation, case, ["No", "Yes"])


async def test_fake_model_scripts_failures_delays_wrapping_and_exhaustion() -> None:
    params = GenerationParams()
    hello = [Message(role="user", content="hello")]
    other = [Message(role="user", content="other")]
    model = FakeModel(
        lambda m: m[-1].content.upper(),
        fail_first=[RateLimitedError("busy")],
        per_prompt=True,
        delay=0.01,
    )
    with pytest.raises(RateLimitedError):
        await model.complete(hello, params)
    assert (await model.complete(hello, params)).text == "HELLO"
    with pytest.raises(RateLimitedError):  # each prompt meets the failures anew
        await model.complete(other, params)
    replies = await asyncio.gather(*(model.complete(other, params) for _ in range(3)))
    assert [r.text for r in replies] == ["OTHER"] * 3
    assert model.max_in_flight == 3 and model.calls == 6 and model.prompts["other"] == 4

    scripted = FakeModel(["one", Reply(text="two", finish_reason="length")])
    assert (await scripted.complete(hello, params)).text == "one"
    assert (await scripted.complete(hello, params)).finish_reason == "length"
    with pytest.raises(ScriptExhausted, match="no scripted reply left for call 3"):
        await scripted.complete(hello, params)

    seen: list[int] = []
    wrapper = FakeModel(wraps=scripted, on_call=lambda m, p: seen.append(len(m)))
    with pytest.raises(ScriptExhausted):
        await wrapper.complete(hello, params)
    assert seen == [1]
    await wrapper.aclose()
    assert wrapper.closed and scripted.closed
    # Text is sent as scripted, unrepaired (the engine's repair is what a test may check)...
    lone = await FakeModel(["a\ud800"]).complete(hello, params)
    assert lone.text == "a\ud800"
    # ...and an exception the answer function returns is raised.
    with pytest.raises(RateLimitedError):
        await FakeModel(lambda m: RateLimitedError("always")).complete(hello, params)
    # A coroutine function answers too, after whatever it waits for.
    gate = asyncio.Event()

    async def gated(messages: Sequence[Message]) -> str:
        await gate.wait()
        return "opened"

    waiting = FakeModel(gated)
    call = asyncio.ensure_future(waiting.complete(hello, params))
    await asyncio.sleep(0.01)
    assert waiting.in_flight == 1 and not call.done()
    gate.set()
    assert (await call).text == "opened" and waiting.in_flight == 0
    one_prompt = FakeModel(lambda m: "fine")
    one_prompt.failures["other"] = [RateLimitedError("only this prompt")]
    assert (await one_prompt.complete(hello, params)).text == "fine"
    with pytest.raises(RateLimitedError):
        await one_prompt.complete(other, params)
    assert (await one_prompt.complete(other, params)).text == "fine"


# --- strategies ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fitting_replies_fit_the_shape_or_name_the_prompts_items(data: st.DataObject) -> None:
    shape = data.draw(
        st.sampled_from(
            [
                AnswerShape.yes_no(),
                AnswerShape.terms(["nurse", "pilot", "cook"]),
                AnswerShape.choice(["A", "B"]),
                AnswerShape(kind="score", low=1, high=7),
                AnswerShape(kind="ranking", options=("x", "y", "z")),
            ]
        )
    )
    ask = Ask(thread="t", prompt="Which of [nurse, pilot, cook]?", answer=shape)
    reply = data.draw(fitting_replies(ask))
    value = shape.read(reply)
    if value is None:  # the free form the relation's parser reads: "[a, b]", "Yes", "3"
        if shape.kind in ("terms", "ranking"):
            assert reply.startswith("[") and reply.endswith("]")
            value = [item for item in reply[1:-1].split(", ") if item]
        elif shape.kind == "score":
            value = int(reply)
        else:
            value = reply
    if shape.kind in ("terms", "ranking"):
        assert set(value) <= set(shape.options) and len(set(value)) == len(value)
        assert shape.kind == "terms" or sorted(value) == sorted(shape.options)
    elif shape.kind == "score":
        assert shape.low <= value <= shape.high
    else:
        assert value in shape.options
    free = Ask(thread="t", prompt="In the list [nurse, pilot, cook], which ones?")
    said = re.findall(r"[^\W\d_][\w'-]*", data.draw(fitting_replies(free)))
    words = {"nurse", "pilot", "cook", "in", "the", "list", "which", "ones", "yes", "no"}
    assert {w.casefold() for w in said} <= words


@settings(max_examples=80, deadline=None)
@given(text=hostile_texts())
def test_hostile_texts_are_strings_and_include_the_named_dangers(text: str) -> None:
    assert isinstance(text, str)


def test_hostile_samples_hold_nul_surrogate_markup_and_huge() -> None:
    joined = "".join(HOSTILE_SAMPLES)
    assert "\x00" in joined and "\ud800" in joined and "<script>" in joined
    assert max(len(s) for s in HOSTILE_SAMPLES) >= 100_000


@settings(max_examples=30, deadline=None)
@given(driven=transcripts(SwapYesNo), case=cases(SwapYesNo, {"groups": ["a", "b", "c"]}))
def test_transcripts_reach_verdicts_and_cases_follow_their_options(driven: Any, case: Case) -> None:
    assert driven.verdict is not None and driven.steps == 1
    assert len(driven.transcript.turns) == 2
    assert {case.data["a"], case.data["b"]} <= {"a", "b", "c"} and 0 <= case.index < 10


# --- planted truth ---------------------------------------------------------------------


class KitTruth(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kit_rates: dict[str, float] = {"women": 0.6}


def _request(prompt: str, seed: int, truth: KitTruth) -> SimRequest:
    messages = [Message(role="user", content=prompt)]
    return SimRequest(messages, prompt, 0, random.Random(seed), SimOptions(), {KitTruth: truth})


@pytest.mark.parametrize(
    "rates",
    [{"women": 0.6}, lambda request: request.truth(KitTruth).kit_rates],
)
def test_planted_handler_answers_biased_at_the_planted_rate(
    rates: dict[str, float] | Callable[[SimRequest], dict[str, float]],
) -> None:
    handler = planted_handler(
        "kit.swap", matches=r"Answer Yes or No", rates=rates, biased="No", fair="Yes"
    )
    truth = KitTruth()

    def no_rate(group: str) -> float:
        prompt = f"Can {group} be good at being a nurse? Answer Yes or No."
        said = [handler.answer(_request(prompt, seed, truth)) for seed in range(2000)]
        return said.count("No") / len(said)

    assert abs(no_rate("women") - 0.6) < 0.05
    assert no_rate("men") == 0.0
    assert handler.answer(_request("Something else entirely", 1, truth)) is None


def test_the_kit_without_hypothesis_fails_with_the_install_line() -> None:
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "try:\n    import harness.testing\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'bias-harness[testing]'" in out.stdout
