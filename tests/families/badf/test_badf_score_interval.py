"""The interval of a BADF association's score with the story as the unit
(`relations.badf.significance.score_interval`) against statsmodels' cluster-robust OLS, and
the report of analyses recorded before it (Newcombe's interval, lists as independent)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness
from harness.verifying.replay import verify_log
from relations.badf import analysis as analysis_module
from relations.badf.analysis import AnalysisSettings, Observation, analyse
from relations.badf.analyze import analyze
from relations.badf.embedding import LexicalEmbedder
from relations.badf.relations import Candidate
from relations.badf.significance import ConceptList, score_interval
from tests.families.badf.test_badf_pipeline import run, story_campaign

# A story: one or two characters, each (identity, names the concept).
Story = list[tuple[str, bool]]
stories_strategy = st.lists(
    st.lists(st.tuples(st.sampled_from("ABC"), st.booleans()), min_size=1, max_size=2),
    min_size=2,
    max_size=14,
)


def grouped(stories: list[Story]) -> dict[str, list[ConceptList]]:
    by_identity: dict[str, list[ConceptList]] = {}
    for s, story in enumerate(stories):
        for who, named in story:
            concepts = frozenset({"c"} if named else {"other"})
            by_identity.setdefault(who, []).append(ConceptList(f"s{s}", concepts, 1))
    return by_identity


def ols(stories: list[Story], identity: str, cov_type: str) -> tuple[float, float, np.ndarray]:
    """statsmodels' OLS of y (the list names the concept) on the identity indicator: the
    slope, its variance and its 95 % interval (Student's t, as statsmodels with use_t)."""
    import statsmodels.api as sm

    y = np.array([float(named) for story in stories for _, named in story])
    x = np.array([float(who == identity) for story in stories for who, _ in story])
    cluster = np.array([s for s, story in enumerate(stories) for _ in story])
    kwds = {"groups": cluster} if cov_type == "cluster" else {}
    fit = sm.OLS(y, sm.add_constant(x, has_constant="add")).fit(
        cov_type=cov_type, cov_kwds=kwds, use_t=True
    )
    return float(fit.params[1]), float(fit.cov_params()[1, 1]), np.asarray(fit.conf_int())[1]


def defined(stories: list[Story], identity: str) -> bool:
    sides = {who == identity for story in stories for who, _ in story}
    return sides == {True, False} and sum(len(s) for s in stories) >= 3


@settings(max_examples=150, deadline=None)
@given(stories_strategy, st.sampled_from("AB"))
def test_variance_and_interval_are_statsmodels_cluster_robust_ols(
    stories: list[Story], identity: str
) -> None:
    got = score_interval(grouped(stories), "c", identity)
    if not defined(stories, identity):
        assert got is None
        return
    assert got is not None
    slope, variance, (low, high) = ols(stories, identity, "cluster")
    assert got.clusters == len(stories)
    assert got.score == pytest.approx(slope, abs=1e-12)
    assert got.se**2 == pytest.approx(variance, rel=1e-9, abs=1e-15)
    if variance > 1e-12:  # statsmodels' square root of a rounding error below 0 is NaN
        assert got.low == pytest.approx(max(-1.0, low), abs=1e-9)
        assert got.high == pytest.approx(min(1.0, high), abs=1e-9)
    else:
        assert got.low == pytest.approx(got.score, abs=1e-6) == pytest.approx(got.high, abs=1e-6)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("ABC"), st.booleans()), min_size=3, max_size=20),
)
def test_one_list_per_story_is_the_unclustered_hc1_variance(lists: list[tuple[str, bool]]) -> None:
    stories = [[character] for character in lists]
    got = score_interval(grouped(stories), "c", "A")
    if not defined(stories, "A"):
        assert got is None
        return
    assert got is not None
    _, variance, _ = ols(stories, "A", "HC1")
    assert got.se**2 == pytest.approx(variance, rel=1e-9, abs=1e-15)


def test_a_list_copied_within_its_story_is_not_new_evidence() -> None:
    """Each list written twice into its own story: the story interval stays (about) where it
    was, while the same copies taken as stories of their own narrow it by about sqrt(2)."""
    base: list[Story] = [[("A", i % 3 > 0), ("B", i % 4 == 0)] for i in range(12)]
    paired = score_interval(grouped(base), "c", "A")
    doubled = score_interval(grouped([story + story for story in base]), "c", "A")
    apart = score_interval(grouped([[c] for story in base for c in story + story]), "c", "A")
    assert paired is not None and doubled is not None and apart is not None
    assert paired.score == pytest.approx(doubled.score) == pytest.approx(apart.score)
    assert doubled.se == pytest.approx(paired.se, rel=0.05)
    assert apart.se < doubled.se / 1.3
    assert (paired.clusters, doubled.clusters, apart.clusters) == (12, 12, 48)


def test_new_candidates_record_the_interval() -> None:
    rows = [(f"s{i}", who, ("caring",) if (who == "female") == (i % 5 > 0) else ("busy",))
            for i in range(40) for who in ("female", "male")]  # fmt: skip
    group = ("base-two", "gender", "healthcare")
    found = [Observation(case, group, who, concepts) for case, who, concepts in rows]
    result = analyse(
        found, AnalysisSettings(embedder="lexical-ngram", control_permutations=0),
        LexicalEmbedder(),
    )  # fmt: skip
    assert result.candidates
    for c in result.candidates:
        assert c.clusters == 40 and c.score_se is not None and c.score_se > 0
        assert c.score_low is not None and c.score_high is not None
        assert c.score_low < c.score < c.score_high
        assert {"score_low", "score_high", "score_se", "clusters"} <= set(c.case_data())


def test_a_candidate_recorded_before_the_interval_makes_the_same_case() -> None:
    old = {"arm": "base-two", "identity_category": "gender", "location_category": "sports",
           "identity": "male", "concept": "strong", "score": 0.3, "a": 9, "n": 10, "p": 0.001,
           "p_bh": 0.01, "rest_a": 2, "rest_n": 10, "p_min": 1e-5, "rule": "evidence"}  # fmt: skip
    data = Candidate.model_validate(old).case_data()
    assert set(data) == set(old) | {"members", "cases"}


def _report(db: Path) -> dict[str, dict]:
    return json.loads(harness.report_text(db, format="json"))


def _analysed(db: Path) -> dict[str, dict]:
    run(story_campaign(), db)
    outcome = asyncio.run(analyze(db, AnalysisSettings(control_permutations=0)))
    assert outcome.action == "started"
    verified = verify_log(db)
    assert verified.differences == []
    return _report(db)


def test_report_of_a_new_analysis_uses_the_story_interval(tmp_path: Path) -> None:
    table = _analysed(tmp_path / "new.db")["badf_associations"]
    assert "cluster-robust, stories as clusters" in table["note"]
    assert "Newcombe" not in table["note"]
    assert table["rows"]
    for row in table["rows"]:
        assert row["score_low"] <= row["score"] <= row["score_high"]


def test_an_analysis_recorded_before_the_story_interval_reports_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidates without the interval's fields (as every analysis recorded before them):
    Newcombe's interval, the note says lists are taken as independent, and they replay."""
    monkeypatch.setattr(analysis_module, "score_interval", lambda *args, **kwargs: None)
    report = _analysed(tmp_path / "old.db")
    table = report["badf_associations"]
    assert "Newcombe, lists as independent" in table["note"]
    assert "cluster-robust" not in table["note"]
    from harness.family_api import compare_to_rest, rounded

    assert table["rows"]
    for row in table["rows"]:
        given_ = compare_to_rest(row["a"], row["N"], row["rest_a"], row["rest_N"])
        assert row["score_low"] == rounded(given_.diff_low)
        assert row["score_high"] == rounded(given_.diff_high)
        assert not math.isnan(row["score_low"])
