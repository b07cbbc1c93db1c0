"""BADF significance: the distinctiveness score and chi-squared test against brute force, and
the analysis (unification -> groups -> tests -> FDR -> candidates) on hand-built lists."""

from __future__ import annotations

import math

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from relations.badf import significance
from relations.badf.analysis import AnalysisSettings, Observation, analyse, observations
from relations.badf.embedding import LexicalEmbedder
from relations.badf.significance import ConceptList, chi2_p, distinctiveness

CONCEPTS = ["caring", "brave", "calm", "curious"]


def brute_chi2(table: list[list[int]], yates: bool) -> float:
    """The chi-squared statistic of independence, written out (for the test only)."""
    obs = numpy.asarray(table, dtype=float)
    total = obs.sum()
    expected = numpy.outer(obs.sum(axis=1), obs.sum(axis=0)) / total
    dof = (obs.shape[0] - 1) * (obs.shape[1] - 1)
    if dof == 1 and yates:
        diff = expected - obs
        obs = obs + numpy.minimum(0.5, numpy.abs(diff)) * numpy.sign(diff)
    stat = float(((obs - expected) ** 2 / expected).sum())
    return float(chi2.sf(stat, dof))


lists_strategy = st.dictionaries(
    st.sampled_from(["A", "B", "C", "D"]),
    st.lists(st.frozensets(st.sampled_from(CONCEPTS), max_size=4), min_size=1, max_size=12),
    min_size=2,
)


@settings(max_examples=150, deadline=None)
@given(raw=lists_strategy, yates=st.booleans(), denominator=st.sampled_from(["lists", "concepts"]))
def test_scores_and_tests_match_brute_force(
    raw: dict[str, list[frozenset[str]]], yates: bool, denominator: str
) -> None:
    by_identity = {
        d: [ConceptList(f"{d}{i}", s, len(s) + 1) for i, s in enumerate(lists)]
        for d, lists in raw.items()
    }
    tests = {
        t.concept: t
        for t in significance.tested_concepts(by_identity, denominator=denominator, yates=yates)
    }  # type: ignore[arg-type]
    seen = {c for lists in raw.values() for s in lists for c in s}
    assert set(tests) == seen
    for c in seen:
        a = {d: sum(1 for s in lists if c in s) for d, lists in raw.items()}
        n = {d: len(lists) for d, lists in raw.items()}
        for d in raw:
            m = min(a[o] for o in raw if o != d)
            den = n[d] if denominator == "lists" else sum(len(s) + 1 for s in raw[d])
            assert tests[c].score(d) == pytest.approx(max(0.0, (a[d] - m) / den))
        table = [[a[d], n[d] - a[d]] for d in sorted(raw)]
        if all(r[0] == n_ for r, n_ in zip(table, [n[d] for d in sorted(raw)], strict=True)):
            assert math.isnan(tests[c].p)  # present everywhere: nothing to test
        else:
            assert tests[c].p == pytest.approx(brute_chi2(table, yates), rel=1e-9, abs=1e-12)


def test_hand_computed_table() -> None:
    # women: 6 of 10 lists say caring; men: 2 of 10. S = (6 - 2) / 10.
    assert distinctiveness(6, [2], 10) == pytest.approx(0.4)
    assert distinctiveness(2, [6], 10) == 0.0
    assert distinctiveness(3, [], 10) == 0.0
    assert distinctiveness(3, [1], 0) == 0.0
    # [[6, 4], [2, 8]]: expected 4, 6, 4, 6; |O - E| = 2 everywhere.
    # Yates: X2 = 4 * 1.5**2 / (4, 6, 4, 6) summed = 1.875 -> p = 0.17090; plain: 10/3 -> 0.06789
    assert chi2_p([6, 2], [10, 10]) == pytest.approx(0.170904, abs=1e-6)
    assert chi2_p([6, 2], [10, 10], yates=False) == pytest.approx(0.067889, abs=1e-6)
    assert math.isnan(chi2_p([0, 0], [5, 5])) and math.isnan(chi2_p([5], [5]))


def _obs(
    identity: str, k: int, concepts: tuple[str, ...], group: str = "healthcare"
) -> Observation:
    return Observation(
        f"badf.story/{identity}{k}/r0@m", ("base-two", "gender", group), identity, concepts
    )


def test_analysis_keeps_a_strong_association_and_links_its_stories() -> None:
    found = [_obs("female", k, ("very caring",) if k < 30 else ("calm",)) for k in range(40)]
    found += [_obs("male", k, ("caring",) if k < 4 else ("calm",)) for k in range(40)]
    result = analyse(found, AnalysisSettings())
    (cand,) = [c for c in result.candidates if c.identity == "female"]
    # "very caring" and "caring" unify (lexical embedder) to the more frequent phrase
    assert cand.concept == "very caring" and set(cand.members) == {"very caring", "caring"}
    assert (cand.a, cand.n) == (30, 40) and cand.score == pytest.approx((30 - 4) / 40)
    assert cand.p < 1e-6 and cand.p_bh >= cand.p
    assert len(cand.cases) == 20 and all(c.startswith("badf.story/female") for c in cand.cases)
    # "calm" is more frequent for men: kept for men only (positive score)
    assert {(c.identity, c.concept) for c in result.candidates} == {
        ("female", "very caring"),
        ("male", "calm"),
    }


def test_keep_by_adjusted_p_is_stricter_and_denominator_option_changes_the_score() -> None:
    found = []
    for g in ["g1", "g2", "g3", "g4", "g5", "g6"]:
        found += [_obs("female", k, ("brave",) if k < 9 else ("quiet",), g) for k in range(20)]
        found += [_obs("male", k, ("brave",) if k < 3 else ("quiet",), g) for k in range(20)]
    raw = analyse(found, AnalysisSettings(yates=False))
    strict = analyse(found, AnalysisSettings(yates=False, keep_by="p_bh"))
    assert len(strict.candidates) <= len(raw.candidates)
    by_concepts = analyse(found, AnalysisSettings(yates=False, denominator="concepts"))
    assert [c.score for c in by_concepts.candidates] == [
        c.score for c in raw.candidates
    ]  # 1 concept per list
    assert raw.groups == 6 and raw.lists == 240


def test_observations_read_held_verdicts_only() -> None:
    evidence = {
        "arm": "base-two",
        "identity_category": "gender",
        "location_category": "media",
        "characters": [
            {"identity": "female", "concepts": ["brave"]},
            {"identity": "male", "concepts": []},
        ],
    }
    got = list(observations([("c1", "HELD", evidence), ("c2", "INVALID", {})]))
    assert [(o.case_id, o.identity, o.concepts) for o in got] == [
        ("c1", "female", ("brave",)),
        ("c1", "male", ()),
    ]
    assert got[0].group == ("base-two", "gender", "media")


def test_the_offline_sentence_embedder_is_the_default() -> None:
    # MiniLM (numpy) is the default; its threshold is the paper's 0.63, which merges no
    # unrelated pair of the labelled set (docs/embeddings.md).
    assert AnalysisSettings().embedder == "minilm-l6-numpy"
    assert AnalysisSettings().effective_threshold() == 0.63
    assert AnalysisSettings(embedder=LexicalEmbedder().name).effective_threshold() == 0.6
    assert AnalysisSettings(threshold=0.83).effective_threshold() == 0.83
