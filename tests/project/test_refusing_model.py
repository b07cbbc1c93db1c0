"""A model that refuses everything shows no bias: every family's example campaign on a
simulated model that answers every prompt "I cannot answer that." reports only REFUSED
cases, no violation and no failed fairness requirement (before refusals were an outcome,
LangBiTe reported such a model failing most of its requirements)."""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.report import to_json
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGNS = [
    "examples/langbite.toml",
    "examples/biaslens_sim.toml",
    "examples/metafair_sim.toml",
    "examples/badf_sim.toml",
    "harness/running/campaigns/sim.toml",
]


def refusing(path: str) -> dict:
    data = tomllib.loads((ROOT / path).read_text())
    for model in data["models"]:
        model.setdefault("options", {})["refusal_rate"] = 1.0
    data["repeats"] = 1
    for relation in data["relations"]:
        if isinstance(relation.get("cases"), int):
            relation["cases"] = min(relation["cases"], 10)
    return data


@pytest.mark.parametrize("path", CAMPAIGNS)
def test_no_family_reports_a_fairness_failure_on_a_refusing_model(
    path: str, tmp_path: Path
) -> None:
    db = tmp_path / "refusing.db"
    asyncio.run(run_campaign(parse_campaign(refusing(path), source=path), db))
    with EventReader(db) as log:
        outcomes = dict(
            log.connection.execute(
                "SELECT outcome, count(*) FROM verdicts WHERE source = 'relation' GROUP BY 1"
            ).fetchall()
        )
        report = json.loads(to_json(build_report(log)))
    assert set(outcomes) == {"REFUSED"}, outcomes
    for row in report["violation_rates"]["rows"]:
        assert row["violated"] == 0 and row["refused"] == row["cases"], row
    for row in report.get("langbite_requirements", {}).get("rows", []):
        assert row["failed"] == 0 and row["met"] != "no", row
    # BiasLens's own tables count the refusals in their own columns, not as INVALID.
    for row in report.get("biaslens_cells", {}).get("rows", []):
        assert row["strict_biased"] == 0 and row["strict_invalid_questions"] == 0, row
        assert row["strict_refused_questions"] == row["questions"] > 0, row
        assert row["refused_rate"] == 1.0 and row["judged"] == 0, row
    for row in report.get("biaslens_table3", {}).get("rows", []):
        assert row["invalid strict"] == 0 and row["refused strict"] > 0, row
    # Every group is refused alike: no differential refusal is flagged.
    for row in report.get("differential_refusal", {}).get("rows", []):
        assert row["flagged"] == "no", row


def test_a_model_that_refuses_one_group_is_flagged_for_differential_refusal(
    tmp_path: Path,
) -> None:
    # Planted: every MetaQuerier prompt asking for the female terms is refused.
    data = {
        "name": "refuses-one-group",
        "seed": 3,
        "models": [
            {
                "name": "sim:planted",
                "max_in_flight": 16,
                "options": {"refuse_mentions": ["definitely female"]},
            }
        ],
        "relations": [{"name": "metaquerier.mr1", "cases": 60}],
    }
    db = tmp_path / "one-group.db"
    asyncio.run(run_campaign(parse_campaign(data, source="test"), db))
    with EventReader(db) as log:
        report = json.loads(to_json(build_report(log)))
    rows = {r["group"]: r for r in report["differential_refusal"]["rows"]}
    assert rows["female"]["rate"] == 1.0 and rows["male"]["rate"] == 0.0
    assert rows["female"]["flagged"] == "yes" and rows["female"]["p_fdr"] < 0.05
    assert rows["female"]["diff_low"] > 0.5
    # The refused cases leave the violation rate: it is read from the male cases only.
    [rates] = report["violation_rates"]["rows"]
    assert rates["refused"] == rows["female"]["cases"]
