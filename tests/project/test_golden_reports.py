"""Golden reports: the text, JSON and CSV reports of the example campaigns on the simulated
model, byte for byte. A refactoring that changes one number, one row order or one title of
these reports fails here; a deliberate change regenerates the files with
``HARNESS_REGENERATE_GOLDEN=1 uv run pytest tests/project/test_golden_reports.py``.

Each report starts with the campaign header; exactly its values that change from run to
run (the campaign id, the started and finished times in either spelling, the code version,
which hashes the source) are replaced by '#' of the same length before the comparison, so
the alignment of the text report is compared too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.reporting.campaign_status import campaign_status, iso8601, iso_time
from harness.store.reader import EventReader

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
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
    report = normalised(out.read_bytes(), db)
    if os.environ.get("HARNESS_REGENERATE_GOLDEN"):
        golden.write_bytes(report)
    assert report == golden.read_bytes(), f"{golden.name} differs"


def normalised(report: bytes, db: Path) -> bytes:
    """``report`` with the header values that vary per run masked (same length)."""
    with EventReader(db) as log:
        status = campaign_status(log)
    assert status.started is not None
    varying = [
        status.campaign,
        iso_time(status.started_at),
        iso_time(status.finished_at),
        iso8601(status.started_at) or "",
        iso8601(status.finished_at) or "",
        status.started.code_version,
    ]
    for value in varying:
        report = report.replace(value.encode(), b"#" * len(value.encode()))
    return report
