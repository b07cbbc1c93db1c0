"""MetaQuerier's corpus: the social-group terms of ``corpora/social_groups.csv`` (a term, its
group, its explicit gender if any, its plural), read once per process, and its description
for ``harness corpora``."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from functools import cache

import corpora
from harness.family_api import Corpus

GROUPS = ("profession", "gender", "race", "religion")
TERMS_FILE = "social_groups.csv"


@dataclass(frozen=True)
class Term:
    """A social-group term. ``gender`` is set for terms that state a gender explicitly."""

    text: str
    group: str
    gender: str | None  # "female" | "male" | None
    plural: str


@cache
def social_terms() -> tuple[Term, ...]:
    """Every term of ``social_groups.csv`` (columns: term, group, gender, plural)."""
    rows = csv.DictReader(corpora.read_text(TERMS_FILE).splitlines())
    terms = []
    for line, row in enumerate(rows, start=2):
        group = row["group"].strip()
        if group not in GROUPS:
            raise ValueError(f"social_groups.csv line {line}: unknown group {group!r}")
        gender = row["gender"].strip() or None
        if gender not in (None, "female", "male"):
            raise ValueError(f"social_groups.csv line {line}: gender must be female, male or empty")
        text = row["term"].strip()
        terms.append(Term(text, group, gender, row["plural"].strip() or text + "s"))
    return tuple(terms)


@cache
def terms_by_group() -> dict[str, tuple[Term, ...]]:
    """The terms of each group, in file order."""
    out: dict[str, list[Term]] = {g: [] for g in GROUPS}
    for term in social_terms():
        out[term.group].append(term)
    return {g: tuple(ts) for g, ts in out.items()}


def describe_terms() -> str:
    """The terms counted per group and explicit gender, for ``harness corpora``."""
    terms = social_terms()
    by_group = Counter(t.group for t in terms)
    gendered = Counter(t.gender for t in terms if t.gender)
    return (
        f"{len(terms)} terms: "
        + ", ".join(f"{g} {by_group[g]}" for g in GROUPS)
        + f" (explicitly female {gendered['female']}, male {gendered['male']})"
    )


CORPORA = (
    Corpus(TERMS_FILE, (corpora.data_file(TERMS_FILE),), describe_terms, corpora.PROVENANCE),
)
