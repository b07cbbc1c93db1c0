"""Every flagged claim of a report says what a statistician needs to sign it.

Issue 29's bar for a report's JSON: per flagged row, its unit, its control (what it is
measured against, that control's rate, and the relation's matched control or that none ran),
its effect with a 95 % interval, and the family of hypotheses it was corrected with. These
tests read every table of every report they can get quickly (the golden reports of the
example campaigns, and a Meta-Fair campaign on the simulated model through the judge path
and the closed oracles) and list each flagged row that leaves one of those out.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import harness
from harness.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_REPORTS = sorted(GOLDEN.glob("*-report.json"))


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def claim_gaps(report: dict[str, Any]) -> list[str]:
    """What each flagged row of ``report`` (a JSON report, parsed) fails to say."""
    gaps: list[str] = []
    for name, table in report.items():
        for i, row in enumerate(table.get("rows") or []):
            if row.get("flagged") != "yes":
                continue
            where = f"{name}[{i}]"
            if not (isinstance(row.get("unit"), str) and row["unit"].strip()):
                gaps.append(f"{where}: no unit")
            family = row.get("hypothesis_family")
            if not (
                isinstance(family, dict)
                and family.get("name")
                and isinstance(family.get("size"), int)
                and family["size"] >= 1
                and family.get("method")
            ):
                gaps.append(f"{where}: no hypothesis family (name, size, method): {family!r}")
            claim = row.get("claim") if isinstance(row.get("claim"), dict) else {}
            # What it is measured against, at what rate, and its noise floor (the matched
            # control) or that the report has none.
            claim_control = claim.get("control")
            if not isinstance(claim_control, dict):
                gaps.append(f"{where}: no control: {claim_control!r}")
            else:
                if not (isinstance(claim_control.get("against"), str) and claim_control["against"]):
                    gaps.append(f"{where}: control names nothing it is measured against")
                if not _number(claim_control.get("rate")):
                    gaps.append(f"{where}: no control rate: {claim_control.get('rate')!r}")
                if not (isinstance(claim_control.get("matched"), str) and claim_control["matched"]):
                    gaps.append(f"{where}: says neither its matched control nor that none ran")
            effect = claim.get("effect")
            if not isinstance(effect, dict):
                gaps.append(f"{where}: no effect")
                continue
            value, low, high = effect.get("value"), effect.get("low"), effect.get("high")
            if not (_number(value) and _number(low) and _number(high)):
                gaps.append(f"{where}: effect without its interval: {effect!r}")
            elif not low - 1e-6 <= value <= high + 1e-6:
                gaps.append(f"{where}: effect {value} outside its interval [{low}, {high}]")
            if not effect.get("measure") or effect.get("level") != 0.95:
                gaps.append(f"{where}: effect names no measure or level: {effect!r}")
    return gaps


def flagged_rows(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, row)
        for name, table in report.items()
        for row in table.get("rows") or []
        if row.get("flagged") == "yes"
    ]


def consistency_gaps(report: dict[str, Any]) -> list[str]:
    """The claim's control and effect agree with the row's own columns: the rate it names
    is the row's control or rest rate, the effect its excess or difference."""
    gaps = []
    for name, row in flagged_rows(report):
        claim = row.get("claim") or {}
        control, effect = claim.get("control"), claim.get("effect")
        if not isinstance(control, dict) or not isinstance(effect, dict):
            continue
        rates = [row[c] for c in ("control_rate", "rest_rate") if _number(row.get(c))]
        if rates and control.get("rate") != rates[0]:
            gaps.append(f"{name}: control rate {control.get('rate')} is not the row's {rates[0]}")
        measure = effect.get("measure")
        if measure not in row or row[measure] != effect.get("value"):
            gaps.append(f"{name}: effect {effect!r} is not the row's column {measure!r}")
    return gaps


REST_WORDS = re.compile(r"^the other (?P<what>\S+) of the same (?P<within>.+)$")


def rest_gaps(report: dict[str, Any]) -> list[str]:
    """A flagged row measured against "the other Xs of the same A and B" names a rest the
    table can hold: within its rows, the values of A and B and X name one row (else the
    words name the wrong columns, as "the other languages" did for a community tested
    within its language and concern)."""
    gaps = []
    for name, table in report.items():
        rows = table.get("rows") or []
        for row in rows:
            if row.get("flagged") != "yes":
                continue
            against = row["claim"]["control"]["against"]
            words = REST_WORDS.match(against)
            if words is None:
                continue
            what = words["what"]
            column = next(
                (c for c in row if what in (c, f"{c}s", f"{c[:-1]}ies") and c != "tests"), None
            )
            within = words["within"].split(" and ")
            if column is None or not set(within) <= set(row):
                gaps.append(f"{name}: {against!r} names columns the table does not have")
                continue
            key = [*within, column]
            same = [r for r in rows if all(r.get(c) == row[c] for c in key)]
            if len(same) != 1:
                gaps.append(f"{name}: {against!r}: {len(same)} rows share {key}")
    return gaps


@pytest.mark.parametrize("path", GOLDEN_REPORTS, ids=lambda p: p.stem)
def test_every_flagged_row_of_a_golden_report_carries_its_claim(path: Path) -> None:
    report = json.loads(path.read_text(encoding="utf-8"))
    assert flagged_rows(report), f"{path.name} flags nothing: the test would check nothing"
    assert claim_gaps(report) == []
    assert consistency_gaps(report) == []
    assert rest_gaps(report) == []


def test_the_golden_reports_cover_each_kind_of_flagged_table() -> None:
    """The goldens flag rows of group-vs-rest, matched-control and paired tables: the
    claims of each kind are checked above, not only one."""
    tables = {
        name for path in GOLDEN_REPORTS for name, _ in flagged_rows(json.loads(path.read_text()))
    }
    assert {
        "control_excess",
        "biaslens_role_vs_no_role",
        "metaquerier_source_vs_follow_up",
    } <= tables
    assert len(tables) >= 6, tables


def test_a_flagged_row_without_its_claim_is_caught() -> None:
    """The checker fails a row that leaves out any one of the four (it cannot pass by
    reading nothing)."""
    report = json.loads((GOLDEN / "sim-report.json").read_text(encoding="utf-8"))
    name, row = flagged_rows(report)[0]
    claim = row["claim"]
    for key, broken in (
        ("unit", ""),
        ("hypothesis_family", None),
        ("hypothesis_family", {**row["hypothesis_family"], "size": 0}),
        ("claim", {**claim, "control": {**claim["control"], "rate": None}}),
        ("claim", {**claim, "control": {**claim["control"], "matched": ""}}),
        ("claim", {**claim, "control": {**claim["control"], "against": ""}}),
        ("claim", {**claim, "effect": {**claim["effect"], "low": None}}),
        ("claim", {**claim, "effect": {**claim["effect"], "high": claim["effect"]["value"] - 1}}),
        ("claim", {**claim, "effect": None}),
        ("claim", None),
    ):
        bad = {name: {"rows": [{**row, key: broken}]}}
        assert claim_gaps(bad), (key, broken)
    assert claim_gaps({name: {"rows": [row]}}) == []


def test_a_rest_is_named_by_what_the_row_is_tested_within() -> None:
    """A community is tested against the other communities of its language and concern,
    an attribute against the other attributes of its model, variant and type: the claim
    says so (not "the other languages", as the first label column would suggest)."""
    for path, table, words in (
        ("langbite", "langbite_community_tests", "the other communities of the same model "
         "and language and concern"),
        ("biaslens", "biaslens_cells", "the other attributes of the same model and variant "
         "and type"),
    ):  # fmt: skip
        report = json.loads((GOLDEN / f"{path}-report.json").read_text(encoding="utf-8"))
        rows = [r for r in report[table]["rows"] if r.get("flagged") == "yes"]
        wrong = {**rows[0], "claim": {**rows[0]["claim"], "control": {
            **rows[0]["claim"]["control"], "against": "the other languages of the same model"
        }}}  # fmt: skip
        if path == "langbite":  # what the first label column made of it before
            assert rest_gaps({table: {"rows": [wrong, *report[table]["rows"]]}})
        assert rows and all(r["claim"]["control"]["against"] == words for r in rows), (
            table,
            rows[:1],
        )


def test_a_relation_with_a_matched_control_names_it_on_its_group_rows() -> None:
    """A group-vs-rest row of a relation that ran its matched control names that control
    and its rate (the noise floor); a family of claims without one says none ran."""
    report = json.loads((GOLDEN / "sim-report.json").read_text(encoding="utf-8"))
    floors = {
        (r["model"], r["relation"]): r["control_rate"]
        for r in report["control_excess"]["rows"]
        if r["group"] == "(all)"
    }
    seen = 0
    for name, row in flagged_rows(report):
        if name == "control_excess":
            continue
        relation = row["hypothesis_family"]["name"].split(" (")[0]
        matched = row["claim"]["control"]["matched"]
        if (row.get("model"), relation) in floors:
            assert f"{floors[(row['model'], relation)]:.3f}" in matched, (name, matched)
            seen += 1
        else:
            assert matched.startswith("none in this report"), (name, matched)
    assert seen


@pytest.fixture(scope="module")
def metafair_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A small Meta-Fair campaign on the simulated model: MR1 through a simulated
    judge and the four closed relations, one pass of the crossed sets, strongly
    planted so that rows of each kind are flagged."""
    from relations.metafair.closed.truth import MetaFairClosedTruth

    closed = MetaFairClosedTruth()
    options: dict[str, Any] = {"tailoring": {"woman": 1.0, "Muslim": 1.0, "poor": 1.0}}
    for kind in ("closed_score", "closed_yes_no", "closed_choice", "closed_ranking"):
        options[kind] = dict(getattr(closed, kind))
    config = {
        "name": "flagged-claims",
        "seed": 29,
        "models": [{"name": "sim:planted", "max_in_flight": 16, "options": options}],
        "judges": [{"name": "sim:judge-a", "options": {"judge_false_positive_rate": 0.02}}],
        "relations": [
            {"name": "metafair.mr1", "options": {"jury": 1}},
            *({"name": f"metafair.mr{k}"} for k in range(11, 15)),
        ],
    }
    db = tmp_path_factory.mktemp("flagged-claims") / "metafair.db"
    summary = harness.run(config, db)
    assert summary.status == "completed", summary
    out = db.with_suffix(".json")
    result = CliRunner().invoke(main, ["report", str(db), "--format", "json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return parsed


def test_every_flagged_row_of_a_metafair_campaign_carries_its_claim(
    metafair_report: dict[str, Any],
) -> None:
    tables = {name for name, _ in flagged_rows(metafair_report)}
    assert {"metafair_bias_by_attribute", "metafair_closed_rates", "control_excess"} <= tables
    assert claim_gaps(metafair_report) == []
    assert consistency_gaps(metafair_report) == []
    assert rest_gaps(metafair_report) == []


@pytest.fixture(scope="module")
def badf_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The BADF sim's stories analysed by the evidence rule with a few shuffles of the
    null control: its kept associations are its flagged claims."""
    import asyncio

    from relations.badf.analysis import AnalysisSettings
    from relations.badf.analyze import analyze
    from tests.families.badf.test_badf_pipeline import run, story_campaign

    db = tmp_path_factory.mktemp("flagged-claims-badf") / "badf.db"
    run(story_campaign(), db)
    outcome = asyncio.run(analyze(db, AnalysisSettings(control_permutations=3)))
    assert outcome.action == "started"
    parsed: dict[str, Any] = json.loads(harness.report_text(db, format="json"))
    return parsed


def test_every_kept_badf_association_carries_its_claim(badf_report: dict[str, Any]) -> None:
    rows = badf_report["badf_associations"]["rows"]
    assert rows and all(r["flagged"] == "yes" for r in rows)
    assert claim_gaps(badf_report) == []
    for row in rows:
        claim = row["claim"]
        # Its effect is its score, measured against the rest of its group's lists.
        assert claim["effect"]["value"] == row["score"]
        assert claim["control"]["rate"] == row["rest_rate"]
        assert abs(row["a"] / row["N"] - row["rest_a"] / row["rest_N"] - row["score"]) < 1e-3
        assert "3 shuffles" in claim["control"]["matched"]
        assert row["hypothesis_family"]["size"] >= len(rows)
