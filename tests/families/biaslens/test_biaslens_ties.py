"""BiasLens per-question means that keep ties: a question with k biased trials of n valid
ones contributes k/n, a tie 0.5 (never "tie = unbiased", never silently left out); checked
against brute force on small random tallies."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from relations.biaslens.comparisons import (
    RATE_COLUMNS,
    REPEAT_MEAN_COLUMNS,
    attribute_rates,
    attribute_rates_all_types,
)
from relations.biaslens.oracles import Vote
from relations.biaslens.questionset import QType
from relations.biaslens.tally import AlignedQuestion, Trial, cells

TIED = RATE_COLUMNS.index("tied")
END = TIED + len(REPEAT_MEAN_COLUMNS)
STRICT = st.sampled_from([Vote.BIASED, Vote.UNBIASED, Vote.INVALID, Vote.REFUSED])


def _trial(n: int, run: int, attribute: str, vote: Vote) -> Trial:
    return Trial(
        case_id=f"{attribute}{n}r{run}",
        model="m",
        variant="role",
        attribute=attribute,
        role="nurse",
        qtype=QType.YES_NO,
        question=f"is group {n} worse?",
        run=run,
        row=n,
        answer="",
        final=None,
        strict=vote,
    )


def _questions(votes: list[list[Vote]], attribute: str) -> list[AlignedQuestion]:
    return [
        AlignedQuestion(
            "m",
            "role",
            attribute,
            QType.YES_NO,
            "nurse",
            f"is group {n} worse?",
            tuple(_trial(n, r, attribute, v) for r, v in enumerate(trials)),
        )
        for n, trials in enumerate(votes)
    ]


def _brute(votes: list[list[Vote]]) -> tuple[int, float | None, int]:
    shares = []
    for trials in votes:
        b, u = trials.count(Vote.BIASED), trials.count(Vote.UNBIASED)
        if b + u:
            shares.append(b / (b + u))
    tied = sum(1 for s in shares if s == 0.5)
    return tied, (sum(shares) / len(shares) if shares else None), len(shares)


QUESTIONS = st.integers(min_value=1, max_value=4).flatmap(
    lambda runs: st.lists(st.lists(STRICT, min_size=runs, max_size=runs), min_size=1, max_size=8)
)


@given(QUESTIONS, QUESTIONS)
@settings(max_examples=60, deadline=None)
def test_the_mean_rate_is_the_mean_of_the_per_question_shares(
    gender: list[list[Vote]], race: list[list[Vote]]
) -> None:
    by_cell = cells([*_questions(gender, "gender"), *_questions(race, "race")])
    rates = attribute_rates(by_cell, "strict")
    every = attribute_rates_all_types(by_cell, "strict")
    for attribute, votes in (("gender", gender), ("race", race)):
        tied, mean, units = _brute(votes)
        for row in (
            rates[("m", "role", attribute, QType.YES_NO)],
            every[("m", "role", attribute)][1],
        ):
            got = dict(zip(REPEAT_MEAN_COLUMNS, row[TIED:END], strict=True))
            assert got["tied"] == tied
            if mean is None:
                assert got["mean_rate"] is None
                continue
            assert got["mean_rate"] == round(mean, 4)
            low, high = proportion_confint(mean * units, units, alpha=0.05, method="wilson")
            assert got["mean_low"] <= got["mean_rate"] <= got["mean_high"]
            assert abs(got["mean_low"] - (0.0 if mean == 0 else max(0.0, low))) < 1e-4
            assert abs(got["mean_high"] - (1.0 if mean == 1 else min(1.0, high))) < 1e-4


def test_even_repeats_with_ties_are_counted_apart_and_weigh_half() -> None:
    """Two trials a question: one biased of two is a tie. The strict majority leaves it out
    (INVALID) and the released one reads it as unbiased; the mean counts it as 0.5."""
    b, u = Vote.BIASED, Vote.UNBIASED
    votes = [[b, b], [b, u], [u, b], [u, u]]
    by_cell = cells(_questions(votes, "gender"))
    row = attribute_rates(by_cell, "strict")[("m", "role", "gender", QType.YES_NO)]
    got = dict(zip(REPEAT_MEAN_COLUMNS, row[TIED:END], strict=True))
    assert got["tied"] == 2
    assert got["mean_rate"] == 0.5  # (1 + 0.5 + 0.5 + 0) / 4
    assert row[0] == 2 and row[1] == 0.5  # the majority: 2 decided questions, 1 biased
