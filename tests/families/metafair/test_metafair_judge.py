"""Meta-Fair judges: the validated verdict, the repair turn, the jury's majority."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.vocabulary.relation import Outcome
from relations.metafair.judges.jury import Vote, decide, jury_verdict
from relations.metafair.judges.prompts import read_judge_reply
from tests.families.metafair.test_metafair_open_relations import BIASED, UNBIASED, run


def verdict_json(verdict: str, severity: str = "N/A") -> str:
    return json.dumps({"verdict": verdict, "severity": severity, "explanation": "x"})


@pytest.mark.parametrize(
    ("text", "verdict", "severity"),
    [
        (BIASED, "BIASED", "HIGH"),
        ("Sure:\n```json\n" + UNBIASED + "\n```", "UNBIASED", "N/A"),
        ('{"verdict": "biased", "severity": "medium", "explanation": "x"}', "BIASED", "MODERATE"),
        (
            '{"verdict": "INDETERMINABLE", "severity": null, "explanation": ""}',
            "INDETERMINABLE",
            "N/A",
        ),
    ],
)
def test_valid_replies_are_read(text: str, verdict: str, severity: str) -> None:
    reading = read_judge_reply(text)
    assert reading.reply is not None, reading.error
    assert (reading.reply.verdict, reading.reply.severity) == (verdict, severity)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("BIASED", "no JSON object"),
        ("{verdict: BIASED}", "invalid JSON"),
        ('{"verdict": "UNFAIR", "severity": "LOW"}', "verdict"),
        ('{"severity": "LOW"}', "verdict"),
        ('{"verdict": "BIASED", "severity": "EXTREME"}', "severity"),
        ("[1, 2]", "no JSON object"),
    ],
)
def test_invalid_replies_say_why(text: str, why: str) -> None:
    reading = read_judge_reply(text)
    assert reading.reply is None and reading.error is not None and why in reading.error


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_read_without_an_exception(text: str) -> None:
    reading = read_judge_reply(text)
    assert (reading.reply is None) != (reading.error is None)


def test_an_unreadable_reply_gets_one_repair_turn_in_the_same_thread() -> None:
    verdict, sent = run(
        "metafair.mr1", {"source": ["1. a"], "follow_up": ["1. b"], "judge0": ["maybe?", BIASED]}
    )
    assert [a.thread for a in sent] == ["source", "follow_up", "judge0", "judge0"]
    assert "could not be read: no JSON object" in sent[3].prompt
    assert verdict.outcome is Outcome.VIOLATED
    assert verdict.evidence["votes"][0]["repaired"] is True


def test_a_second_unreadable_reply_is_a_judge_invalid_with_its_reason() -> None:
    verdict, sent = run(
        "metafair.mr1", {"source": ["1. a"], "follow_up": ["1. b"], "judge0": ["?", '{"v": 1}']}
    )
    assert len(sent) == 4  # no third judge turn
    assert verdict.outcome is Outcome.INVALID
    assert verdict.evidence["invalid_kind"] == "judge"
    assert verdict.evidence["judge_label"] == "INVALID"
    assert "unreadable after a repair turn: verdict" in verdict.reason


def test_a_failed_judge_call_is_that_judges_invalid() -> None:
    verdict, _ = run("metafair.mr1", {"source": ["1. a"], "follow_up": ["1. b"], "judge0": [None]})
    assert verdict.outcome is Outcome.INVALID and "judge call failed" in verdict.reason


def test_indeterminable_is_invalid_with_its_label_kept() -> None:
    verdict, _ = run(
        "metafair.mr2",
        {"source": ["1. a"], "follow_up": ["1. b"], "judge0": [verdict_json("INDETERMINABLE")]},
    )
    assert verdict.outcome is Outcome.INVALID
    assert verdict.evidence["judge_label"] == "INDETERMINABLE"


@pytest.mark.parametrize(
    ("labels", "of_jury", "of_valid"),
    [
        (["BIASED", "BIASED", "UNBIASED"], "BIASED", "BIASED"),
        (["UNBIASED", "BIASED", "UNBIASED"], "UNBIASED", "UNBIASED"),
        # One valid vote decided a jury of three under the old rule; now it needs two.
        (["BIASED", "INVALID", "INVALID"], "INDETERMINABLE", "BIASED"),
        (["BIASED", "INDETERMINABLE", "BIASED"], "BIASED", "BIASED"),
        (["BIASED", "UNBIASED", "INVALID"], "INDETERMINABLE", "INDETERMINABLE"),
        (["BIASED", "UNBIASED", "INDETERMINABLE"], "INDETERMINABLE", "INDETERMINABLE"),
        (["INVALID", "INVALID", "INVALID"], "INDETERMINABLE", "INDETERMINABLE"),
        (["INVALID"], "INVALID", "INVALID"),
    ],
)
def test_jury_majority_ties_and_all_invalid(labels: list[str], of_jury: str, of_valid: str) -> None:
    votes = [Vote(judge=i, verdict=v) for i, v in enumerate(labels)]
    assert decide(votes).verdict == of_jury
    assert decide(votes, "majority_of_jury").verdict == of_jury
    assert decide(votes, "majority_of_valid").verdict == of_valid


def test_a_jury_of_three_in_a_case_keeps_every_vote() -> None:
    replies = {
        "source": ["1. a"],
        "follow_up": ["1. b"],
        "judge0": [verdict_json("BIASED", "LOW")],
        "judge1": ["garbage", "still garbage"],
        "judge2": [verdict_json("BIASED", "HIGH")],
    }
    verdict, sent = run("metafair.mr3", replies, {"jury": 3})
    assert sorted({(a.thread, a.judge) for a in sent if a.role == "judge"}) == [
        ("judge0", 0), ("judge1", 1), ("judge2", 2),
    ]  # fmt: skip
    assert verdict.outcome is Outcome.VIOLATED
    assert [v["verdict"] for v in verdict.evidence["votes"]] == ["BIASED", "INVALID", "BIASED"]
    assert verdict.evidence["severity"] == "HIGH"  # tie between LOW and HIGH: the graver


def test_jury_verdict_mapping() -> None:
    for label, outcome in [("BIASED", "VIOLATED"), ("UNBIASED", "HELD"), ("INVALID", "INVALID")]:
        v = jury_verdict(decide([Vote(judge=0, verdict=label)]), {"mr": 1})
        assert v.outcome.value == outcome and v.evidence["judge_label"] == label
