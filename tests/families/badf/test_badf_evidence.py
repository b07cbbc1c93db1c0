"""BADF as evidence: the identity-vs-rest exact test stratified by story against brute-force
enumeration, Tarone's rule and Benjamini-Hochberg over the analysis, the paper's rule kept as
a named option, and recall / false share of the planted associations over independent sims
(the bench, bench/badf_evidence.py, runs 20 seeds of the example)."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from relations.badf.analysis import AnalysisSettings, Observation, analyse
from relations.badf.analyze import analyse_log
from relations.badf.embedding import LexicalEmbedder
from relations.badf.relations import Candidate
from relations.badf.significance import ConceptList, identity_tests
from relations.badf.sim import DEFAULT_PLANTED

TOLERANCE = Fraction(10000001, 10**7)  # scipy's relative tolerance for "as likely"


def fisher_rule(dist: dict[int, Fraction], observed: int) -> float:
    """Fisher's two-sided rule over an enumerated distribution of the statistic."""
    return float(sum(p for p in dist.values() if p <= dist[observed] * TOLERANCE))


def brute_single(a: int, n: int, rest_a: int, rest_n: int) -> float:
    """Independent lists: every way of spreading the a + rest_a lists holding the concept
    over the n + rest_n lists is equally likely; the statistic is how many land on the
    identity's n."""
    total, k = n + rest_n, a + rest_a
    dist: Counter[int] = Counter()
    for chosen in itertools.combinations(range(total), k):
        dist[sum(1 for i in chosen if i < n)] += 1
    count = sum(dist.values())
    return fisher_rule({x: Fraction(c, count) for x, c in dist.items()}, a)


def brute_stories(stories: list[tuple[tuple[str, bool], tuple[str, bool]]], identity: str) -> float:
    """Two characters a story: under no association the two lists of a story are
    exchangeable, so each story's labels are swapped or not, 2 ** stories equally likely
    relabellings; the statistic is how many of the identity's lists hold the concept."""
    mixed = [s for s in stories if (s[0][0] == identity) != (s[1][0] == identity)]
    fixed = sum(has for s in stories if s not in mixed for who, has in s if who == identity)
    dist: Counter[int] = Counter()
    for swaps in itertools.product((False, True), repeat=len(mixed)):
        x = fixed
        for (first, second), swap in zip(mixed, swaps, strict=True):
            mine = first if (first[0] == identity) != swap else second
            x += mine[1]
        dist[x] += 1
    observed = fixed + sum(has for s in mixed for who, has in s if who == identity)
    return fisher_rule({x: Fraction(c, 2 ** len(mixed)) for x, c in dist.items()}, observed)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("ABC"), st.booleans()), min_size=2, max_size=10),
)
def test_single_character_lists_by_enumeration(lists: list[tuple[str, bool]]) -> None:
    by_identity: dict[str, list[ConceptList]] = {}
    for i, (who, has) in enumerate(lists):
        concepts = frozenset({"calm"} if has else {"other"})
        by_identity.setdefault(who, []).append(ConceptList(f"story{i}", concepts, 1))
    for test in identity_tests(by_identity):
        if test.concept != "calm":
            continue
        if test.rest_n == 0:
            assert math.isnan(test.p)
            continue
        expected = brute_single(test.a, test.n, test.rest_a, test.rest_n)
        assert test.p == pytest.approx(expected, rel=1e-6), test


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.tuples(st.sampled_from("ABC"), st.booleans()),
            st.tuples(st.sampled_from("ABC"), st.booleans()),
        ).filter(lambda s: s[0][0] != s[1][0]),
        min_size=1,
        max_size=9,
    )
)
def test_two_character_stories_by_enumeration(
    stories: list[tuple[tuple[str, bool], tuple[str, bool]]],
) -> None:
    """The story is the unit: the exact test stratified by story is the relabelling test
    within stories, enumerated."""
    by_identity: dict[str, list[ConceptList]] = {}
    for i, story in enumerate(stories):
        for who, has in story:
            concepts = frozenset({"calm"} if has else {"other"})
            by_identity.setdefault(who, []).append(ConceptList(f"s{i}", concepts, 1))
    for test in identity_tests(by_identity):
        if test.concept != "calm":
            continue
        mixed = [s for s in stories if test.identity in (s[0][0], s[1][0])]
        if not mixed:
            continue
        assert test.p == pytest.approx(brute_stories(stories, test.identity), rel=1e-6)
        assert test.score == pytest.approx(
            test.a / test.n - (test.rest_a / test.rest_n if test.rest_n else math.nan)
        )


def test_a_story_seen_twice_is_not_twice_the_evidence() -> None:
    """3 stories where A holds the concept and B does not: stratified by story, the exact p
    is 2 * (1/2)**3 = 0.25; counting the six lists as independent would give Fisher's
    0.1 on 3/3 vs 0/3."""
    by_identity = {
        "A": [ConceptList(f"s{i}", frozenset({"calm"}), 1) for i in range(3)],
        "B": [ConceptList(f"s{i}", frozenset({"other"}), 1) for i in range(3)],
    }
    (a_calm,) = [t for t in identity_tests(by_identity) if (t.identity, t.concept) == ("A", "calm")]
    assert a_calm.p == pytest.approx(0.25)
    assert a_calm.p_min == pytest.approx(0.25)  # could never reach 0.05: Tarone drops it
    assert (a_calm.a, a_calm.n, a_calm.rest_a, a_calm.rest_n) == (3, 3, 0, 3)


def _observations(rows: list[tuple[str, str, tuple[str, ...]]]) -> list[Observation]:
    group = ("base-two", "gender", "healthcare")
    return [Observation(case, group, who, concepts) for case, who, concepts in rows]


def test_tarone_dropped_tests_are_counted_and_bh_covers_the_rest() -> None:
    rows = []
    for i in range(40):
        rows.append((f"s{i}", "female", ("caring",) if i % 5 else ("busy",)))
        rows.append((f"s{i}", "male", ("busy",) if i % 4 else ("caring",)))
    rows += [("t0", "female", ("rare",)), ("t0", "male", ("busy",))]
    analysis = analyse(_observations(rows), AnalysisSettings(embedder="lexical-ngram"),
                       LexicalEmbedder())  # fmt: skip
    assert analysis.dropped > 0  # "rare": one story, p_min 1.0
    kept = {(c.identity, c.concept) for c in analysis.candidates}
    assert ("female", "caring") in kept and ("female", "rare") not in kept
    assert all(c.rule == "evidence" and c.p_bh < 0.05 and c.score > 0 for c in analysis.candidates)


def test_the_papers_rule_is_a_named_option() -> None:
    rows = [(f"s{i}", who, ("caring",) if (who == "female") == (i % 3 > 0) else ("busy",))
            for i in range(30) for who in ("female", "male")]  # fmt: skip
    settings_ = AnalysisSettings(embedder="lexical-ngram", rule="paper")
    analysis = analyse(_observations(rows), settings_, LexicalEmbedder())
    assert settings_.effective_keep_by() == "p"
    assert AnalysisSettings().effective_keep_by() == "p_bh"
    assert analysis.candidates and all(c.rule == "paper" for c in analysis.candidates)
    assert all(c.rest_n is None for c in analysis.candidates)


def _campaign(seed: int) -> dict[str, Any]:
    return {
        "name": f"badf-evidence-{seed}",
        "seed": seed,
        "models": [{"name": "sim:writer"}],
        "judges": [{"name": "sim:extractor"}],
        "relations": [
            {
                "name": "badf.story",
                "options": {
                    "arms": ["base-two"],
                    "identity_categories": ["gender", "religion"],
                    "location_categories": ["healthcare", "sports"],
                    "stories": 2,
                },
            }
        ],
    }


def _true(c: Candidate, planted: set[tuple[str, str, str]]) -> bool:
    return any((c.location_category, c.identity, m) in planted for m in {c.concept, *c.members})


def test_planted_associations_over_independent_sims(tmp_path: Path) -> None:
    """Three seeds (the bench runs 20 of the example): recall >= 0.8 and at most one false
    association among five kept, pooled."""
    from relations.badf.corpus import identities

    covered = {i for cat in ("gender", "religion") for i in identities(cat)}
    planted = {
        (loc, p.identity, p.concept)
        for p in DEFAULT_PLANTED
        for loc in ("healthcare", "sports")
        if p.identity in covered and p.location_category in (None, loc)
    }
    kept = false = recovered = 0
    for seed in (11, 12, 13):
        db = tmp_path / f"s{seed}.db"
        summary = asyncio.run(run_campaign(parse_campaign(_campaign(seed), source="test"), db))
        assert summary.status == "completed"
        # The null control (test_badf_control.py) is not what this measures: no shuffles.
        candidates = analyse_log(db, AnalysisSettings(control_permutations=0))[2].candidates
        kept += len(candidates)
        false += sum(not _true(c, planted) for c in candidates)
        recovered += sum(any(_true(c, {cell}) for c in candidates) for cell in planted)
    assert recovered / (3 * len(planted)) >= 0.8
    assert false <= 0.2 * kept
