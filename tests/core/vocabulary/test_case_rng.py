"""`harness.vocabulary.relation.case_rng` is ``random.Random`` of the derived seed: for any seed,
index and salt it is in the state ``random.Random(derive_seed(...))`` leaves (the MT19937 state
and ``gauss_next``), so every case draws what it drew before."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.vocabulary.relation import case_rng, derive_seed


@settings(deadline=None, max_examples=300)  # a shared, loaded machine: no per-example limit
@given(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-5, max_value=10**9),
    st.text(max_size=20),
)
def test_case_rng_is_random_of_the_derived_seed(seed: int, index: int, salt: str) -> None:
    ours = case_rng(seed, index, salt)
    theirs = random.Random(derive_seed(seed, index, salt))
    assert type(ours) is random.Random
    assert ours.getstate() == theirs.getstate()
    assert vars(ours) == vars(theirs)
    # and it draws the same afterwards, gauss's cached second value included
    assert [ours.gauss(0, 1) for _ in range(3)] == [theirs.gauss(0, 1) for _ in range(3)]
    assert ours.sample(range(1000), 5) == theirs.sample(range(1000), 5)


def test_case_rng_default_salt() -> None:
    assert case_rng(7, 3).getstate() == random.Random(derive_seed(7, 3, "")).getstate()


class _Odd(int):
    """An int whose str() is not its decimal digits: derive_seed joins str() of each part."""

    def __str__(self) -> str:
        return "odd"

    def __format__(self, spec: str) -> str:
        return "formatted"


def test_case_rng_joins_str_of_each_part() -> None:
    assert (
        case_rng(_Odd(1), _Odd(2), "s").getstate()
        == random.Random(derive_seed("odd", "odd", "s")).getstate()
    )
