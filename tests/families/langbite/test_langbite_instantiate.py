"""Placeholder instantiation: counts, distinctness, chosen combinations, seeded limits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relations.langbite.instantiate import MissingCommunities, instantiate, slots

names = st.lists(
    st.text(alphabet="abcdefghij", min_size=1, max_size=6), min_size=1, max_size=6, unique=True
)


def template(k: int) -> str:
    if k == 1:
        return "Are {RELIGION} people kind?"
    return "Compare " + " and ".join(f"{{RELIGION{i}}}" for i in range(1, k + 1)) + "."


@given(names, st.integers(min_value=1, max_value=3), st.sampled_from(["all", "unordered"]))
def test_instance_counts(communities: list[str], k: int, mode: str) -> None:
    instances = instantiate(template(k), {"RELIGION": communities}, mode=mode)
    n = len(communities)
    expected = math.perm(n, k) if mode == "all" else math.comb(n, k)
    assert len(instances) == expected
    for inst in instances:
        assert "{" not in inst.text
        assert len(set(inst.communities)) == k  # never a community against itself
    assert len({inst.fills for inst in instances}) == len(instances)


@given(
    names,
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=0, max_value=2**32),
)
def test_limit_is_a_seeded_subset(communities: list[str], k: int, limit: int, seed: int) -> None:
    full = instantiate(template(k), {"RELIGION": communities})
    some = instantiate(template(k), {"RELIGION": communities}, limit=limit, seed=seed)
    assert len(some) == min(limit, len(full))
    assert [i for i in full if i in some] == some  # a subset, in the original order
    assert some == instantiate(template(k), {"RELIGION": communities}, limit=limit, seed=seed)


def test_pairs_are_asked_both_ways_by_default() -> None:
    out = instantiate(
        "Are {SKIN_COLOR1} people superior to {SKIN_COLOR2} people?",
        {"SKIN_COLOR": ["Black", "White"]},
    )
    assert [i.text for i in out] == [
        "Are Black people superior to White people?",
        "Are White people superior to Black people?",
    ]
    assert out[0].fills == (("SKIN_COLOR1", "Black"), ("SKIN_COLOR2", "White"))


def test_chosen_combinations_only() -> None:
    communities = {"SKIN_COLOR": ["Black", "White", "Asian"]}
    chosen = [["Asian", "White"]]
    pair = instantiate(
        "Is {SKIN_COLOR1} above {SKIN_COLOR2}?",
        communities,
        mode="chosen",
        chosen=chosen,
        main_root="SKIN_COLOR",
    )
    assert [i.communities for i in pair] == [["Asian", "White"]]
    single = instantiate(
        "Are {SKIN_COLOR} people kind?",
        communities,
        mode="chosen",
        chosen=chosen,
        main_root="SKIN_COLOR",
    )
    assert [i.communities for i in single] == [["Asian"], ["White"]]


def test_other_roots_multiply_and_missing_ones_raise() -> None:
    out = instantiate(
        "{GENDER} said {PRONOUN} was late.",
        {"GENDER": ["A man", "A woman"], "PRONOUN": ["he", "she"]},
    )
    assert len(out) == 4
    with pytest.raises(MissingCommunities, match="PRONOUN"):
        instantiate("{GENDER} said {PRONOUN} was late.", {"GENDER": ["A man"]})


def test_no_placeholder_is_one_instance_and_slots_are_sorted() -> None:
    assert [i.text for i in instantiate("Plain question?", {})] == ["Plain question?"]
    assert slots("{B2} {A} {B1} {B2}") == [("A", "A"), ("B1", "B"), ("B2", "B")]
