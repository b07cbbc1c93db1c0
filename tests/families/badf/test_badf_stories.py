"""BADF corpus, story grid and the badf.story relation's turns (story + 4 extraction turns)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.plugins.assembly import build_relation
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.relation import Ask, Case, Outcome, Transcript, Turn, Verdict
from relations.badf.concepts import Unreadable, parse_concepts
from relations.badf.corpus import (
    IDENTITY_CATEGORIES,
    check_unique_names,
    descriptors,
    identities,
    locations,
    pairs,
)
from relations.badf.prompts import STAGES, article
from relations.badf.stories import StoryGrid

PAPER_SIZES = {
    "education": 8,
    "sports": 12,
    "healthcare": 10,
    "workplace": 7,
    "arts_and_leisure": 12,
    "technology": 8,
    "media": 8,
    "economics": 5,
    "law_and_policy": 9,
    "environment": 8,
}


def test_corpus_has_the_papers_structure() -> None:
    sizes = Counter(loc.category for loc in locations())
    assert dict(sizes) == PAPER_SIZES and len(locations()) == 87
    assert len({loc.name for loc in locations()}) == 87
    assert [len(descriptors(c)) for c in IDENTITY_CATEGORIES] == [10, 8, 8]
    assert [len(pairs(c)) for c in IDENTITY_CATEGORIES] == [5, 12, 12]
    for cat in IDENTITY_CATEGORIES:
        for a, b in pairs(cat):
            assert a.identity != b.identity  # every story compares two identities
        assert Counter(d.identity for d in descriptors(cat)).keys() == set(identities(cat))
    check_unique_names()
    assert descriptors("race")[0].name == "Wei"


def test_paper_defaults_give_the_papers_story_counts() -> None:
    cats = list(PAPER_SIZES)
    for cat, total in (("gender", 8700), ("race", 10440), ("religion", 10440)):
        assert len(StoryGrid(["base-two"], [cat], cats, None, None)) == total
        # single-character: double the stories of a two-character setting
        assert len(StoryGrid(["base-single"], [cat], cats, None, None)) == 2 * total


@settings(max_examples=30, deadline=None)
@given(
    arms=st.lists(
        st.sampled_from(["base-single", "base-two", "negative-two"]),
        min_size=1,
        max_size=3,
        unique=True,
    ),
    cats=st.lists(st.sampled_from(IDENTITY_CATEGORIES), min_size=1, unique=True),
    stories=st.integers(1, 3),
)
def test_grid_enumerates_the_product_once(arms: list[str], cats: list[str], stories: int) -> None:
    grid = StoryGrid(arms, cats, ["economics"], None, stories)
    cells = list(grid)
    keys = {(c.arm, c.identity_category, c.location, c.characters, c.story) for c in cells}
    assert len(keys) == len(cells) == len(grid)
    expected = sum(
        5 * stories * (len(pairs(c)) if a.endswith("two") else len(descriptors(c)))
        for a in arms
        for c in cats
    )
    assert len(grid) == expected
    with pytest.raises(IndexError):
        grid.cell(len(grid))


def test_articles() -> None:
    assert [article(w) for w in ("emergency room", "university campus", "eco-lodge", "prison")] == [
        "an",
        "a",
        "an",
        "a",
    ]


def test_unknown_location_fails_before_the_first_call() -> None:
    with pytest.raises(ConfigError) as err:
        build_relation("badf.story", {"locations": ["moon base"]})
    assert "locations" in str(err.value) and "moon base" in str(err.value)


# --- the relation's turns ------------------------------------------------------------------


def _case(relation: object, index: int = 0) -> Case:
    data = relation.make_case(index, 7)  # type: ignore[attr-defined]
    return Case(
        case_id=f"badf.story/{index}/r0@m",
        relation="badf.story",
        model="m",
        index=index,
        repeat=0,
        seed=7,
        data=data,
    )


def _run(relation: object, case: Case, answer: object) -> Verdict:
    """Drive the case, answering each ask with ``answer(ask, k)``; returns the verdict."""
    transcript = Transcript()
    for _ in range(20):
        out = relation.step(case, transcript)  # type: ignore[attr-defined]
        if isinstance(out, Verdict):
            return out
        turns = []
        for ask in out:
            k = len(transcript.thread(ask.thread))
            reply = answer(ask, k)  # type: ignore[operator]
            turns.append(Turn(index=len(transcript.turns) + len(turns), ask=ask, reply=reply))
        transcript = transcript.extend(turns)
    raise AssertionError("no verdict")


def test_two_character_story_runs_four_extraction_turns_per_character() -> None:
    relation = build_relation("badf.story", {"arms": ["base-two"], "stories": 1})
    case = _case(relation)
    assert len(case.data["characters"]) == 2
    seen: list[Ask] = []

    def answer(ask: Ask, k: int) -> str:
        seen.append(ask)
        if ask.thread == "story":
            return "Hannah, a nurse, calms Thomas."
        return json.dumps([f"{ask.thread} stage {k}", "Caring "])

    verdict = _run(relation, case, answer)
    assert verdict.outcome is Outcome.HELD
    extraction = [a for a in seen if a.thread.startswith("extract")]
    assert len(extraction) == 2 * len(STAGES)
    assert all(a.role == "judge" and a.answer is not None for a in extraction)
    chars = verdict.evidence["characters"]
    assert [c["concepts"] for c in chars] == [
        ["extract-0 stage 3", "caring"],
        ["extract-1 stage 3", "caring"],
    ]
    assert [c["identity"] for c in chars] == ["female", "male"]


def test_later_turns_quote_the_previous_list() -> None:
    relation = build_relation(
        "badf.story", {"arms": ["base-single"], "stories": 1, "extractor": "subject"}
    )
    case = _case(relation)
    prompts: list[str] = []

    def answer(ask: Ask, k: int) -> str:
        prompts.append(ask.prompt)
        assert ask.role == "subject"
        return "A story." if ask.thread == "story" else f'Sure: ["item {k}"]'

    assert _run(relation, case, answer).outcome is Outcome.HELD
    assert '["item 0"]' in prompts[2] and '["item 2"]' in prompts[4]
    assert "A story." in prompts[1]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("I cannot help with that.", "no JSON array"),
        ("[1, 2]", "not strings"),
        ('["", "  "]', "no concept"),
        ("[unclosed", "no JSON array"),
    ],
)
def test_unreadable_extraction_is_invalid_with_its_reason(bad: str, reason: str) -> None:
    relation = build_relation("badf.story", {"arms": ["base-two"], "stories": 1})
    case = _case(relation, 3)

    def answer(ask: Ask, k: int) -> str:
        if ask.thread == "story":
            return "story"
        return bad if (ask.thread == "extract-1" and k == 2) else '["ok"]'

    verdict = _run(relation, case, answer)
    assert verdict.outcome is Outcome.INVALID
    assert "decompose" in verdict.reason and reason in verdict.reason


def test_failed_and_empty_story_are_invalid() -> None:
    relation = build_relation("badf.story", {"arms": ["base-single"], "stories": 1})
    case = _case(relation)
    ask = relation.step(case, Transcript())
    assert isinstance(ask, list)
    failed = Transcript(turns=(Turn(index=0, ask=ask[0], error="timeout: slow"),))
    verdict = relation.step(case, failed)
    assert isinstance(verdict, Verdict) and "story call failed" in verdict.reason
    empty = Transcript(turns=(Turn(index=0, ask=ask[0], reply="   "),))
    verdict = relation.step(case, empty)
    assert isinstance(verdict, Verdict) and verdict.reason == "the story is empty"


@given(st.text(max_size=200))
def test_parse_concepts_never_raises(text: str) -> None:
    out = parse_concepts(text)
    assert isinstance(out, Unreadable) or (out and all(isinstance(c, str) and c for c in out))


def test_parse_concepts_reads_structured_fenced_and_normalises() -> None:
    assert parse_concepts('{"terms": ["Kind.", "kind", "Works  as a nurse"]}') == [
        "kind",
        "works as a nurse",
    ]
    assert parse_concepts('Here:\n```json\n["A", "B"]\n```\n') == ["a", "b"]
    # the last list wins (a model that corrects itself)
    assert parse_concepts('["draft"] then final ["final"]') == ["final"]


def test_descriptors_interleave_identities() -> None:
    # so that the first cases of a small campaign cover every identity
    for cat in IDENTITY_CATEGORIES:
        first = descriptors(cat)[: len(identities(cat))]
        assert {d.identity for d in first} == set(identities(cat))
