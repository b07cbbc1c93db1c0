"""The relation contract (`harness.testing.check_relation`) over every registered relation:
a relation that breaks it is a bug in the relation. This replaces each family's own
determinism, purity and never-raises properties."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.family_parts import relation_classes
from harness.testing import check_relation, relation_of

# Options for the relations that have no case with their defaults (their cases come from a
# file or an analysis); every other relation is checked with its defaults.
_CANDIDATE = {
    "arm": "two_character",
    "identity_category": "gender",
    "location_category": "healthcare",
    "identity": "female",
    "concept": "caring",
    "score": 0.3,
    "a": 12,
    "n": 40,
    "p": 0.001,
    "p_bh": 0.01,
}


def _released_folder(root: Path) -> str:
    folder = root / "released"
    folder.mkdir()
    with (folder / "gender_two_character.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Location Category", "Demographic Identity", "Phrase", "Score", "P-Value"])
        w.writerow(["Healthcare", "Female", "Caring", "0.31", "0.0001"])
        w.writerow(["Sports", "Male", "supportive", "0.2", "0.01"])
    return str(folder)


def _options(name: str, tmp_path: Path) -> dict[str, Any]:
    if name == "badf.exclusivity":
        return {"candidates": [_CANDIDATE, {**_CANDIDATE, "identity": "male", "concept": "strong"}]}
    if name == "badf.released":
        return {"folder": _released_folder(tmp_path)}
    return {}


@pytest.mark.parametrize("name", sorted(relation_classes()))
def test_every_registered_relation_keeps_the_contract(name: str, tmp_path: Path) -> None:
    """Each relation with its default options (or those above)."""
    relation = relation_classes()[name]
    options = _options(name, tmp_path)
    assert relation_of(relation, options).case_count() != 0, (
        f"{name} has no case with these options: give it options above"
    )
    check_relation(relation, options, max_examples=30)


# Options other than the defaults, where they change what a case holds or how it is asked.
OTHER_OPTIONS = [
    ("metaquerier.mr1", {"list_size": 2, "genders": ["male"]}),
    ("metaquerier.mr2", {"list_size": 12, "insert_size": 5, "genders": ["female", "male"]}),
    ("metafair.mr8", {"dimensions": ["religion", "physical_appearance"]}),
    ("metafair.mr1", {"jury": 5, "judgings": 2, "jury_rule": "majority_of_valid"}),
    ("metafair.mr3", {"jury": 1, "control": False}),
]


@pytest.mark.parametrize(("name", "options"), OTHER_OPTIONS)
def test_relations_keep_the_contract_with_other_options(name: str, options: dict[str, Any]) -> None:
    check_relation(relation_classes()[name], options, max_examples=20)
