"""Golden reports: the text, JSON and CSV reports of the example campaigns on the simulated
model, byte for byte. A refactoring that changes one number, one row order or one title of
these reports fails here; a deliberate change regenerates the files with
``HARNESS_REGENERATE_GOLDEN=1 uv run pytest tests/test_golden_reports.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden"
CAMPAIGNS = {
    "sim": "sim",  # the embedded example campaign (MetaQuerier MR1, MR2, Meta-Fair MR8)
    "biaslens": str(REPO_ROOT / "examples" / "biaslens_sim.toml"),
    "langbite": str(REPO_ROOT / "examples" / "langbite.toml"),
}


@pytest.fixture(scope="module", params=sorted(CAMPAIGNS))
def campaign_log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    name = request.param
    db = tmp_path_factory.mktemp(f"golden-{name}") / f"{name}.db"
    result = CliRunner().invoke(main, ["run", CAMPAIGNS[name], "--db", str(db)])
    assert result.exit_code == 0, result.output
    return name, db


@pytest.mark.parametrize("fmt", ["text", "json", "csv"])
def test_report_is_byte_identical_to_the_golden_file(
    campaign_log: tuple[str, Path], fmt: str, tmp_path: Path
) -> None:
    name, db = campaign_log
    out = tmp_path / f"report.{fmt}"
    result = CliRunner().invoke(main, ["report", str(db), "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    golden = GOLDEN / f"{name}-report.{fmt}"
    if os.environ.get("HARNESS_REGENERATE_GOLDEN"):
        golden.write_bytes(out.read_bytes())
    assert out.read_bytes() == golden.read_bytes(), f"{golden.name} differs"
