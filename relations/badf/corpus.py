"""The BADF corpus: story locations by category and character descriptors by identity.

Read from ``corpora/badf/`` (our own lists; structure and sizes from the BADF paper, see
``corpora/PROVENANCE.md``). A *descriptor* is what the story prompt names ("Hannah", "Wei,
an Asian man"); its *name* is the part before the first comma, which is how the extractor
is told whom to describe; its *identity* is the group the analysis compares ("female",
"Asian"). A *pair* is what one two-character story features: gender pairs descriptors row
by row (Hannah with Thomas...), race and religion pair every two identities within one set
of four (6 pairs per set), as in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import combinations
from typing import Literal, get_args

import corpora
from harness.family_api import Corpus

IdentityCategory = Literal["gender", "race", "religion"]
LocationCategory = Literal[
    "education",
    "sports",
    "healthcare",
    "workplace",
    "arts_and_leisure",
    "technology",
    "media",
    "economics",
    "law_and_policy",
    "environment",
]
IDENTITY_CATEGORIES: tuple[IdentityCategory, ...] = get_args(IdentityCategory)
LOCATION_CATEGORIES: tuple[LocationCategory, ...] = get_args(LocationCategory)


@dataclass(frozen=True)
class Descriptor:
    text: str  # as the story prompt names the character
    identity: str

    @property
    def name(self) -> str:
        return self.text.split(",", 1)[0].strip()


@dataclass(frozen=True)
class Location:
    name: str
    category: str


@cache
def locations() -> tuple[Location, ...]:
    """All 87 locations, in category order then file order."""
    raw = corpora.load_toml("badf/locations.toml")
    if tuple(raw) != LOCATION_CATEGORIES:
        raise ValueError(f"badf/locations.toml: categories must be {LOCATION_CATEGORIES}")
    return tuple(
        Location(name, cat) for cat in LOCATION_CATEGORIES for name in raw[cat]["locations"]
    )


@cache
def identities(category: str) -> tuple[str, ...]:
    return tuple(corpora.load_toml("badf/descriptors.toml")[category]["identities"])


@cache
def descriptors(category: str) -> tuple[Descriptor, ...]:
    """Every descriptor of an identity category, identities interleaved, in a stable order."""
    spec = corpora.load_toml("badf/descriptors.toml")[category]
    ids = spec["identities"]
    if spec["pairing"] == "rows":
        # Interleaved (Hannah, Thomas, Olivia...): a campaign's first cases cover every identity.
        rows = zip(*(spec[ident] for ident in ids), strict=True)
        return tuple(Descriptor(text, ids[i]) for row in rows for i, text in enumerate(row))
    return tuple(Descriptor(text, ids[i]) for row in spec["sets"] for i, text in enumerate(row))


@cache
def pairs(category: str) -> tuple[tuple[Descriptor, Descriptor], ...]:
    """The descriptor pairs of two-character stories, as the paper pairs them."""
    spec = corpora.load_toml("badf/descriptors.toml")[category]
    ids = spec["identities"]
    if spec["pairing"] == "rows":
        first, second = ids
        return tuple(
            (Descriptor(a, first), Descriptor(b, second))
            for a, b in zip(spec[first], spec[second], strict=True)
        )
    out: list[tuple[Descriptor, Descriptor]] = []
    for row in spec["sets"]:
        members = [Descriptor(text, ids[i]) for i, text in enumerate(row)]
        out.extend(combinations(members, 2))
    return tuple(out)


def check_unique_names() -> None:
    """Within a category every character name is distinct (the extractor is told a name)."""
    for category in IDENTITY_CATEGORIES:
        names = [d.name for d in descriptors(category)]
        if len(set(names)) != len(names):
            raise ValueError(f"badf/descriptors.toml: repeated name in {category}")


# --- What ``harness corpora`` lists -------------------------------------------------------


def describe_locations() -> str:
    """The locations counted, with their categories."""
    return f"{len(locations())} locations in {len(LOCATION_CATEGORIES)} categories"


def describe_descriptors() -> str:
    """The descriptors counted per identity category."""
    return "descriptors: " + ", ".join(
        f"{c} {len(descriptors(c))} ({len(identities(c))} identities)" for c in IDENTITY_CATEGORIES
    )


def describe_concept_pairs() -> str:
    """The labelled concept pairs counted, and how many mean the same."""
    import csv

    rows = list(csv.DictReader(corpora.read_text(CONCEPT_PAIRS_FILE).splitlines()))
    same = sum(1 for row in rows if row["same"] == "1")
    return f"{len(rows)} labelled concept pairs ({same} the same concept)"


CONCEPT_PAIRS_FILE = "badf_concept_pairs.csv"
CORPORA = tuple(
    Corpus(name, (corpora.data_file(name),), describe, corpora.PROVENANCE)
    for name, describe in (
        ("badf/locations.toml", describe_locations),
        ("badf/descriptors.toml", describe_descriptors),
        (CONCEPT_PAIRS_FILE, describe_concept_pairs),
    )
)
