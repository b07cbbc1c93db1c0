"""LangBiTe's re-assessing judge measured and corrected like a jury: a sim campaign whose
judge errs at known rates, labelled with the planted truth (the same campaign re-assessed
by an error-free judge: the same seed gives the same answers), recorded with ``harness
judges calibrate``; the report's calibration and corrected rates checked by hand from the
verdicts and the labels; the log still verifies by replay."""

from __future__ import annotations

import asyncio
import csv
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.plugins.assembly import build_report
from harness.reporting.judge_calibration import MIN_ATTRIBUTE_LABELS, UNCORRECTED
from harness.reporting.judge_stats import Confusion, corrected_rate
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from tests.conftest import campaign_dict

CONCERNS = ["gender", "religion", "race"]
# Per answer: Yes for an answer that does not mean the expected "No" (a real failure
# rescued), No for one that does (a fair off-format answer left failed).
JUDGE_ERRORS = {"langbite_judge_false_yes": 0.3, "langbite_judge_false_no": 0.2}


def _campaign(judge_options: dict[str, float]) -> dict[str, Any]:
    options = {"reassess": True, "concerns": CONCERNS, "languages": ["en"]}
    data = campaign_dict(("langbite", None, options), model="sim:planted", repeats=40)  # type: ignore[arg-type]
    data["relations"][0].pop("cases")
    # Many fair answers off-format, so that the judge sees fair answers as well as biased ones.
    data["models"][0]["options"] = {"langbite_off_format": 0.3}
    data["judges"] = [{"name": "sim:judge", "options": judge_options}]
    return data


def _verdicts(db: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    with EventReader(db) as log:
        rows = log.connection.execute(
            "SELECT case_id, outcome, evidence FROM verdicts WHERE source = 'relation'"
        ).fetchall()
    import json

    return {case: (outcome, json.loads(ev)) for case, outcome, ev in rows}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The campaign with the erring judge, and the truth of each re-assessed case: its
    verdict under an error-free judge (the same answers, read right)."""
    where = tmp_path_factory.mktemp("langbite-calibration")
    truth_db, db = where / "truth.db", where / "noisy.db"
    for path, judge in ((truth_db, {}), (db, JUDGE_ERRORS)):
        asyncio.run(run_campaign(parse_campaign(_campaign(judge), source="test"), path))
    truth, noisy = _verdicts(truth_db), _verdicts(db)
    labels = {}
    for case, (_, ev) in noisy.items():
        if ev.get("reassessed"):
            true_outcome, true_ev = truth[case]
            assert [a["answer"] for a in true_ev["answers"]] == [a["answer"] for a in ev["answers"]]
            labels[case] = "BIASED" if true_outcome == "VIOLATED" else "UNBIASED"
    return db, labels


def _tables(db: Path) -> dict[str, list[dict[str, Any]]]:
    with EventReader(db) as log:
        return {
            t.name: [dict(zip(t.columns, r, strict=True)) for r in t.rows]
            for t in build_report(log)
        }


def _judge_rates(db: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(relation, concern or (all)) -> (VIOLATED, re-assessed) by hand."""
    out: dict[tuple[str, str], list[int]] = {}
    for outcome, ev in _verdicts(db).values():
        if not ev.get("reassessed") or outcome not in ("VIOLATED", "HELD"):
            continue
        for attribute in (ev["concern"], "(all)"):
            kn = out.setdefault(("langbite", attribute), [0, 0])
            kn[0] += outcome == "VIOLATED"
            kn[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_without_labels_the_judge_decided_rates_are_uncorrected(
    logs: tuple[Path, dict[str, str]],
) -> None:
    db, _ = logs
    rows = _tables(db)["judge_corrected_rates"]
    by_hand = _judge_rates(db)
    assert {(r["relation"], r["attribute"]) for r in rows} == set(by_hand)
    for r in rows:
        k, n = by_hand[(r["relation"], r["attribute"])]
        assert (r["biased"], r["decided"]) == (k, n)
        assert r["judge_rate"] == pytest.approx(k / n, abs=1e-4)
        assert r["basis"] == UNCORRECTED and r["corrected"] is None


def test_labels_calibrate_the_judge_and_correct_its_rates(
    logs: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    source, labels = logs
    db = tmp_path / "copy.db"
    db.write_bytes(source.read_bytes())
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["case_id", "label"])
        writer.writerows(sorted(labels.items()))
    result = CliRunner().invoke(main, ["judges", "calibrate", str(db), "--labels", str(path)])
    assert result.exit_code == 0, result.output
    assert f"({len(labels)} of them on cases judges decided)" in result.output

    # Brute force: the judge's confusion per concern from the verdicts and the labels.
    verdicts = _verdicts(db)
    pairs: dict[str, list[tuple[bool, bool]]] = {}
    for case, human in labels.items():
        outcome, ev = verdicts[case]
        for attribute in (ev["concern"], "(all)"):
            pairs.setdefault(attribute, []).append((human == "BIASED", outcome == "VIOLATED"))
    confusion = {a: Confusion.of(p) for a, p in pairs.items()}
    tables = _tables(db)
    calibration = {(r["rater"], r["attribute"]): r for r in tables["judge_calibration"]
                   if r["relation"] == "langbite"}  # fmt: skip
    for rater in ("jury", "sim:judge"):
        for attribute, c in confusion.items():
            row = calibration[(rater, attribute)]
            assert (row["labelled"], row["human_biased"]) == (len(pairs[attribute]), c.positives)
            for column in ("sensitivity", "specificity"):
                found = math.nan if row[column] is None else row[column]
                assert found == pytest.approx(getattr(c, column), abs=1e-4, nan_ok=True)
    # The planted errors show: a rescued real failure and a fair answer left failed.
    assert confusion["(all)"].fn > 0 and confusion["(all)"].fp > 0
    assert {r["attribute"] for r in tables["judge_error_by_attribute"]} == set(CONCERNS)

    bases = set()
    for r in tables["judge_corrected_rates"]:
        attribute = r["attribute"]
        k, n = _judge_rates(db)[("langbite", attribute)]
        own = confusion[attribute]
        if attribute != "(all)" and min(own.positives, own.negatives) >= MIN_ATTRIBUTE_LABELS:
            used, basis = own, f"attribute {attribute}"
        else:
            used, basis = confusion["(all)"], "labels of langbite,"
        bases.add(basis.split()[0])
        assert basis in r["basis"], r
        se, sp = used.sensitivity, used.specificity
        by_hand = min(1.0, max(0.0, (k / n + sp - 1) / (se + sp - 1)))
        assert r["corrected"] == pytest.approx(by_hand, abs=1e-4)
        fixed = corrected_rate(k, n, used)
        assert r["corrected_low"] == pytest.approx(fixed.low, abs=1e-4)
        assert r["corrected_high"] == pytest.approx(fixed.high, abs=1e-4)
        assert r["corrected_low"] <= r["corrected"] <= r["corrected_high"]
        assert r["calibration_labels"] == used.n
        # The interval carries the labelled sample too: wider than the campaign's alone.
        big = 10**6  # a labelled sample so large that its own error vanishes
        exact = Confusion(big * used.tp, big * used.fn, big * used.fp, big * used.tn)
        campaign_only = corrected_rate(k, n, exact)
        if not math.isnan(campaign_only.low) and 0 < by_hand < 1:
            assert (r["corrected_high"] - r["corrected_low"]) > (
                campaign_only.high - campaign_only.low
            )
    # Both rules occur: a concern with enough labels of its own, and one pooled.
    assert bases == {"attribute", "labels"}

    # Re-reportable, and the recorded verdicts are what replay re-derives.
    assert _tables(db) == tables
    replay = CliRunner().invoke(main, ["replay", str(db), "--verify"])
    assert replay.exit_code == 0 and " 0 differences" in replay.output, replay.output
