"""The library façade: what a user of ``import harness`` does, end to end on the sim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness


def test_run_report_verify_rejudge_and_resume_from_python(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    campaign = {
        "name": "library",
        "seed": 5,
        "models": [{"name": "sim:planted"}],
        "relations": [
            {"name": "metaquerier.mr1", "cases": 12},
            # testset null: the template cases (a log recorded before test sets).
            {"name": "metafair.mr8", "cases": 8, "options": {"testset": None}},
        ],
    }
    summary = harness.run(campaign, db)
    assert summary.status == "completed" and summary.cases_closed == 20

    tables = {t.name: t for t in harness.report_tables(db)}
    rates = {row[1]: row for row in tables["violation_rates"].rows}
    assert set(rates) == {"metaquerier.mr1", "metafair.mr8", "(all)"}
    assert json.loads(harness.report_text(db))["violation_rates"]["rows"]

    assert harness.verify(db).differences == []

    judged = harness.rejudge_campaign(db, "sim:judge")
    assert judged.judged == 20
    assert "judges" in {t.name for t in harness.report_tables(db)}

    again = harness.resume(db)  # nothing left to do: every case is closed
    assert again.calls == 0


def test_every_public_name_exists_and_bad_input_is_a_config_error(tmp_path: Path) -> None:
    for name in harness.__all__:
        assert hasattr(harness, name), name
    with pytest.raises(harness.ConfigError, match="format"):
        harness.report_text(tmp_path / "x.db", format="xml")
    with pytest.raises(harness.ConfigError, match="relations"):
        harness.run(
            {"name": "x", "models": [{"name": "sim:a"}], "relations": []}, tmp_path / "y.db"
        )
