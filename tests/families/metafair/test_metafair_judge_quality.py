"""Judge quality, stability, non-determinism and the INVALID split of Meta-Fair reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import harness
from relations.metafair.judges.nondeterminism import split_entropy
from relations.metafair.judges.quality import judge_quality, roc_auc

# The hand-written set (five tests a relation): these tests count on its size, and measure
# the judges, not the set (a new campaign's default is the crossed set).
HAND_WRITTEN = "corpora/metafair/open_tests.json"


def test_weighted_precision_recall_f1_from_counts() -> None:
    # TP 40, FN 20, FP 10, TN 30. BIASED: P .8, R .6667, F1 .7273 (support 60);
    # UNBIASED: P .6, R .75, F1 .6667 (support 40); weighted by support.
    truth = [True] * 60 + [False] * 40
    said = [True] * 40 + [False] * 20 + [True] * 10 + [False] * 30
    q = judge_quality(truth, said, [float(s) for s in said])
    assert q.precision == pytest.approx(0.72)
    assert q.recall == pytest.approx(0.70)
    assert q.f1 == pytest.approx((0.8 * 2 / 3 * 2 / (0.8 + 2 / 3) * 60 + 2 / 3 * 40) / 100)
    assert (q.fpr, q.fnr) == (pytest.approx(0.25), pytest.approx(1 / 3))


def test_roc_auc_from_severity_scores() -> None:
    assert roc_auc([True, True, False, False], [3, 2, 1, 0]) == 1.0
    assert roc_auc([True, True, False, False], [0, 1, 2, 3]) == 0.0
    assert roc_auc([True, False], [2, 2]) == 0.5
    assert roc_auc([True, True], [1, 2]) != roc_auc([True, True], [1, 2])  # NaN: one class


@pytest.mark.parametrize(("b", "u", "h"), [(5, 5, 1.0), (10, 0, 0.0), (9, 1, 0.4690)])
def test_entropy_of_a_split(b: int, u: int, h: float) -> None:
    assert split_entropy(b, u) == pytest.approx(h, abs=1e-4)


def sim_campaign(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "mf-quality",
        "seed": 9,
        "repeats": 1,
        "models": [
            {"name": "sim:planted", "options": {"tailoring": {"low-income": 0.5, "woman": 0.5}}}
        ],
        "judges": [{"name": "sim:judge"}],
        "relations": [{"name": "metafair.mr1", "options": {"testset": HAND_WRITTEN}}],
    }
    return base | over


def rows(db: Path, name: str) -> list[dict[str, Any]]:
    t = next((t for t in harness.report_tables(db) if t.name == name), None)
    assert t is not None, name
    return [dict(zip(t.columns, r, strict=True)) for r in t.rows]


def test_stability_over_judgings_and_entropy_over_repeats(tmp_path: Path) -> None:
    db = tmp_path / "st.db"
    config = sim_campaign(
        repeats=10,
        judges=[
            {"name": "sim:exact"},
            {"name": "sim:noisy", "options": {"judge_false_positive_rate": 0.4}},
            {"name": "sim:exact-too"},
        ],
        relations=[
            {"name": "metafair.mr1", "options": {"jury": 3, "judgings": 3, "testset": HAND_WRITTEN}}
        ],
    )
    harness.run(config, db)
    quality = {
        r["rater"]: r for r in rows(db, "metafair_judge_quality") if r["relation"] == "(all)"
    }
    assert quality["judge0"]["stability"] == 1.0 and quality["judge2"]["stability"] == 1.0
    assert quality["judge1"]["stability"] < 0.9  # a false positive at 0.4 is not repeatable
    assert quality["judge0"]["stability_tests"] == 50  # 5 tests x 10 repeats
    assert quality["judge0"]["labelled"] == 0  # no human labels: stability only
    nd = {r["relation"]: r for r in rows(db, "metafair_nondeterminism")}
    assert nd["metafair.mr1"]["tests"] == 5 and nd["metafair.mr1"]["mean_runs"] == 10
    # The tests about "woman" and "low-income" are tailored half the time: their split is uneven.
    assert nd["metafair.mr1"]["tests_split"] >= 2
    assert 0 < nd["metafair.mr1"]["mean_entropy"] < 1


def test_invalid_verdicts_are_split_by_origin(tmp_path: Path) -> None:
    db = tmp_path / "inv.db"
    config = sim_campaign(
        models=[
            {"name": "sim:mute", "options": {"invalid_rate": 1.0}},
            {"name": "sim:planted"},
        ],
        judges=[{"name": "sim:garbled", "options": {"invalid_rate": 1.0}}],
        relations=[
            {"name": "metafair.mr1", "options": {"testset": HAND_WRITTEN}},
            {"name": "metafair.mr9", "options": {"oracle": "judge", "testset": HAND_WRITTEN}},
        ],
    )
    harness.run(config, db)
    split = {(r["model"], r["relation"]): r for r in rows(db, "metafair_invalid")}
    # A subject that never says Yes/No: MR9 is a response INVALID, no judge is paid.
    assert split[("sim:mute", "metafair.mr9")]["response"] == 5
    # A judge that never answers the format, even after its repair turn: judge INVALID.
    assert split[("sim:planted", "metafair.mr1")]["judge_invalid"] == 5
    assert split[("sim:planted", "metafair.mr1")]["judged"] == 0
    assert all(r["generation"] == 0 for r in split.values())
