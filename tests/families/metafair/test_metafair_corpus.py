"""Meta-Fair's corpora: the attribute catalogue and the inverted questions (corpora/)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import corpora
from relations.metafair.corpus import (
    PLACEHOLDER,
    attribute_catalogue,
    indefinite_article,
    inverted_questions,
)

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


# --- attributes.toml -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "article"),
    [
        ("atheist", "an"),
        ("upper-class", "an"),
        ("obese", "an"),
        ("woman", "a"),
        ("homeless", "a"),
        ("Unitarian", "a"),
        ("European", "a"),
        ("hour-long", "an"),
        ("one-eyed", "a"),
    ],
)
def test_indefinite_article(word: str, article: str) -> None:
    assert indefinite_article(word) == article


def test_catalogue_has_the_five_meta_fair_dimensions() -> None:
    cat = attribute_catalogue()
    assert cat.dimensions == (
        "gender",
        "sexual_orientation",
        "religion",
        "socioeconomic_status",
        "physical_appearance",
    )
    for dim in cat.dimensions:
        attrs = cat.of(dim)
        assert len(attrs) >= 10, dim
        assert len({a.word.lower() for a in attrs}) == len(attrs), dim
        for a in attrs:
            assert a.phrase.startswith(f"{indefinite_article(a.word)} {a.word}"), a
            assert "{" not in a.phrase and "," not in a.phrase, a
    assert {b.dimension for b in cat.baselines} == set(cat.dimensions)
    with pytest.raises(KeyError):
        cat.of("age")


def test_proper_nouns() -> None:
    cat = attribute_catalogue()
    female, male = cat.names("gender", "female"), cat.names("gender", "male")
    assert len(female) >= 10 and len(male) >= 10
    assert set(female).isdisjoint(male)
    religions = {a.word for a in cat.of("religion")}
    labels = cat.name_labels("religion")
    assert len(labels) >= 5 and set(labels) <= religions
    for label in labels:
        names = cat.names("religion", label)
        assert len(names) >= 8 and all(n[0].isupper() and " " not in n for n in names)
    with pytest.raises(KeyError):
        cat.names("religion", "Jedi")


def test_proper_nouns_are_our_own_not_meta_fairs() -> None:
    source = SHARED_DATA / "metafair" / "biasTypes.json"
    if not source.exists():
        pytest.skip(f"Meta-Fair data not found at {source} (only present in the dev workspace)")
    theirs = json.loads(source.read_text(encoding="utf-8"))["proper_nouns"]
    cat = attribute_catalogue()
    for category, labels in theirs.items():
        for label, names in labels.items():
            if label not in cat.name_labels(category):
                continue
            shared = set(names) & set(cat.names(category, label))
            assert len(shared) <= 2, (category, label, shared)


# --- inverted_questions.toml ---------------------------------------------------------------


def tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_question_templates() -> None:
    bank = inverted_questions()
    dims = set(attribute_catalogue().dimensions)
    assert 30 <= len(bank.questions) <= 40
    assert len({q.id for q in bank.questions}) == len(bank.questions)
    for q in bank.questions:
        assert q.with_attribute.count(PLACEHOLDER) == 1, q.id
        assert not q.with_attribute.startswith(PLACEHOLDER), q.id
        assert "{" not in q.without_attribute and "}" not in q.without_attribute, q.id
        assert set(q.dimensions) <= dims and q.dimensions, q.id
        assert q.with_attribute.rstrip().endswith("?") and q.without_attribute.endswith("?")
        # Same question: nearly every word of the plain form is in the attributed form.
        plain = tokens(q.without_attribute)
        assert len(plain & tokens(q.with_attribute)) >= 0.8 * len(plain), q.id
    for dim in dims:
        assert len(bank.for_dimension(dim)) >= 20, dim


def test_every_question_renders_with_every_attribute_it_claims() -> None:
    bank = inverted_questions()
    cat = attribute_catalogue()
    rendered = 0
    for q in bank.questions:
        for dim in q.dimensions:
            for a in cat.of(dim):
                text = q.ask(a)
                assert a.phrase in text and "{" not in text and "}" not in text
                rendered += 1
    assert rendered > 1000


def test_instructions() -> None:
    bank = inverted_questions()
    assert "100 words" in bank.subject_suffix
    assert {"yes", "no"} <= tokens(bank.followup)
    assert bank.by_id("career-new-job").id == "career-new-job"
    with pytest.raises(KeyError):
        bank.by_id("no-such-question")


@given(answer=st.text(max_size=200))
def test_followup_embeds_any_answer_verbatim(answer: str) -> None:
    bank = inverted_questions()
    q = bank.questions[0]
    prompt = bank.followup_prompt(q, answer)
    assert answer.strip() in prompt
    assert q.without_attribute in prompt
    # Each slot filled exactly once; braces inside the answer are left as they are.
    slots = len("{question}") + len("{answer}")
    assert len(prompt) == len(bank.followup) - slots + len(q.without_attribute) + len(
        answer.strip()
    )


# --- validation of bad data ----------------------------------------------------------------


GOOD_ATTRIBUTES: dict[str, Any] = {
    "dimensions": {"gender": {"phrase": "{article} {attribute}", "attributes": ["woman", "man"]}},
    "proper_nouns": {"gender": {"female": ["Ada"], "male": ["Bob"]}},
}


def with_files(monkeypatch: pytest.MonkeyPatch, **files: dict[str, Any]) -> None:
    real = corpora.load_toml

    def fake(name: str) -> dict[str, Any]:
        return files[name] if name in files else real(name)

    monkeypatch.setattr(corpora, "load_toml", fake)
    attribute_catalogue.cache_clear()
    inverted_questions.cache_clear()


@pytest.fixture(autouse=True)
def fresh_caches() -> Any:
    yield
    attribute_catalogue.cache_clear()
    inverted_questions.cache_clear()


def test_good_minimal_attributes_load(monkeypatch: pytest.MonkeyPatch) -> None:
    with_files(monkeypatch, **{"attributes.toml": GOOD_ATTRIBUTES})
    cat = attribute_catalogue()
    assert [a.phrase for a in cat.attributes] == ["a woman", "a man"]


@pytest.mark.parametrize(
    ("dimension", "key"),
    [
        ({"attributes": ["woman"]}, "dimensions.gender.phrase"),
        ({"phrase": "{article} person", "attributes": ["x"]}, "dimensions.gender.phrase"),
        ({"phrase": "{attribute} {age}", "attributes": ["x"]}, "dimensions.gender.phrase"),
        ({"phrase": "{attribute}", "attributes": []}, "dimensions.gender.attributes"),
        ({"phrase": "{attribute}", "attributes": ["a", "A"]}, "dimensions.gender.attributes"),
        ({"phrase": "{attribute}", "attributes": [3]}, "dimensions.gender.attributes"),
        (
            {"phrase": "{attribute}", "attributes": ["a"], "baseline": ["b"]},
            "dimensions.gender.baseline",
        ),
    ],
)
def test_bad_attributes_name_file_and_key(
    monkeypatch: pytest.MonkeyPatch, dimension: dict[str, Any], key: str
) -> None:
    bad = {**GOOD_ATTRIBUTES, "dimensions": {"gender": dimension}}
    with_files(monkeypatch, **{"attributes.toml": bad})
    with pytest.raises(ValueError, match=rf"attributes\.toml: {re.escape(key)}"):
        attribute_catalogue()


def question(**over: Any) -> dict[str, Any]:
    base = {
        "id": "q1",
        "dimensions": ["gender"],
        "with_attribute": "I am {attribute_phrase}. What now?",
        "without_attribute": "What now?",
    }
    return {**base, **over}


INSTRUCTIONS = {"subject_suffix": "Be brief.", "followup": "Q: {question} A: {answer} Yes/No?"}


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"question": [question()]}, "instructions"),
        ({"instructions": INSTRUCTIONS}, "[[question]]"),
        (
            {"instructions": {**INSTRUCTIONS, "followup": "{question}"}, "question": [question()]},
            "instructions.followup",
        ),
        (
            {
                "instructions": INSTRUCTIONS,
                "question": [question(with_attribute="Is {attribute_phrase} {attribute_phrase}?")],
            },
            "question 'q1'.with_attribute",
        ),
        (
            {"instructions": INSTRUCTIONS, "question": [question(with_attribute="No slot?")]},
            "question 'q1'.with_attribute",
        ),
        (
            {
                "instructions": INSTRUCTIONS,
                "question": [question(without_attribute="I am {attribute_phrase}?")],
            },
            "question 'q1'.without_attribute",
        ),
        (
            {"instructions": INSTRUCTIONS, "question": [question(dimensions=["age"])]},
            "question 'q1'.dimensions",
        ),
        ({"instructions": INSTRUCTIONS, "question": [question(id="")]}, "question[0].id"),
        ({"instructions": INSTRUCTIONS, "question": [question(), question()]}, "question ids"),
    ],
)
def test_bad_questions_name_file_and_key(
    monkeypatch: pytest.MonkeyPatch, data: dict[str, Any], key: str
) -> None:
    with_files(monkeypatch, **{"inverted_questions.toml": data})
    with pytest.raises(ValueError, match=rf"inverted_questions\.toml: {re.escape(key)}"):
        inverted_questions()
