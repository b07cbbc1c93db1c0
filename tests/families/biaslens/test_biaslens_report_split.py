"""The BiasLens report on two processes: the later groups tallied in a second process and
merged, the verdicts counted in another, give the tables of the report built in one.

Reads answers released with the paper from ../shared/data/biaslens (a few hundred rows of
a few files, under two model names and both variants); skipped when that folder is absent.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path
from typing import Any

import pytest

import harness.reporting.tables
import relations.biaslens.report as biaslens_report
from harness.plugins.assembly import build_report
from harness.reporting.tables import ReportContext, Table
from harness.runtime import process_call as process_call
from harness.store.reader import EventReader
from relations.biaslens.importer import import_released
from relations.biaslens.report_tally import ReportTally, tally_groups, tally_groups_in
from relations.biaslens.tally import group_positions, recorded_row_counts, trials_at

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "biaslens"
ROWS = 240  # of each file: every question type and attribute has disagreements at this size


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = DATA / "answers" / "role" / "gpt4omini"
    if not source.is_dir():
        pytest.skip(f"the released BiasLens data is not at {DATA} (only on the project's machines)")
    root = tmp_path_factory.mktemp("split")
    files = sorted(source.glob("*_answers_0*.csv"))[:9]  # three attributes, three runs each
    for variant, model in itertools.product(("role", "without_role"), ("m1", "m2")):
        target = root / "src" / "answers" / variant / model
        target.mkdir(parents=True)
        for f in files:
            lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
            # Whole CSV records only: a quoted answer may span lines.
            kept, records = [], 0
            for line in lines:
                kept.append(line)
                if "".join(kept).count('"') % 2 == 0:
                    records += 1
                    if records > ROWS:
                        break
            (target / f.name).write_text("".join(kept), encoding="utf-8")
    db = root / "log.db"
    asyncio.run(import_released(root / "src", db))
    return db


def _fields(t: ReportTally) -> dict[str, object]:
    return {**vars(t), "consistency order": list(t.consistency)}


def test_a_tally_split_anywhere_and_merged_is_the_tally_of_every_group(log: Path) -> None:
    with EventReader(log) as reader:
        conn, campaign = reader.connection, reader.latest_campaign()
        groups = group_positions(conn, campaign)
        keys = sorted(groups)
        assert len(keys) == 6  # two models x three attributes
        counts = recorded_row_counts(conn, campaign)
        whole = tally_groups((trials_at(conn, groups[k]) for k in keys), "released", counts)
        assert whole.disagreement_rows and whole.strict_invalid_rows and whole.paired
        for cut in range(1, len(keys)):
            first = tally_groups(
                (trials_at(conn, groups[k]) for k in keys[:cut]), "released", counts
            )
            # The later share as the second process computes it: a reader of its own.
            first.merge(tally_groups_in(log, "released", counts, [groups[k] for k in keys[cut:]]))
            assert _fields(first) == _fields(whole), cut


@pytest.fixture(scope="module")
def serial(log: Path) -> list[Table]:
    """The report built in one process."""
    with EventReader(log) as reader, pytest.MonkeyPatch.context() as one:
        one.setattr(harness.reporting.tables, "second_core_free", lambda: False)
        return build_report(reader, mode="released")


@pytest.fixture
def asides(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Second processes wanted for any log, named here as they start."""
    started: list[str] = []
    real = process_call.ProcessCall.__init__

    def counted(self: process_call.ProcessCall[object], what: str, *args: Any) -> None:
        started.append(what)
        real(self, what, *args)

    monkeypatch.setattr(process_call.ProcessCall, "__init__", counted)
    monkeypatch.setattr(harness.reporting.tables, "second_core_free", lambda: True)
    monkeypatch.setattr(harness.reporting.tables, "ASIDE_MIN_BYTES", 0)
    monkeypatch.setattr(biaslens_report, "SPLIT_MIN_CASES", 1)
    return started


def _same(tables: list[Table], serial: list[Table]) -> None:
    assert [t.name for t in tables] == [t.name for t in serial]
    for a, b in zip(tables, serial, strict=True):
        assert a == b, a.name


def test_the_report_on_three_processes_is_the_report_on_one(
    log: Path, serial: list[Table], asides: list[str]
) -> None:
    with EventReader(log) as reader:
        _same(build_report(reader, mode="released"), serial)
    assert sorted(asides) == [
        "the process counting the verdicts",
        "the process tallying BiasLens groups",
    ]


def _die(*args: object) -> None:
    os._exit(9)  # as a process killed from outside ends: no value, no exception


def test_a_second_process_killed_from_outside_is_made_up_for_here(
    log: Path, serial: list[Table], asides: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness.reporting.tables, "count_verdicts_in", _die)
    monkeypatch.setattr(biaslens_report, "tally_groups_in", _die)
    with EventReader(log) as reader:
        _same(build_report(reader, mode="released"), serial)
    assert len(asides) == 2


def test_without_a_second_process_the_report_is_built_here(
    log: Path, serial: list[Table], asides: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: object, *args: object) -> None:
        raise OSError("no more processes")

    monkeypatch.setattr(process_call.ProcessCall, "__init__", refused)
    with EventReader(log) as reader:
        _same(build_report(reader, mode="released"), serial)


def test_a_section_of_relations_the_campaign_did_not_plan_waits_for_no_count(log: Path) -> None:
    with EventReader(log) as reader:
        ctx = ReportContext(reader, reader.latest_campaign())
        assert list(ctx.relation_verdicts_of(lambda r: r.startswith("metaquerier."))) == []
        assert "verdict_counts" not in ctx.__dict__  # nothing counted, nothing waited for
        assert list(ctx.relation_verdicts_of(lambda r: r == "biaslens.answer"))


def test_a_log_removed_while_its_report_reads_it_is_still_reported(
    log: Path, serial: list[Table], asides: list[str], tmp_path: Path
) -> None:
    # The open reader still reads a file whose name is gone; no second process can open it
    # by name, so the report is built here.
    copy = tmp_path / "copy.db"
    copy.write_bytes(log.read_bytes())
    with EventReader(copy) as reader:
        copy.unlink()
        _same(build_report(reader, mode="released"), serial)
    assert asides == ["the process tallying BiasLens groups"]  # it failed: tallied here
