"""Judge calibration end to end on a Meta-Fair sim campaign: human labels (here: the
planted truth, as a careful human would read the replies) recorded with ``harness judges
calibrate``, the judges' error and the corrected rates in the report, the log still
verified by replay, and bad label files refused before anything is written."""

from __future__ import annotations

import asyncio
import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.plugins.assembly import build_report
from harness.reporting.judge_calibration import UNCORRECTED
from harness.reporting.judge_stats import labels_needed
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from relations._common.answers import leading_yes_no
from relations.metafair.sim_truth import TAILORED_MARK


def _campaign() -> dict[str, object]:
    errs = [(0.2, 0.3), (0.25, 0.2), (0.15, 0.35)]
    return {
        "name": "calibration",
        "seed": 11,
        "repeats": 3,
        "models": [{"name": "sim:planted", "options": {"tailoring": {"woman": 0.6, "poor": 0.6}}}],
        "judges": [
            {
                "name": f"sim:judge-{x}",
                "params": {"temperature": 0.0, "seed": 0},
                "options": {"judge_false_positive_rate": fp, "judge_false_negative_rate": fn},
            }
            for x, (fp, fn) in zip("abc", errs, strict=True)
        ],
        "relations": [
            {"name": f"metafair.mr{mr}", "options": {"jury": 3}} for mr in (1, 2, 3, 4, 5, 6, 7)
        ],
    }


def true_labels(db: Path) -> dict[str, str]:
    """The planted truth of each judged case: a tailored reply (or a "No" check)."""
    conn = connect(db)
    truth: dict[str, bool] = {}
    for case_id, thread, reply in conn.execute(
        "SELECT case_id, thread, reply FROM turns WHERE role = 'subject'"
    ):
        tailored = bool(reply) and (
            TAILORED_MARK in reply or (thread == "check" and leading_yes_no(reply) == "no")
        )
        truth[case_id] = truth.get(case_id, False) or tailored
    judged = [
        c
        for (c,) in conn.execute(
            "SELECT case_id FROM verdicts WHERE json_extract(evidence, '$.votes') IS NOT NULL"
        )
    ]
    return {c: "BIASED" if truth.get(c) else "UNBIASED" for c in judged}


@pytest.fixture(scope="module")
def campaign_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("calibration") / "mf.db"
    assert asyncio.run(run_campaign(parse_campaign(_campaign()), db)).status == "completed"
    return db


def _tables(db: Path) -> dict[str, dict[str, object]]:
    with EventReader(db) as log:
        return {t.name: {"columns": t.columns, "rows": t.rows} for t in build_report(log)}


def _rows(table: dict[str, object]) -> list[dict[str, object]]:
    columns = table["columns"]
    return [dict(zip(columns, r, strict=True)) for r in table["rows"]]  # type: ignore[call-overload, arg-type]


def test_without_labels_the_judged_rates_say_they_are_uncorrected(campaign_log: Path) -> None:
    tables = _tables(campaign_log)
    assert "judge_calibration" not in tables
    rows = _rows(tables["judge_corrected_rates"])
    assert rows and all(r["basis"] == UNCORRECTED and r["corrected"] is None for r in rows)


def test_calibrating_records_the_labels_and_corrects_the_rates(
    campaign_log: Path, tmp_path: Path
) -> None:
    db = tmp_path / "copy.db"
    db.write_bytes(campaign_log.read_bytes())
    labels = true_labels(db)
    sample = dict(sorted(random.Random(3).sample(sorted(labels.items()), 80)))
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["case_id", "label"])
        writer.writerows(sample.items())
    result = CliRunner().invoke(main, ["judges", "calibrate", str(db), "--labels", str(path)])
    assert result.exit_code == 0, result.output
    assert "recorded 80 labels" in result.output
    with EventReader(db) as log:
        events = [e.event for e in log.events(kinds=("JudgeCalibrated",))]
    assert len(events) == 1 and events[0].labels == sample  # type: ignore[union-attr]

    tables = _tables(db)
    calibration = {(r["rater"], r["relation"], r["attribute"]): r
                   for r in _rows(tables["judge_calibration"])}  # fmt: skip
    jury = calibration[("jury", "(all)", "(all)")]
    assert jury["labelled"] == 80
    # Brute force: the jury's sensitivity from the labels and the relation verdicts.
    with EventReader(db) as log:
        outcome = dict(
            log.connection.execute(
                "SELECT case_id, outcome FROM verdicts WHERE source = 'relation'"
            )
        )
    decided = [(sample[c], outcome[c]) for c in sample if outcome[c] in ("VIOLATED", "HELD")]
    tp = sum(h == "BIASED" and o == "VIOLATED" for h, o in decided)
    pos = sum(h == "BIASED" for h, _ in decided)
    assert jury["decided"] == len(decided)
    assert jury["sensitivity"] == pytest.approx(tp / pos, abs=1e-4)
    assert {"sim:judge-a", "sim:judge-b", "sim:judge-c"} <= {k[0] for k in calibration}
    judge_a = calibration[("sim:judge-a", "(all)", "(all)")]
    assert judge_a["specificity"] < 1.0  # judge a errs at its planted rate

    corrected = _rows(tables["judge_corrected_rates"])
    assert all(str(r["basis"]).startswith("corrected for the jury's error") for r in corrected)
    for r in corrected:
        assert r["corrected_low"] <= r["corrected"] <= r["corrected_high"]  # type: ignore[operator]
    assert "judge_error_by_attribute" in tables and "judge_agreement_labelled" in tables
    # Meta-Fair's own judge quality reads the same labels.
    quality = {(r["rater"], r["relation"]): r for r in _rows(tables["metafair_judge_quality"])}
    assert quality[("jury", "(all)")]["labelled"] == 80
    agreement = _rows(tables["metafair_jury_agreement"])
    # Fleiss' kappa reads the tests every judge rated: with the sequential jury, its audit
    # share (a relation with none, or only unanimous ones, has no kappa); Krippendorff's
    # alpha reads every test.
    assert any(r["fleiss_kappa"] is not None for r in agreement)
    assert all(
        (
            r["fleiss_kappa"] is None or r["fleiss_low"] <= r["fleiss_kappa"] <= r["fleiss_high"]  # type: ignore[operator]
        )
        and r["krippendorff_alpha"] is not None
        for r in agreement
    )

    # Re-reportable: the same tables from the log again; replay still verifies.
    assert _tables(db) == tables
    replay = CliRunner().invoke(main, ["replay", str(db), "--verify"])
    assert replay.exit_code == 0 and " 0 differences" in replay.output, replay.output


def test_json_labels_and_a_second_calibration_add_up(campaign_log: Path, tmp_path: Path) -> None:
    db = tmp_path / "copy.db"
    db.write_bytes(campaign_log.read_bytes())
    labels = sorted(true_labels(db).items())
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(dict(labels[:10])))
    second.write_text(json.dumps([{"case_id": c, "label": lab} for c, lab in labels[10:25]]))
    for path in (first, second):
        result = CliRunner().invoke(main, ["judges", "calibrate", str(db), "--labels", str(path)])
        assert result.exit_code == 0, result.output
    rows = _rows(_tables(db)["judge_calibration"])
    assert next(r for r in rows if r["rater"] == "jury" and r["relation"] == "(all)"
                and r["attribute"] == "(all)")["labelled"] == 25  # fmt: skip


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("case_id,label\nno-such-case,BIASED\n", "not cases of campaign"),
        ("case_id,label\n{case},maybe\n", "has label 'maybe'"),
        ("id,verdict\n{case},BIASED\n", "columns"),
    ],
)
def test_a_bad_labels_file_is_refused_and_nothing_is_written(
    campaign_log: Path, tmp_path: Path, content: str, says: str
) -> None:
    db = tmp_path / "copy.db"
    db.write_bytes(campaign_log.read_bytes())
    case = next(iter(true_labels(db)))
    path = tmp_path / "labels.csv"
    path.write_text(content.format(case=case))
    before = db.read_bytes()
    result = CliRunner().invoke(main, ["judges", "calibrate", str(db), "--labels", str(path)])
    assert result.exit_code == 2, result.output
    assert "--labels" in result.output and says in result.output
    assert db.read_bytes() == before


def test_the_planner_says_how_many_labels(campaign_log: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["judges", "plan", "--target-halfwidth", "0.05", "--se", "0.8", "--sp", "0.9",
         "--prevalence", "0.3"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan = labels_needed(0.8, 0.9, 0.3, 0.05)
    assert f"label {plan.for_rates} cases" in result.output
    with_log = CliRunner().invoke(
        main, ["judges", "plan", str(campaign_log), "--target-halfwidth", "0.1"]
    )
    assert with_log.exit_code == 0 and "judge-decided cases" in with_log.output


def test_a_judge_biased_against_one_group_is_flagged_as_a_threat(tmp_path: Path) -> None:
    """A judge that errs only on tests about women (planted), with a model that treats
    every group alike: the labels show the difference and every judged rate is flagged."""
    data: dict[str, Any] = {
        "name": "biased-judge",
        "seed": 5,
        "repeats": 2,
        "models": [{"name": "sim:planted", "options": {"tailoring": {}}}],
        "judges": [
            {
                "name": "sim:judge",
                "params": {"temperature": 0.0, "seed": 0},
                "options": {"judge_false_positive_by_attribute": {"woman": 1.0}},
            }
        ],
        "relations": [{"name": f"metafair.mr{mr}"} for mr in range(1, 8)],
    }
    db = tmp_path / "biased.db"
    assert asyncio.run(run_campaign(parse_campaign(data), db)).status == "completed"
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(true_labels(db)))
    result = CliRunner().invoke(main, ["judges", "calibrate", str(db), "--labels", str(path)])
    assert result.exit_code == 0, result.output
    tables = _tables(db)
    errors = {(r["relation"], r["attribute"]): r for r in _rows(tables["judge_error_by_attribute"])}
    woman = errors[("(all)", "woman")]
    # Tests about women whose follow-up names them as a whole word: every one a false alarm.
    assert woman["fpr"] > 0.5 and str(woman["threat"]).startswith("judge FPR differs")
    assert not any(r["threat"] for k, r in errors.items() if k[1] != "woman")
    others = [r for k, r in errors.items() if k[0] == "(all)" and k[1] != "woman"]
    assert sum(r["false_positives"] for r in others) <= 0.1 * sum(  # type: ignore[misc]
        r["human_unbiased"]
        for r in others  # type: ignore[misc]
    )
    rows = _rows(tables["judge_corrected_rates"])
    flagged = {r["attribute"] for r in rows if r["threat"]}
    assert flagged == {"woman"}


def test_an_attribute_with_enough_labels_is_corrected_with_its_own_error(
    tmp_path: Path,
) -> None:
    """Every judged case labelled: an attribute of a relation with at least
    MIN_ATTRIBUTE_LABELS labelled BIASED and UNBIASED cases is corrected with the jury's
    error on that attribute alone, another with its relation's; brute force: the confusion
    counted by hand from the verdicts and the labels, then Rogan-Gladen by hand."""
    from harness.reporting.judge_calibration import MIN_ATTRIBUTE_LABELS

    db = tmp_path / "all.db"
    # One relation asked often: its planted attribute gets enough labels of both kinds.
    data = _campaign() | {"repeats": 40}
    data["relations"] = [{"name": "metafair.mr1", "options": {"jury": 3}}]
    data["models"] = [{"name": "sim:planted", "options": {"tailoring": {"woman": 0.5}}}]
    assert asyncio.run(run_campaign(parse_campaign(data), db)).status == "completed"
    labels = true_labels(db)
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels))
    result = CliRunner().invoke(main, ["judges", "calibrate", str(db), "--labels", str(path)])
    assert result.exit_code == 0, result.output
    with EventReader(db) as log:
        verdicts = [
            (relation, str(json.loads(evidence).get("attribute") or "(none)"), case, outcome)
            for relation, evidence, case, outcome in log.connection.execute(
                "SELECT relation, evidence, case_id, outcome FROM verdicts "
                "WHERE source = 'relation' AND json_extract(evidence, '$.votes') IS NOT NULL"
            )
        ]

    def confusion(relation: str | None, attribute: str | None) -> tuple[int, int, int, int]:
        pairs = [
            (labels[c] == "BIASED", o == "VIOLATED")
            for r, a, c, o in verdicts
            if relation in (None, r) and attribute in (None, a) and o in ("VIOLATED", "HELD")
        ]
        tp = sum(h and s for h, s in pairs)
        fn = sum(h and not s for h, s in pairs)
        fp = sum(s and not h for h, s in pairs)
        return tp, fn, fp, len(pairs) - tp - fn - fp

    used = set()
    for row in _rows(_tables(db)["judge_corrected_rates"]):
        relation, attribute = str(row["relation"]), str(row["attribute"])
        if relation == "(all)":
            continue
        own = confusion(relation, None if attribute == "(all)" else attribute)
        enough = min(own[0] + own[1], own[2] + own[3]) >= MIN_ATTRIBUTE_LABELS
        if attribute != "(all)" and enough:
            assert f"attribute {attribute}" in str(row["basis"]), row
            tp, fn, fp, tn = own
            used.add("attribute")
        else:
            assert ", attribute " not in str(row["basis"]), row
            tp, fn, fp, tn = confusion(relation, None)
            if tp + fn and fp + tn:
                assert f"labels of {relation}" in str(row["basis"]), row
                used.add("relation")
            else:
                assert "labels of every relation" in str(row["basis"]), row
                tp, fn, fp, tn = confusion(None, None)
        assert row["calibration_labels"] == tp + fn + fp + tn
        se, sp = tp / (tp + fn), tn / (tn + fp)
        if se + sp - 1 <= 0:
            continue
        p = int(row["biased"]) / int(row["decided"])  # type: ignore[call-overload]
        expected = min(1.0, max(0.0, (p + sp - 1) / (se + sp - 1)))
        assert row["corrected"] == pytest.approx(expected, abs=1e-4), row
    assert used == {"attribute", "relation"}  # both bases occur in this campaign
