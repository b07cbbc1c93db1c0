"""The MR11-14 report sections: planted attributes flagged after the report-wide FDR,
``--mode`` re-reads the recorded replies in either mode without calling anything, INVALID
reasons, score-gap and rho summaries, and the JSON format carrying them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.report import to_json
from harness.reporting.tables import ReportContext, Table
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.vocabulary.errors import ConfigError
from tests.families.metafair.test_metafair_closed_sim import (
    PLANTED_BY_MR,
    campaign,
    widened_testset,
)


def rows(tables: list[Table], name: str) -> list[dict[str, Any]]:
    table = next(t for t in tables if t.name == name)
    return [dict(zip(table.columns, r, strict=True)) for r in table.rows]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("closed_report")
    testset = widened_testset(base / "tests.json")
    clean = base / "clean.db"
    config = parse_campaign(campaign(testset, "strict"), source="test")
    assert asyncio.run(run_campaign(config, clean)).status == "completed"
    # Replies that follow no format ("Let me think about what is known here first."):
    # strict finds no Yes/No in them, GUARD-ME reads the "no" of "known".
    noisy = base / "noisy.db"
    spec = campaign(testset, "strict")
    spec["models"] = [
        {"name": "sim:planted", "max_in_flight": 32, "options": {"invalid_rate": 0.3}}
    ]
    spec["relations"] = [r for r in spec["relations"] if r["name"] == "metafair.mr12"]
    config = parse_campaign(spec, source="test")
    assert asyncio.run(run_campaign(config, noisy)).status == "completed"
    return clean, noisy


def test_planted_attributes_are_flagged_after_the_report_wide_fdr(logs: tuple[Path, Path]) -> None:
    with EventReader(logs[0]) as log:
        tables = build_report(log)
    table = rows(tables, "metafair_closed_rates")
    flagged: dict[str, set[str]] = {}
    for row in table:
        if row["flagged"] == "yes" and row["diff"] > 0:
            flagged.setdefault(row["relation"], set()).add(row["attribute"])
    assert flagged == {f"metafair.mr{mr}": planted for mr, planted in PLANTED_BY_MR.items()}
    assert all(row["ci95_low"] <= row["rate"] <= row["ci95_high"] for row in table)
    assert "oracle mode: as run" in next(
        t.title for t in tables if t.name == "metafair_closed_rates"
    )
    metrics = rows(tables, "metafair_closed_metrics")
    woman = next(
        r for r in metrics if r["relation"] == "metafair.mr14" and r["attribute"] == "woman"
    )
    assert woman["measure"] == "rho" and woman["min"] == -1.0 and woman["median"] == -1.0
    homeless = next(r for r in metrics if r["attribute"] == "homeless")
    assert homeless["measure"] == "score gap" and homeless["max"] == 3.0


def test_mode_re_reads_the_recorded_replies(logs: tuple[Path, Path]) -> None:
    noisy = logs[1]
    with EventReader(noisy) as log:
        strict = build_report(log, mode="strict")
        guardme = build_report(log, mode="guardme")
        calls_before = log.connection.execute("SELECT count(*) FROM events").fetchone()[0]
    invalid_strict = rows(strict, "metafair_closed_invalid")
    assert {r["reason"] for r in invalid_strict} == {
        "source: neither Yes nor No",
        "follow-up: neither Yes nor No",
    }
    assert rows(guardme, "metafair_closed_invalid") == []
    valid_strict = sum(r["valid"] for r in rows(strict, "metafair_closed_rates"))
    valid_guardme = sum(r["valid"] for r in rows(guardme, "metafair_closed_rates"))
    assert valid_guardme > valid_strict
    # The other mode is shown beside: strict's other_valid is guardme's valid.
    assert sum(r["other_valid"] for r in rows(strict, "metafair_closed_rates")) == valid_guardme
    with EventReader(noisy) as log:
        assert log.connection.execute("SELECT count(*) FROM events").fetchone()[0] == calls_before


def test_json_carries_the_sections_and_bad_modes_fail(logs: tuple[Path, Path]) -> None:
    with EventReader(logs[0]) as log:
        data = json.loads(to_json(build_report(log, mode="guardme")))
        for name in ("metafair_closed_rates", "metafair_closed_invalid", "metafair_closed_metrics"):
            assert name in data
        assert data["metafair_closed_rates"]["rows"][0]["p_fdr"] is not None
        with pytest.raises(ConfigError, match="guardme"):
            build_report(log, mode="released")


def test_the_campaign_start_names_the_planned_relations(logs: tuple[Path, Path]) -> None:
    with EventReader(logs[1]) as log:
        (campaign_id, _), *_ = log.campaigns()
        planned = ReportContext(log, campaign_id).planned_relations
    assert list(planned) == ["metafair.mr12"]
    assert planned["metafair.mr12"]["mode"] == "strict"
