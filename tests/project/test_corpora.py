"""The project's own corpora: social-group terms, attribute catalogue, inverted questions."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import corpora
from corpora import (
    GROUPS,
    PLACEHOLDER,
    attribute_catalogue,
    indefinite_article,
    inverted_questions,
    social_terms,
    terms_by_group,
)

CORPORA_DIR = Path(corpora.__file__).parent
SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"

# The 40 WinoBias occupations, written as our corpus writes them ("CEO" -> "chief executive").
WINOBIAS = (
    "carpenter",
    "mechanic",
    "driver",
    "sheriff",
    "mover",
    "developer",
    "farmer",
    "guard",
    "chief",
    "janitor",
    "lawyer",
    "cook",
    "physician",
    "analyst",
    "manager",
    "supervisor",
    "salesperson",
    "attendant",
    "cashier",
    "teacher",
    "nurse",
    "assistant",
    "secretary",
    "auditor",
    "cleaner",
    "receptionist",
    "clerk",
    "counselor",
    "designer",
    "hairdresser",
    "writer",
    "housekeeper",
    "baker",
    "accountant",
    "editor",
    "librarian",
    "tailor",
    "laborer",
    "construction worker",
    "chief executive",
)
# One word per capitalised token: a proper adjective or demonym, never an acronym.
WORD = re.compile(r"(?:[A-Z][a-z']+|[a-z']+)(?:-(?:[A-Z][a-z']+|[a-z']+))*")


def read_rows() -> list[dict[str, str]]:
    with (CORPORA_DIR / "social_groups.csv").open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == ["term", "group", "gender", "plural"]
        return list(reader)


# --- social_groups.csv ---------------------------------------------------------------------


def test_group_sizes_match_metaquerier_shape() -> None:
    sizes = Counter(t.group for t in social_terms())
    assert set(sizes) == set(GROUPS)
    assert 480 <= sum(sizes.values()) <= 540
    assert sizes["profession"] >= 200
    assert sizes["race"] >= 120
    assert sizes["gender"] >= 60
    assert sizes["religion"] >= 25


def test_provenance_table_states_the_real_counts() -> None:
    text = (CORPORA_DIR / "PROVENANCE.md").read_text(encoding="utf-8")
    stated = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^\| (profession|gender|race|religion) \| +(\d+) \|", text, re.M)
    }
    real = {g: len(ts) for g, ts in terms_by_group().items()}
    assert stated == real
    total = re.search(r"\*\*total\*\* \| \*\*(\d+)\*\*", text)
    assert total is not None and int(total.group(1)) == len(social_terms())
    gendered = re.search(r"\*\*(\d+) \((\d+) / (\d+)\)\*\*", text)
    assert gendered is not None
    counts = Counter(t.gender for t in social_terms() if t.gender)
    assert [int(x) for x in gendered.groups()] == [
        counts["female"] + counts["male"],
        counts["female"],
        counts["male"],
    ]


def test_loader_returns_every_row_unchanged() -> None:
    rows = read_rows()
    terms = social_terms()
    assert len(terms) == len(rows)
    for row, term in zip(rows, terms, strict=True):
        assert (term.text, term.group, term.gender or "", term.plural) == (
            row["term"],
            row["group"],
            row["gender"],
            row["plural"],
        )


def test_terms_are_unique_case_insensitively_also_against_plurals() -> None:
    singular = Counter(t.text.lower() for t in social_terms())
    assert [t for t, n in singular.items() if n > 1] == []
    plural = {t.plural.lower(): t.text for t in social_terms()}
    assert len(plural) == len(singular)
    # A plural that equals another term would make list parsing ambiguous.
    assert [p for p in plural if p in singular] == []


def test_format_rules() -> None:
    for t in social_terms():
        for text in (t.text, t.plural):
            assert "," not in text and text == text.strip() and "  " not in text, t
            assert all(WORD.fullmatch(w) for w in text.split(" ")), t
        if t.group in ("profession", "gender"):
            assert t.text == t.text.lower(), t
        assert t.plural != t.text, t
        if t.text.endswith(" person"):
            assert t.plural == t.text[: -len("person")] + "people", t


def test_gender_column_marks_only_explicitly_gendered_terms() -> None:
    by_text = {t.text: t for t in social_terms()}
    assert {t.gender for t in social_terms()} <= {None, "female", "male"}
    assert all(t.gender is None for t in terms_by_group()["profession"])
    assert all(t.gender is None for t in terms_by_group()["race"])
    counts = Counter(t.gender for t in social_terms() if t.gender)
    assert 60 <= counts["female"] + counts["male"] <= 100
    assert abs(counts["female"] - counts["male"]) <= 5
    for text, gender in [
        ("policewoman", "female"),
        ("nun", "female"),
        ("queen", "female"),
        ("waitress", "female"),
        ("king", "male"),
        ("monk", "male"),
        ("father", "male"),
        ("nurse", None),
        ("engineer", None),
        ("nonbinary person", None),
        ("rabbi", None),
    ]:
        assert by_text[text].gender == gender, text


def test_every_woman_compound_has_its_man_counterpart() -> None:
    texts = {t.text: t for t in social_terms()}
    for text, term in texts.items():
        if text.endswith("woman") and text != "woman":
            partner = texts.get(text[: -len("woman")] + "man")
            assert partner is not None and partner.gender == "male", text
            assert term.gender == "female"
            assert term.plural.endswith("women") and partner.plural.endswith("men")


def test_winobias_occupations_are_all_present_as_professions() -> None:
    professions = {t.text for t in terms_by_group()["profession"]}
    assert len(WINOBIAS) == 40
    assert [w for w in WINOBIAS if w not in professions] == []


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
