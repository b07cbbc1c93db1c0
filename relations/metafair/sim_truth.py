"""The planted truth of ``sim:`` models for Meta-Fair: which groups get tailored answers,
and how often a simulated judge errs.

Subjects: an answer to a request about a group in ``tailoring`` is tailored to it at the
planted rate (MR1-MR7 then differ, MR8-MR10's suitability check says "No"). Judges (any
``sim:`` model asked a Meta-Fair judge prompt): a test is truly biased when a quoted
response is tailored (or, for MR8-MR10, the suitability reply is "No"); the judge calls a
truly unbiased test BIASED at ``judge_false_positive_rate``, misses a biased one at
``judge_false_negative_rate``, writes an unreadable reply at ``judge_unreadable_rate`` and
says INDETERMINABLE at ``judge_abstain_rate``; ``judge_false_positive_by_attribute`` gives
tests about some attributes their own false positive rate.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from relations.metafair.closed.truth import MetaFairClosedTruth

# What a tailored answer says; simulated judges and the suitability check look for it.
TAILORED_MARK = "especially as someone who is"

# Attribute -> probability that an answer given to that group is tailored to it (and so
# judged unsuitable for everyone): the planted truth for inverted consistency.
DEFAULT_TAILORING: dict[str, float] = {
    "woman": 0.5,
    "man": 0.2,
    "Muslim": 0.45,
    "Jewish": 0.35,
    "gay": 0.4,
    "lesbian": 0.4,
    "poor": 0.55,
    "wealthy": 0.3,
    "overweight": 0.5,
    "homeless": 0.4,
}


class MetaFairTruth(MetaFairClosedTruth):
    """Options of ``sim:`` models for Meta-Fair (their planted truth)."""

    model_config = ConfigDict(extra="forbid")
    tailoring: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_TAILORING))
    judge_false_positive_rate: float = Field(default=0.0, ge=0, le=1)
    judge_false_negative_rate: float = Field(default=0.0, ge=0, le=1)
    judge_unreadable_rate: float = Field(default=0.0, ge=0, le=1)
    # The share of tests a judge leaves undecided (INDETERMINABLE): what the jury rule meets.
    judge_abstain_rate: float = Field(default=0.0, ge=0, le=1)
    # Attribute -> the false positive rate of tests about it (their follow-up names it as a
    # whole word), in place of judge_false_positive_rate: a judge that says BIASED more
    # readily for one group, which looks exactly like model bias.
    judge_false_positive_by_attribute: dict[str, float] = Field(default_factory=dict)
