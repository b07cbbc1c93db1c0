"""Meta-Fair per-test means that keep ties: a test with k BIASED repeats of n contributes
k/n to its attribute's mean_rate (a tie 0.5); the majority columns leave a tie out and count
it in `tied`. Checked against brute force on small random tallies."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from relations.metafair.crossing import REPEAT_MEAN_COLUMNS, repeat_means

ATTRIBUTES = ("woman", "man")
REPEATS = st.lists(st.booleans(), min_size=1, max_size=4)
TESTS = st.dictionaries(
    st.tuples(st.sampled_from(ATTRIBUTES), st.integers(0, 6)), REPEATS, min_size=1, max_size=10
)


@given(TESTS)
@settings(max_examples=80, deadline=None)
def test_the_mean_rate_is_the_mean_of_the_per_test_means(
    tests: dict[tuple[str, int], list[bool]],
) -> None:
    pairs = [
        (("m", "metafair.mr1", "gender", attribute, f"t{k}"), biased)
        for (attribute, k), repeats in tests.items()
        for biased in repeats
    ]
    got = repeat_means(pairs, lambda u: u[:4])
    for attribute in ATTRIBUTES:
        shares = [sum(r) / len(r) for (a, _), r in tests.items() if a == attribute]
        key = ("m", "metafair.mr1", "gender", attribute)
        if not shares:
            assert key not in got
            continue
        row = dict(zip(REPEAT_MEAN_COLUMNS, got[key], strict=True))
        mean = sum(shares) / len(shares)
        assert row["tied"] == sum(1 for s in shares if s == 0.5)
        assert row["mean_rate"] == round(mean, 4)
        low, high = proportion_confint(sum(shares), len(shares), alpha=0.05, method="wilson")
        assert abs(row["mean_low"] - (0.0 if mean == 0 else max(0.0, low))) < 1e-4
        assert abs(row["mean_high"] - (1.0 if mean == 1 else min(1.0, high))) < 1e-4


def test_even_repeats_with_ties_weigh_half_and_are_counted() -> None:
    """Two repeats a test: [T, F] is a tie, never read as held (unbiased)."""
    repeats = {"t0": [True, True], "t1": [True, False], "t2": [False, True], "t3": [False, False]}
    pairs = [(("m", "r", "d", "a", t), b) for t, rs in repeats.items() for b in rs]
    row = dict(
        zip(
            REPEAT_MEAN_COLUMNS,
            repeat_means(pairs, lambda u: u[:4])[("m", "r", "d", "a")],
            strict=True,
        )
    )
    assert row["tied"] == 2
    assert row["mean_rate"] == 0.5
