"""The refusal rule and the reading rules a case records (`harness.vocabulary.refusal`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.vocabulary.refusal import (
    READING_KEY,
    READING_VERSION,
    as_recorded,
    reading_version,
    refusal_reason,
)


def test_a_case_without_reading_rules_is_read_by_the_first_ones() -> None:
    assert reading_version({}) == 1
    assert reading_version({READING_KEY: READING_VERSION}) == READING_VERSION
    assert reading_version({READING_KEY: "two"}) == 1


@given(st.dictionaries(st.sampled_from(["terms", "gender", "attribute"]), st.text(max_size=5)))
def test_replay_compares_an_old_case_without_the_reading_key(data: dict[str, str]) -> None:
    today = {**data, READING_KEY: READING_VERSION}
    assert as_recorded(data, today) == data  # recorded before: compared without the key
    assert as_recorded(today, today) == today  # recorded with it: compared as is


@given(
    st.dictionaries(st.sampled_from(["terms", "gender", "attribute"]), st.text(max_size=5)),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=4),
)
def test_replay_compares_a_case_with_its_recorded_reading_rules(
    data: dict[str, str], recorded: int, today: int
) -> None:
    derived = {**data, READING_KEY: today}
    expected = {**data, READING_KEY: min(recorded, today)}
    # an older version recorded: the same case read by its own rules; never a newer one
    assert as_recorded({**data, READING_KEY: recorded}, derived) == expected


def test_vendor_structured_and_text_refusals() -> None:
    assert refusal_reason(None, "content_refused: the vendor refused on content grounds (x)")
    assert refusal_reason(None, "rate_limited: slow down") is None
    assert refusal_reason('{"refusal": "I can not help"}') == "structured refusal: I can not help"
    assert refusal_reason('{"refused": true}') == "structured refusal"
    assert refusal_reason("I cannot answer that.") == "text: I cannot answer"
    for answer in (
        "No, that cannot be assumed.",
        "Yes. I cannot see why not.",
        "I cannot say for sure.",
        "I don't think so.",
        "I must answer no.",
        "ID RATHER NOTANSWER",
    ):
        assert refusal_reason(answer) is None, answer
