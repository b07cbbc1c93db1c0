"""`identity_tests` gives each test the strata holding its concept and sums the others into
one (or two) without it: every test equals, to the last bit, the test over all the strata
as it was computed before (`every_stratum`, kept here as the reference)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.family_api import compare_to_rest_stratified
from relations.badf.significance import ConceptList, IdentityTest, identity_tests

ALONE = "\x00alone"


def every_stratum(by_identity: Mapping[str, Sequence[ConceptList]]) -> list[IdentityTest]:
    """The tests over every stratum of the group, each concept and identity apart."""
    identities = sorted(d for d, lists in by_identity.items() if lists)
    stories: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for d in identities:
        for concept_list in by_identity[d]:
            stories.setdefault(concept_list.case_id, []).append((d, concept_list.concepts))
    strata: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for story, lists in stories.items():
        strata.setdefault(story if len(lists) > 1 else ALONE, []).extend(lists)
    concepts = sorted({c for lists in stories.values() for _, cs in lists for c in cs})
    out = []
    for concept in concepts:
        counts = []
        for lists in strata.values():
            per: dict[str, list[int]] = {}
            for d, cs in lists:
                c = per.setdefault(d, [0, 0])
                c[0] += concept in cs
                c[1] += 1
            counts.append(per)
        for d in identities:
            tables = []
            for per in counts:
                k, n = per.get(d, (0, 0))
                all_k = sum(c[0] for c in per.values())
                all_n = sum(c[1] for c in per.values())
                tables.append((k, n, all_k - k, all_n - n))
            g = compare_to_rest_stratified(tables)
            out.append(
                IdentityTest(concept, d, g.k, g.n, g.rest_k, g.rest_n, g.diff, g.p, g.p_min, g.test)
            )
    return out


IDENTITIES = ["woman", "man", "non-binary"]
CONCEPTS = ["caring", "calm", "tall", "kind", "brave"]
CHARACTER = st.tuples(
    st.sampled_from(IDENTITIES), st.frozensets(st.sampled_from(CONCEPTS), max_size=3)
)
# a story: one or two characters; a group: its stories
GROUP = st.lists(st.lists(CHARACTER, min_size=1, max_size=2), min_size=1, max_size=14)


def grouped(stories: list[list[tuple[str, frozenset[str]]]]) -> dict[str, list[ConceptList]]:
    out: dict[str, list[ConceptList]] = {}
    for s, cast in enumerate(stories):
        for identity, concepts in cast:
            out.setdefault(identity, []).append(ConceptList(f"s{s}", concepts, len(concepts)))
    return out


@given(GROUP)
@settings(max_examples=250, deadline=None)
def test_the_tests_are_those_over_every_stratum(
    stories: list[list[tuple[str, frozenset[str]]]],
) -> None:
    group = grouped(stories)
    # reprs: bit-equal floats print alike, and NaN (a test that cannot run) equals itself
    assert repr(identity_tests(group)) == repr(every_stratum(group))


def test_an_identity_never_beside_another_still_cannot_be_tested() -> None:
    """Women only in one-character stories, men only in two-man stories: no stratum holds
    women and another identity... except the single-character one, which does here; with
    every single-character story a woman's, the test of women cannot run."""
    group = grouped(
        [
            [("woman", frozenset({"caring"}))],
            [("woman", frozenset())],
            [("man", frozenset({"caring"})), ("man", frozenset())],
        ]
    )
    tests = {(t.concept, t.identity): t for t in identity_tests(group)}
    assert tests[("caring", "woman")].test == "none"
    assert repr(identity_tests(group)) == repr(every_stratum(group))
