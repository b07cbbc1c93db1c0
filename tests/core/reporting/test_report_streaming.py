"""A report reads each case's data together with its verdict as both stream from the log
(`ReportContext.verdicts_with_data`), never a dictionary of every case's data (issue 36):
the report is byte for byte the one a report looking each case up in that dictionary wrote,
in text, JSON and HTML, and streaming holds no per-case structure."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import harness
from harness.cli.main import main
from harness.reporting.tables import ReportContext, VerdictRow
from harness.store.reader import EventReader

# Two models and two repeats: a case's repeats and models interleave in the log's case id
# order, and each relation's stream skips the other relation's cases.
CASES = 500


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = {
        "name": "streaming",
        "seed": 5,
        "repeats": 2,
        "models": [
            {"name": "sim:a", "max_in_flight": 64},
            {"name": "sim:b", "max_in_flight": 64, "options": {"tailoring": {"woman": 0.4}}},
        ],
        "relations": [
            {"name": "metaquerier.mr1", "cases": CASES // 2},
            {"name": "metaquerier.mr2", "cases": CASES // 2},
        ],
    }
    db = tmp_path_factory.mktemp("streaming") / "log.db"
    assert harness.run(config, db).status == "completed"
    return db


def _looked_up(
    self: ReportContext, source: str = "relation", relations: Any = None
) -> Iterator[tuple[VerdictRow, dict[str, Any]]]:
    """The report as it was: every case's data in one dictionary, looked up per verdict."""
    data = self.case_data
    for v in self.verdicts(source, relations):
        yield v, data.get(v.case_id, {})


def _outputs(db: Path, out: Path) -> dict[str, bytes]:
    out.mkdir()
    for fmt in ("text", "json"):
        args = ["report", str(db), "--format", fmt, "--out", str(out / fmt)]
        if fmt == "json":
            args += ["--html", str(out / "html")]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
    return {name: (out / name).read_bytes() for name in ("text", "json", "html")}


def test_the_streamed_report_is_byte_identical_to_the_looked_up_one(
    sim_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    streamed = _outputs(sim_log, tmp_path / "streamed")
    with monkeypatch.context() as patch:
        patch.setattr(ReportContext, "verdicts_with_data", _looked_up)
        looked_up = _outputs(sim_log, tmp_path / "looked_up")
    for fmt in ("text", "json", "html"):
        assert streamed[fmt] == looked_up[fmt], fmt
    assert b"metaquerier_attribution_by_group" in streamed["json"]


def test_a_report_never_reads_every_cases_data_at_once(
    sim_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: ReportContext) -> dict[str, dict[str, Any]]:
        raise AssertionError("the report read every case's data into one dictionary")

    monkeypatch.setattr(ReportContext, "case_data", property(refused))
    tables = {t.name: t for t in harness.report_tables(sim_log)}
    assert tables["metaquerier_attribution_by_group"].rows


def test_streaming_verdicts_with_data_holds_no_case_structure(sim_log: Path) -> None:
    with EventReader(sim_log) as log:
        ctx = ReportContext(log, log.campaign_id(None))
        # Every verdict comes with the data its case was opened with.
        data = ctx.case_data
        seen = 0
        for v, d in ctx.verdicts_with_data():
            assert d == data[v.case_id]
            seen += 1
        assert seen == len(data) == 2 * 2 * CASES
        del data, ctx.__dict__["case_data"]

        tracemalloc.start()
        try:
            for v, d in ctx.verdicts_with_data(relations=["metaquerier.mr2"]):
                assert v.relation == "metaquerier.mr2" and d["terms"]
            streamed = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            held = ctx.case_data
            dictionary = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(held) == seen
    # A dictionary of 2,000 cases' data takes megabytes; the stream holds a row or two.
    assert streamed < dictionary / 10, (streamed, dictionary)
