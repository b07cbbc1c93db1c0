"""A family's report section reads the log only for a campaign that planned one of its
relations: without one, it has no case to find, and a scan of every case for none cost
seconds on a large log (the Meta-Fair closed section: 4 % of the released BiasLens report)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.reporting.tables import ReportContext
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from relations.biaslens.report import biaslens_tables
from relations.metafair.closed.report import load_closed_cases


@pytest.fixture(scope="module")
def open_mr_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A campaign of one Meta-Fair open relation: neither BiasLens nor MR11-14."""
    spec = {
        "name": "no-closed-mr",
        "seed": 1,
        "models": [{"name": "sim:planted", "max_in_flight": 8}],
        "relations": [{"name": "metafair.mr8", "cases": 20}],
    }
    db = tmp_path_factory.mktemp("scope") / "open.db"
    summary = asyncio.run(run_campaign(parse_campaign(spec, source="test"), db))
    assert summary.status == "completed"
    return db


@pytest.mark.parametrize(
    "section", [load_closed_cases, biaslens_tables], ids=["metafair-closed", "biaslens"]
)
def test_a_section_reads_no_case_of_a_campaign_without_its_relations(
    open_mr_log: Path, section: Callable[[ReportContext], Any]
) -> None:
    with EventReader(open_mr_log) as log:
        (campaign_id, _), *_ = log.campaigns()
        ctx = ReportContext(log, campaign_id)
        # The options a new campaign records (the jury rule's) beside the relation's name.
        assert list(ctx.planned_relations) == ["metafair.mr8"]
        statements: list[str] = []
        log.connection.set_trace_callback(statements.append)
        assert section(ctx) == []
        log.connection.set_trace_callback(None)
    assert not [s for s in statements if "CaseOpened" in s]
