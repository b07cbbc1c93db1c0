"""Meta-Fair's corpora: the attribute catalogue (``corpora/attributes.toml``: attributes per
dimension, proper nouns per category), the inverted-consistency question templates of MR8's
older reading (``corpora/inverted_questions.toml``), the hand-written test sets and the
generation prompts (``corpora/metafair/``); their loaders (validated, read once per process)
and their descriptions for ``harness corpora``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

import corpora
from harness.family_api import Corpus

# --- Attribute catalogue and inverted-consistency questions -------------------------------

ATTRIBUTES_FILE = "attributes.toml"
QUESTIONS_FILE = "inverted_questions.toml"
PLACEHOLDER = "{attribute_phrase}"

# Words whose first letter misleads the a/an choice (sound, not spelling, decides).
_A_BEFORE_VOWEL_LETTER = ("uni", "use", "usu", "uti", "eu", "one", "once")
_AN_BEFORE_H = ("hour", "honest", "honor", "honour", "heir")


def indefinite_article(word: str) -> str:
    """``"a"`` or ``"an"`` for ``word`` (English, by the sound of its first letters)."""
    low = word.strip().lower()
    if low.startswith(_AN_BEFORE_H):
        return "an"
    if low.startswith(_A_BEFORE_VOWEL_LETTER):
        return "a"
    return "an" if low[:1] in ("a", "e", "i", "o", "u") else "a"


@dataclass(frozen=True)
class Attribute:
    """A demographic attribute; ``phrase`` is its noun phrase with article ("an atheist person")."""

    dimension: str
    word: str
    phrase: str


@dataclass(frozen=True)
class AttributeCatalogue:
    """``attributes.toml``: attributes per dimension and proper nouns per category."""

    dimensions: tuple[str, ...]
    attributes: tuple[Attribute, ...]
    baselines: tuple[Attribute, ...]
    proper_nouns: tuple[tuple[str, str, tuple[str, ...]], ...]  # (category, label, names)

    def of(self, dimension: str) -> tuple[Attribute, ...]:
        if dimension not in self.dimensions:
            raise KeyError(f"no attribute dimension {dimension!r}; known: {self.dimensions}")
        return tuple(a for a in self.attributes if a.dimension == dimension)

    def names(self, category: str, label: str) -> tuple[str, ...]:
        for cat, lab, names in self.proper_nouns:
            if (cat, lab) == (category, label):
                return names
        raise KeyError(f"no proper nouns for {category}.{label}")

    def name_labels(self, category: str) -> tuple[str, ...]:
        return tuple(lab for cat, lab, _ in self.proper_nouns if cat == category)


def _table(data: Any, where: str, file: str) -> dict[str, Any]:
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{file}: {where} must be a non-empty table")
    return data


def _strings(value: Any, where: str, file: str, *, allow_empty: bool = False) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{file}: {where} must be a list of non-empty strings")
    if not value and not allow_empty:
        raise ValueError(f"{file}: {where} must not be empty")
    if len({v.lower() for v in value}) != len(value):
        raise ValueError(f"{file}: {where} contains duplicates")
    return tuple(v.strip() for v in value)


def _string(value: Any, where: str, file: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{file}: {where} must be a non-empty string")
    return value


@cache
def attribute_catalogue() -> AttributeCatalogue:
    """Load and validate ``attributes.toml`` (read once per process)."""
    file = ATTRIBUTES_FILE
    data = corpora.load_toml(file)
    attributes: list[Attribute] = []
    baselines: list[Attribute] = []
    dims = _table(data.get("dimensions"), "dimensions", file)
    for dim, spec in dims.items():
        spec = _table(spec, f"dimensions.{dim}", file)
        template = _string(spec.get("phrase"), f"dimensions.{dim}.phrase", file)
        if "{attribute}" not in template:
            raise ValueError(f"{file}: dimensions.{dim}.phrase must contain {{attribute}}")
        try:
            template.format(article="a", attribute="x")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"{file}: dimensions.{dim}.phrase may use only {{article}} and {{attribute}}"
            ) from exc
        words = _strings(spec.get("attributes"), f"dimensions.{dim}.attributes", file)
        own = {
            w: Attribute(dim, w, template.format(article=indefinite_article(w), attribute=w))
            for w in words
        }
        attributes.extend(own.values())
        for b in _strings(
            spec.get("baseline", []), f"dimensions.{dim}.baseline", file, allow_empty=True
        ):
            if b not in own:
                raise ValueError(f"{file}: dimensions.{dim}.baseline {b!r} is not an attribute")
            baselines.append(own[b])
    nouns: list[tuple[str, str, tuple[str, ...]]] = []
    for cat, labels in _table(data.get("proper_nouns"), "proper_nouns", file).items():
        for label, names in _table(labels, f"proper_nouns.{cat}", file).items():
            nouns.append((cat, label, _strings(names, f"proper_nouns.{cat}.{label}", file)))
    return AttributeCatalogue(tuple(dims), tuple(attributes), tuple(baselines), tuple(nouns))


@dataclass(frozen=True)
class InvertedQuestion:
    """A question asked with and without a demographic attribute (Meta-Fair MR8)."""

    id: str
    dimensions: tuple[str, ...]
    with_attribute: str  # holds exactly one {attribute_phrase}
    without_attribute: str

    def ask(self, attribute: Attribute) -> str:
        return self.with_attribute.replace(PLACEHOLDER, attribute.phrase)


@dataclass(frozen=True)
class InvertedQuestions:
    """``inverted_questions.toml``: the templates and the instructions around them."""

    questions: tuple[InvertedQuestion, ...]
    subject_suffix: str
    followup: str  # placeholders {question} and {answer}

    def by_id(self, question_id: str) -> InvertedQuestion:
        for q in self.questions:
            if q.id == question_id:
                return q
        raise KeyError(f"no inverted question {question_id!r}")

    def for_dimension(self, dimension: str) -> tuple[InvertedQuestion, ...]:
        return tuple(q for q in self.questions if dimension in q.dimensions)

    def followup_prompt(self, question: InvertedQuestion, answer: str) -> str:
        # replace(), not format(): the answer is model text and may hold braces.
        filled = self.followup.replace("{question}", question.without_attribute)
        return filled.replace("{answer}", answer.strip())


def _question(row: Any, index: int, known_dims: tuple[str, ...], file: str) -> InvertedQuestion:
    where = f"question[{index}]"
    row = _table(row, where, file)
    qid = _string(row.get("id"), f"{where}.id", file)
    where = f"question {qid!r}"
    dims = _strings(row.get("dimensions"), f"{where}.dimensions", file)
    unknown = [d for d in dims if d not in known_dims]
    if unknown:
        raise ValueError(f"{file}: {where}.dimensions has unknown {unknown}; known: {known_dims}")
    with_attr = _string(row.get("with_attribute"), f"{where}.with_attribute", file)
    without = _string(row.get("without_attribute"), f"{where}.without_attribute", file)
    if with_attr.count(PLACEHOLDER) != 1 or with_attr.replace(PLACEHOLDER, "").count("{"):
        raise ValueError(
            f"{file}: {where}.with_attribute must hold {PLACEHOLDER} exactly once "
            "and no other braces"
        )
    if "{" in without or "}" in without:
        raise ValueError(f"{file}: {where}.without_attribute must hold no placeholder")
    return InvertedQuestion(qid, dims, with_attr, without)


@cache
def inverted_questions() -> InvertedQuestions:
    """Load and validate ``inverted_questions.toml`` (read once per process)."""
    file = QUESTIONS_FILE
    data = corpora.load_toml(file)
    instructions = _table(data.get("instructions"), "instructions", file)
    suffix = _string(instructions.get("subject_suffix"), "instructions.subject_suffix", file)
    followup = _string(instructions.get("followup"), "instructions.followup", file)
    for slot in ("{question}", "{answer}"):
        if followup.count(slot) != 1:
            raise ValueError(f"{file}: instructions.followup must hold {slot} exactly once")
    rows = data.get("question")
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{file}: [[question]] must be a non-empty array of tables")
    dims = attribute_catalogue().dimensions
    questions = tuple(_question(row, i, dims, file) for i, row in enumerate(rows))
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"{file}: question ids must be unique; repeated: {dup}")
    return InvertedQuestions(questions, suffix.strip(), followup.strip())


# --- What ``harness corpora`` lists -------------------------------------------------------

OPEN_TESTS_FILE = "metafair/open_tests.json"
CLOSED_TESTS_FILE = "metafair/closed_tests.json"
GENERATION_PROMPTS_FILE = "metafair/generation_prompts.toml"
CROSSED_BASES_FILE = "metafair/crossed_bases.toml"
CROSSED_OPEN_FILE = "metafair/crossed_open_tests.json"
CROSSED_CLOSED_FILE = "metafair/crossed_closed_tests.json"


def describe_attributes() -> str:
    """The attributes counted per dimension."""
    catalogue = attribute_catalogue()
    return f"{len(catalogue.attributes)} attributes: " + ", ".join(
        f"{d} {len(catalogue.of(d))}" for d in catalogue.dimensions
    )


def describe_questions() -> str:
    """How many question templates."""
    return f"{len(inverted_questions().questions)} question templates"


def _describe_testset(name: str) -> str:
    from relations.metafair.testset import read_testset

    tests = read_testset(corpora.data_file(name))
    mrs = sorted({t.mr for t in tests})
    dimensions = {t.dimension for t in tests}
    return f"{len(tests)} tests of MR{mrs[0]}-MR{mrs[-1]} over {len(dimensions)} dimensions"


def describe_open_tests() -> str:
    """The hand-written tests of MR1-MR10, counted."""
    return _describe_testset(OPEN_TESTS_FILE)


def describe_closed_tests() -> str:
    """The hand-written tests of MR11-MR14, counted."""
    return _describe_testset(CLOSED_TESTS_FILE)


def describe_generation_prompts() -> str:
    """How many relations have a generation task."""
    data = tomllib.loads(corpora.read_text(GENERATION_PROMPTS_FILE))
    return f"generation tasks for {len(data['tasks'])} relations"


def describe_crossed_bases() -> str:
    """The base prompts of the crossed sets, counted."""
    data = tomllib.loads(corpora.read_text(CROSSED_BASES_FILE))
    return (
        f"{len(data['bases'])} base prompts, each crossed with "
        f"{sum(len(v) for v in data['attributes'].values())} attributes in "
        f"{len(data['attributes'])} dimensions"
    )


def describe_crossed_open() -> str:
    """The crossed tests of MR1-MR10, counted."""
    return _describe_testset(CROSSED_OPEN_FILE) + " (crossed)"


def describe_crossed_closed() -> str:
    """The crossed tests of MR11-MR14, counted."""
    return _describe_testset(CROSSED_CLOSED_FILE) + " (crossed)"


def _corpus(name: str, describe: Any) -> Corpus:
    return Corpus(name, (corpora.data_file(name),), describe, corpora.PROVENANCE)


CORPORA = (
    _corpus(ATTRIBUTES_FILE, describe_attributes),
    _corpus(QUESTIONS_FILE, describe_questions),
    _corpus(OPEN_TESTS_FILE, describe_open_tests),
    _corpus(CLOSED_TESTS_FILE, describe_closed_tests),
    _corpus(GENERATION_PROMPTS_FILE, describe_generation_prompts),
    _corpus(CROSSED_BASES_FILE, describe_crossed_bases),
    _corpus(CROSSED_OPEN_FILE, describe_crossed_open),
    _corpus(CROSSED_CLOSED_FILE, describe_crossed_closed),
)
