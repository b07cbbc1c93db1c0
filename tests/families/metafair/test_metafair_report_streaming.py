"""Meta-Fair's judged tests read each case's data beside its verdict as both stream from the
log, never the dictionary of every case's data (issue 36: reports in bounded memory): the
base prompt and the imported human label each test keeps are those the dictionary gave."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.reporting.tables import ReportContext
from harness.store.reader import EventReader
from relations.metafair.crossing import base_prompt
from relations.metafair.importing.importer import import_pairs
from relations.metafair.judges.verdicts import judged_tests
from tests.families.metafair.test_metafair_import import pair_rows, write_csv


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("mf-stream")
    rows = pair_rows(80, seed=3)
    for i, row in enumerate(rows):
        if i % 4 == 0:
            row["label"] = ""  # some tests carry no human label
    src = write_csv(tmp / "pairs.csv", rows)
    db = tmp / "imported.db"
    assert asyncio.run(import_pairs(src, db, model="llama3")).cases == 80
    return db


def _refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: ReportContext) -> dict[str, dict[str, Any]]:
        raise AssertionError("Meta-Fair read every case's data into one dictionary")

    monkeypatch.setattr(ReportContext, "case_data", property(refused))


def test_judged_tests_keep_the_base_and_label_their_case_data_gives(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EventReader(imported) as log:
        campaign = log.campaign_id(None)
        data = ReportContext(log, campaign).case_data  # the dictionary, to compare against
        with monkeypatch.context() as patch:
            _refuse(patch)
            judged = judged_tests(ReportContext(log, campaign))
    assert len(judged) == 80
    for j in judged:
        d = data[j.case_id]
        assert j.base == base_prompt(int(d["mr"]), d["source"], d["follow_up"])
        assert j.human == (str(d["label"]).upper() if d.get("label") else None)
    assert sum(j.human is None for j in judged) == 20


def test_the_meta_fair_report_never_reads_every_cases_data(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {t.name: t.rows for t in harness.report_tables(imported)}
    _refuse(monkeypatch)
    after = {t.name: t.rows for t in harness.report_tables(imported)}
    assert after == before and "metafair_invalid" in after
