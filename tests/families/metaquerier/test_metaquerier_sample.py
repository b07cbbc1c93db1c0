"""`relations.metaquerier.relations.sample` draws a case's terms in place of
``random.Random.sample``: for any seed, population and count it must pick the same items in
the same order and leave the generator in the same state (the case's gender is drawn next),
and fail where ``sample`` fails. A difference would change every case a campaign draws."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relations.metaquerier.relations import sample


@settings(deadline=None, max_examples=400)  # a shared, loaded machine: no per-example limit
@given(
    st.integers(min_value=0, max_value=2**64),
    st.integers(min_value=0, max_value=3000),
    st.integers(min_value=0, max_value=80),
)
def test_sample_draws_what_random_sample_draws(seed: int, size: int, count: int) -> None:
    population = tuple(f"t{i}" for i in range(size))
    ours, theirs = random.Random(seed), random.Random(seed)
    if count > size:
        with pytest.raises(ValueError):
            theirs.sample(population, count)
        with pytest.raises(ValueError):
            sample(ours, population, count)
    else:
        assert sample(ours, population, count) == theirs.sample(population, count)
    assert ours.getstate() == theirs.getstate()


@pytest.mark.parametrize(("size", "count"), [(515, 8), (515, 11), (86, 8), (85, 8), (22, 5)])
def test_sample_at_the_edges_of_random_samples_two_ways(size: int, count: int) -> None:
    # 515 terms: the default pool; 85 = 21 + 4**3, the largest population random.sample
    # draws from a copied list for 6 to 21 picks; 22 = 21 + 1 for 5 picks or fewer.
    population = list(range(size))
    for seed in range(200):
        ours, theirs = random.Random(seed), random.Random(seed)
        assert sample(ours, population, count) == theirs.sample(population, count)
        assert ours.random() == theirs.random()
