"""Meta-Fair MR8 inverted consistency as a pure step function, over generated cases and replies."""

from __future__ import annotations

import re
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.plugins.assembly import build_relation
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.relation import Ask, Case, Outcome, Transcript, Turn, Verdict
from relations.metafair.corpus import attribute_catalogue, inverted_questions
from relations.metafair.relations import CHECK, SOURCE

NAME = "metafair.mr8"
DIMENSIONS = attribute_catalogue().dimensions
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def asks(result: list[Ask] | Verdict) -> list[Ask]:
    assert isinstance(result, list), result
    return result


def make(options: dict[str, Any], index: int, seed: int) -> Case:
    rel = build_relation(NAME, options)
    return Case(
        case_id=f"{NAME}/{index}",
        relation=NAME,
        model="sim:test",
        index=index,
        repeat=0,
        seed=seed,
        data=rel.make_case(index, seed),
    )


OPTIONS: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.just({}),
    st.lists(st.sampled_from(DIMENSIONS), min_size=1, max_size=3, unique=True).map(
        lambda dims: {"dimensions": dims}
    ),
)
CASES = st.builds(make, OPTIONS, st.integers(0, 10**6), st.integers(0, 2**63 - 1))

# Replies to the check question, with the outcome the relation must give them.
_MARKUP = st.sampled_from(["", " ", '"', "**", "> ", "- ", "(", "`", "\n"])
_NEUTRAL = st.text(alphabet=string.ascii_letters + " ,.;:!?'\n", max_size=60).filter(
    lambda t: _YES_NO.search(t) is None
)


@st.composite
def check_reply(draw: st.DrawFn) -> tuple[str, Outcome]:
    kind = draw(st.sampled_from(["yes", "no", "yes-inside", "no-inside", "both", "neither"]))
    word = draw(st.sampled_from(["yes", "no"]))
    cased = draw(st.sampled_from([str.lower, str.upper, str.title]))
    if kind in ("yes", "no"):
        tail = draw(st.sampled_from(["", ".", "!", ", it is.", ". Because it is general.", "\n"]))
        text = f"{draw(_MARKUP)}{cased(kind)}{tail} {draw(_NEUTRAL)}"
        return text, Outcome.HELD if kind == "yes" else Outcome.VIOLATED
    if kind.endswith("-inside"):
        word = kind.split("-")[0]
        lead = "The answer is: " + draw(_NEUTRAL)
        text = f"{lead} {cased(word)}."[:199]
        if not text.endswith("."):
            return draw(check_reply())  # the word was cut off: draw again
        return text, Outcome.HELD if word == "yes" else Outcome.VIOLATED
    if kind == "both":
        return f"Well {draw(_NEUTRAL)}: yes and no.", Outcome.INVALID
    return draw(_NEUTRAL), Outcome.INVALID


def test_every_dimension_has_questions_and_attributes() -> None:
    questions = inverted_questions()
    for dim in DIMENSIONS:
        assert questions.for_dimension(dim), dim
        assert attribute_catalogue().of(dim), dim


@settings(max_examples=60, deadline=None)  # the first call loads every family
@given(options=OPTIONS, index=st.integers(0, 10**6), seed=st.integers(0, 2**63 - 1))
def test_make_case_is_well_formed(options: dict[str, Any], index: int, seed: int) -> None:
    # Determinism, JSON and purity: the relation contract (tests/project/test_relation_contract.py)
    case = make(options, index, seed)
    data = case.data
    assert data["dimension"] in options.get("dimensions", DIMENSIONS)
    words = {a.word for a in attribute_catalogue().of(data["dimension"])}
    assert data["attribute"] in words
    assert data["attribute"] in data["with_attribute"]
    question = inverted_questions().by_id(data["question_id"])
    assert data["without_attribute"] == question.without_attribute
    assert "{" not in data["with_attribute"]


@pytest.mark.parametrize("options", [{"dimensions": ["height"]}, {"dimensions": []}])
def test_unknown_dimensions_fail_when_the_relation_is_built(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as err:
        build_relation(NAME, options, field="relations[2]")
    assert err.value.field == "relations[2].options.dimensions"


@settings(max_examples=200)
@given(case=CASES, source_reply=_NEUTRAL.filter(str.strip), check=check_reply())
def test_mr8_asks_then_judges_yes_no(
    case: Case, source_reply: str, check: tuple[str, Outcome]
) -> None:
    rel = build_relation(NAME, {})
    first = rel.step(case, Transcript())
    assert isinstance(first, list) and len(first) == 1
    source_ask = first[0]
    assert source_ask.thread == SOURCE
    assert source_ask.prompt.startswith(case.data["with_attribute"])

    transcript = Transcript(turns=(Turn(index=0, ask=source_ask, reply=source_reply),))
    second = rel.step(case, transcript)
    assert isinstance(second, list) and len(second) == 1
    check_ask: Ask = second[0]
    # A fresh thread: the checker must not see the attribute in its context.
    assert check_ask.thread == CHECK and check_ask.fork_of is None
    assert case.data["without_attribute"] in check_ask.prompt
    assert source_reply.strip() in check_ask.prompt

    text, expected = check
    transcript = transcript.extend([Turn(index=1, ask=check_ask, reply=text)])
    verdict = rel.step(case, transcript)
    assert isinstance(verdict, Verdict)
    assert verdict.outcome is expected, (text, verdict.reason)
    assert verdict.reason
    assert verdict.evidence["attribute"] == case.data["attribute"]
    assert verdict.evidence["dimension"] == case.data["dimension"]


@pytest.mark.parametrize(
    ("source", "error", "reason"),
    [(None, "timeout: no reply", "timeout"), ("   ", None, "empty")],
)
def test_failed_or_empty_source_is_invalid(source: str | None, error: str | None, reason: str):
    rel = build_relation(NAME, {})
    case = make({}, 1, 2)
    [ask] = asks(rel.step(case, Transcript()))
    verdict = rel.step(case, Transcript(turns=(Turn(index=0, ask=ask, reply=source, error=error),)))
    assert isinstance(verdict, Verdict)
    assert verdict.outcome is Outcome.INVALID
    assert reason in verdict.reason


def test_failed_check_is_invalid_and_long_answers_are_cut() -> None:
    rel = build_relation(NAME, {"max_answer_chars": 60})
    case = make({}, 4, 4)
    [ask] = asks(rel.step(case, Transcript()))
    long_answer = "word " * 100
    t = Transcript(turns=(Turn(index=0, ask=ask, reply=long_answer),))
    [check_ask] = asks(rel.step(case, t))
    assert long_answer.strip()[:60] in check_ask.prompt
    assert long_answer.strip()[:61] not in check_ask.prompt
    verdict = rel.step(case, t.extend([Turn(index=1, ask=check_ask, error="server_error: 500")]))
    assert isinstance(verdict, Verdict)
    assert verdict.outcome is Outcome.INVALID
    assert "server_error" in verdict.reason
