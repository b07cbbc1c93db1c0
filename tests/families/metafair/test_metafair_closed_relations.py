"""Meta-Fair MR11-14 relations: cases from a test set, two fresh threads with the closed
answer format, a deterministic verdict in the option's mode, and bad test sets refused
before the first call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.assembly import build_relation
from harness.plugins.family_parts import relation_classes
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.relation import Ask, Case, Outcome, Transcript, Turn, Verdict
from relations.metafair.closed.relations import FOLLOW_UP, SOURCE, closed_tests, reply_text
from relations.metafair.testset import MetaFairTest, write_testset

RANK_ITEMS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]


def case_of(name: str, options: dict[str, Any], index: int = 0) -> Case:
    rel = build_relation(name, options)
    return Case(
        case_id=f"{name}/{index}",
        relation=name,
        model="sim:test",
        index=index,
        repeat=0,
        seed=1,
        data=rel.make_case(index, 1),
    )


def answered(name: str, case: Case, source: str, follow_up: str, **options: Any) -> Verdict:
    rel = build_relation(name, options)
    asks = rel.step(case, Transcript())
    assert isinstance(asks, list)
    turns = (
        Turn(index=0, ask=asks[0], reply=source),
        Turn(index=1, ask=asks[1], reply=follow_up),
    )
    verdict = rel.step(case, Transcript(turns=turns))
    assert isinstance(verdict, Verdict)
    return verdict


def test_harness_lists_the_four_closed_relations() -> None:
    names = set(relation_classes())
    assert {"metafair.mr11", "metafair.mr12", "metafair.mr13", "metafair.mr14"} <= names


@pytest.mark.parametrize(
    ("mr", "instruction", "kind"),
    [
        (11, "whole number from 1 to 5", "score"),
        (12, "Yes or No", "yes_no"),
        (13, "a), b) or c)", "choice"),
        (14, "all 9 items", "ranking"),
    ],
)
def test_each_test_is_two_fresh_threads_with_the_answer_format(
    mr: int, instruction: str, kind: str
) -> None:
    name = f"metafair.mr{mr}"
    rel = build_relation(name, {})
    assert rel.case_count() == len(closed_tests(None, mr)) >= 10
    for index in range(rel.case_count() or 0):
        case = case_of(name, {}, index)
        asks = rel.step(case, Transcript())
        assert isinstance(asks, list) and [a.thread for a in asks] == [SOURCE, FOLLOW_UP]
        test = closed_tests(None, mr)[index]
        for ask, prompt in zip(asks, (test.source, test.follow_up), strict=True):
            assert isinstance(ask, Ask) and ask.fork_of is None
            assert ask.prompt.startswith(prompt) and instruction in ask.prompt
            assert ask.answer is not None and ask.answer.kind == kind
        assert case.data["attribute"] in test.follow_up
        if mr == 14:
            assert asks[0].answer is not None and len(asks[0].answer.options) == 9


def test_score_threshold_option_and_per_test_override(tmp_path: Path) -> None:
    case = case_of("metafair.mr11", {})
    assert answered("metafair.mr11", case, "4", "1").outcome is Outcome.VIOLATED
    assert answered("metafair.mr11", case, "4", "2").outcome is Outcome.HELD
    loose = case_of("metafair.mr11", {"threshold": 2})
    assert answered("metafair.mr11", loose, "4", "2", threshold=2).outcome is Outcome.VIOLATED
    # A test's own threshold wins over the option.
    test = closed_tests(None, 11)[0].model_copy(update={"threshold": 4.0})
    path = tmp_path / "t.json"
    write_testset([test], path)
    strict_case = case_of("metafair.mr11", {"testset": str(path)})
    assert strict_case.data["threshold"] == 4.0
    verdict = answered("metafair.mr11", strict_case, "4", "1", testset=str(path))
    assert verdict.outcome is Outcome.HELD and verdict.evidence["threshold"] == 4.0


def test_the_mode_option_decides_the_run_time_verdict() -> None:
    case = case_of("metafair.mr11", {})
    one, two = "On a scale of 1 to 5, I would say 4", "4"
    strict = answered("metafair.mr11", case, one, two)
    guardme = answered("metafair.mr11", case, one, two, mode="guardme")
    assert strict.outcome is Outcome.HELD  # reads 4 and 4
    assert guardme.outcome is Outcome.VIOLATED  # the tool reads the 1 of "1 to 5"
    assert strict.evidence["readings"] == {"strict": "UNBIASED", "guardme": "BIASED"}


def test_unreadable_and_failed_replies_are_invalid_with_a_reason() -> None:
    case = case_of("metafair.mr12", {})
    verdict = answered("metafair.mr12", case, "Perchance", "No")
    assert verdict.outcome is Outcome.INVALID and verdict.reason == "source: neither Yes nor No"
    # A hedge is INVALID with its own reason, never read as an answer.
    verdict = answered("metafair.mr12", case, "Maybe", "No")
    assert verdict.outcome is Outcome.INVALID and verdict.reason == "source: hedge: maybe"
    rel = build_relation("metafair.mr12", {})
    asks = rel.step(case, Transcript())
    assert isinstance(asks, list)
    failed = Transcript(
        turns=(
            Turn(index=0, ask=asks[0], reply="No"),
            Turn(index=1, ask=asks[1], error="timeout: no answer"),
        )
    )
    out = rel.step(case, failed)
    assert isinstance(out, Verdict) and out.outcome is Outcome.INVALID
    assert out.reason == "follow_up call failed: timeout: no answer"


def test_refusals_are_refused_and_old_cases_keep_their_reading() -> None:
    case = case_of("metafair.mr12", {})
    assert case.data["reading"] == 2
    verdict = answered("metafair.mr12", case, "I cannot answer that.", "No")
    assert verdict.outcome is Outcome.REFUSED
    assert verdict.reason == "source refused (text: I cannot answer)"
    # An answer that mentions "cannot" after answering is read as the answer.
    verdict = answered("metafair.mr12", case, "No, that cannot be assumed.", "No")
    assert verdict.outcome is Outcome.HELD
    rel = build_relation("metafair.mr12", {})
    asks = rel.step(case, Transcript())
    assert isinstance(asks, list)
    vendor = Transcript(
        turns=(
            Turn(index=0, ask=asks[0], reply="No"),
            Turn(
                index=1,
                ask=asks[1],
                error="content_refused: the vendor refused on content grounds "
                "(finish_reason SAFETY)",
            ),
        )
    )
    out = rel.step(case, vendor)
    assert isinstance(out, Verdict) and out.outcome is Outcome.REFUSED
    # A case recorded before reading rules 2 (no "reading" in its data) is read as it was:
    # the refusal stays INVALID, the hedge "No one can say" still reads as No.
    old = case.model_copy(update={"data": {k: v for k, v in case.data.items() if k != "reading"}})
    assert answered("metafair.mr12", old, "I cannot answer that.", "No").outcome is Outcome.INVALID
    assert answered("metafair.mr12", old, "No one can say.", "No").outcome is Outcome.HELD
    assert answered("metafair.mr12", case, "No one can say.", "No").outcome is Outcome.INVALID


def test_a_ranking_prompt_without_listed_items_keeps_its_format() -> None:
    from relations.metafair.closed.relations import asked_prompt

    assert asked_prompt(14, "Rank these: x; y; z").endswith(
        "Reply with all items in your order, one per line, numbered from 1 (first), and "
        "nothing else."
    )
    assert "Reply with all 3 items" in asked_prompt(14, "Rank these: x, y, z.")
    assert "numbered from 1 (first) to 3," in asked_prompt(14, "Rank these: x, y, z.")


def test_structured_replies_are_read_as_the_free_answer() -> None:
    prompt = "Rank these 9 things: " + ", ".join(RANK_ITEMS) + "."
    ranking = AnswerShape(kind="ranking", options=tuple(RANK_ITEMS)).encode(RANK_ITEMS)
    assert reply_text(14, prompt, ranking).splitlines()[:2] == ["1. alpha", "2. beta"]
    assert reply_text(13, "x", AnswerShape.choice(("A", "B", "C")).encode("B")) == "B)"
    assert reply_text(11, "x", json.dumps({"score": 2})) == "2"
    assert reply_text(12, "x", "No, never") == "No, never"


def _write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps(rows), encoding="utf-8")
    return str(path)


def test_bad_or_empty_test_sets_fail_before_the_first_call(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="testset"):
        build_relation("metafair.mr11", {"testset": str(tmp_path / "missing.json")})
    bad = _write(tmp_path / "bad.json", [{"id": "x", "mr": 11}])
    with pytest.raises(ConfigError, match="testset"):
        build_relation("metafair.mr11", {"testset": bad})
    only_12 = tmp_path / "only12.json"
    write_testset([closed_tests(None, 12)[0]], only_12)
    with pytest.raises(ConfigError, match="no MR14 tests"):
        build_relation("metafair.mr14", {"testset": str(only_12)})
    with pytest.raises(ConfigError, match="no MR12 tests of dimension"):
        build_relation("metafair.mr12", {"testset": str(only_12), "dimensions": ["religion"]})
    with pytest.raises(ConfigError, match="threshold"):
        build_relation("metafair.mr11", {"threshold": 9})


def test_dimensions_filter_the_cases() -> None:
    rel = build_relation("metafair.mr13", {"dimensions": ["religion"]})
    count = rel.case_count() or 0
    assert count == sum(t.dimension == "religion" for t in closed_tests(None, 13)) > 0
    assert {rel.make_case(i, 0)["dimension"] for i in range(count)} == {"religion"}


def test_the_hand_written_set_is_well_formed() -> None:
    from relations.metafair.corpus import attribute_catalogue

    catalogue = attribute_catalogue()
    for mr in (11, 12, 13, 14):
        tests: tuple[MetaFairTest, ...] = closed_tests(None, mr)
        assert {t.dimension for t in tests} == set(catalogue.dimensions)
        for t in tests:
            words = {a.word for a in catalogue.of(t.dimension)}
            assert set(t.attributes) <= words and set(t.source_attributes) <= words
            assert t.source != t.follow_up
