"""Multiplicity per claim family on real campaigns: a relation's p_fdr and flags are the
same whether or not other relations ran in the campaign (one Benjamini-Hochberg correction
per relation, not one per report), and every test row says its unit and its family."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.tables import Table
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader

MR1 = {"name": "metaquerier.mr1", "cases": 300}
MR2 = {"name": "metaquerier.mr2", "cases": 300}
MR8 = {"name": "metafair.mr8", "cases": 200}


def _report(tmp: Path, name: str, relations: list[dict[str, Any]]) -> list[Table]:
    spec = {
        "name": name,
        "seed": 7,
        "repeats": 2,
        "models": [{"name": "sim:planted", "max_in_flight": 16}],
        "relations": relations,
    }
    db = tmp / f"{name}.db"
    summary = asyncio.run(run_campaign(parse_campaign(spec, source="test"), db))
    assert summary.status == "completed"
    with EventReader(db) as log:
        return build_report(log)


def _tests_of(tables: list[Table], family: str) -> list[tuple[str, tuple[Any, ...]]]:
    """Every test row of ``family``: (table, row with its p_fdr and flag)."""
    out = []
    for t in tables:
        for i, row in enumerate(t.rows):
            meta = t.row_meta[i] if t.row_meta is not None else None
            if meta is not None and meta["hypothesis_family"]["name"] == family:
                out.append((t.name, tuple(row)))
    return sorted(out, key=repr)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Table]]:
    tmp = tmp_path_factory.mktemp("families")
    return {
        "mr1": _report(tmp, "mr1", [MR1]),
        "mr1+mr8": _report(tmp, "mr1-mr8", [MR1, MR8]),
        "all": _report(tmp, "all", [MR1, MR2, MR8]),
    }


def test_a_relations_flags_do_not_change_when_another_relation_is_added(
    reports: dict[str, list[Table]],
) -> None:
    alone = _tests_of(reports["mr1"], "metaquerier.mr1")
    assert alone and any(row[-1] == "yes" for _, row in alone), "the planted terms are flagged"
    assert _tests_of(reports["mr1+mr8"], "metaquerier.mr1") == alone
    assert _tests_of(reports["all"], "metaquerier.mr1") == alone
    # the attribution of MR1's source turns is its own family: unchanged by another family
    attribution = _tests_of(reports["mr1"], "metaquerier.attribution")
    assert attribution and _tests_of(reports["mr1+mr8"], "metaquerier.attribution") == attribution
    mr8 = _tests_of(reports["mr1+mr8"], "metafair.mr8")
    assert mr8 and _tests_of(reports["all"], "metafair.mr8") == mr8


def test_every_test_row_names_its_unit_and_family(reports: dict[str, list[Table]]) -> None:
    tables = reports["all"]
    summary = {row[0]: row for t in tables if t.name == "statistical_tests" for row in t.rows}
    assert {"metaquerier.mr1", "metaquerier.mr2", "metafair.mr8"} <= set(summary)
    for t in tables:
        if t.row_meta is None:
            continue
        assert t.unit, f"{t.name} says its unit"
        for meta in t.row_meta:
            assert meta is not None
            family = meta["hypothesis_family"]
            if family["name"] not in summary:
                # A family none of whose rows had a test to run (a relation with no refusal
                # at all): no row in the summary, and its rows say so.
                assert (meta["correction"], family["size"]) == ("not run", 0)
                continue
            _, tests, dropped, _, method, _ = summary[family["name"]]
            assert (family["size"], family["tarone_dropped"], family["method"]) == (
                tests,
                dropped,
                method,
            )
