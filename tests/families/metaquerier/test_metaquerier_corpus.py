"""MetaQuerier's corpus: the social-group terms of corpora/social_groups.csv."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import corpora
from relations.metaquerier.corpus import GROUPS, social_terms, terms_by_group

CORPORA_DIR = Path(corpora.__file__).parent

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
