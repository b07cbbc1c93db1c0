"""`majority_per_case_in_order`: the per-case majority of a stream in case id order, one
planned case's repeats held at a time, equals `majority_per_case` of the whole stream, in
the same order; a stream out of order is refused, not miscounted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.reporting.stats import (
    NotInCaseOrder,
    case_block,
    majority_per_case,
    majority_per_case_in_order,
)
from harness.store.verdict_counts import case_key

CASE_IDS = st.builds(
    lambda relation, index, repeat, model: f"{relation}/{index}/r{repeat}@{model}",
    st.sampled_from(["metaquerier.mr1", "metaquerier.mr2", "x"]),
    st.integers(0, 12),
    st.integers(0, 11),
    st.sampled_from(["sim:a", "sim:b", "gpt"]),
)


@given(st.lists(st.tuples(CASE_IDS, st.sampled_from(["g1", "g2"]), st.booleans()), max_size=80))
def test_in_order_equals_the_whole_stream_majority(rows: list[tuple[str, str, bool]]) -> None:
    rows.sort(key=lambda r: r[0])
    outcomes = [(cid, (group, case_key(cid)), hit) for cid, group, hit in rows]
    whole = list(majority_per_case((case, hit) for _, case, hit in outcomes).items())
    assert list(majority_per_case_in_order(outcomes)) == whole


def test_a_planned_case_s_repeats_and_models_share_a_block() -> None:
    assert case_block("r/3/r0@a") == case_block("r/3/r10@b") == "r/3/r"
    assert case_block("r/3/r0@a") != case_block("r/30/r0@a")
    assert case_block("imported-7") == "imported-7"


def test_a_stream_out_of_case_id_order_is_refused() -> None:
    outcomes = [("r/1/r0@a", "r/1@a", True), ("r/0/r0@a", "r/0@a", False)]
    with pytest.raises(NotInCaseOrder):
        list(majority_per_case_in_order(outcomes))
    # An id of another shape inside a planned case's ids would split that case.
    split = [
        ("r/1/r0@a", "r/1@a", True),
        ("r/1/r0x", "r/1/r0x", True),
        ("r/1/r1@a", "r/1@a", False),
    ]
    with pytest.raises(NotInCaseOrder):
        list(majority_per_case_in_order(split))
