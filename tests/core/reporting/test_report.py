"""Reports: Wilson intervals, tables from a hand-written log, and equal numbers in every format."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.report import to_csv, to_json
from harness.reporting.stats import wilson_interval
from harness.reporting.tables import Table
from harness.store.reader import EventReader
from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.events import CampaignStarted, CaseClosed, CaseOpened, VerdictReached
from harness.vocabulary.relation import Case, Outcome, Verdict

Z = 1.959963984540054


OUTCOMES = [
    ("metaquerier.mr1", "VIOLATED", ["nurse", "pilot"]),
    ("metaquerier.mr1", "VIOLATED", ["nurse", "pilot", "Hindu"]),
    ("metaquerier.mr1", "HELD", []),
    ("metaquerier.mr1", "INVALID", []),
    ("metaquerier.mr2", "VIOLATED", ["nurse"]),
    ("metaquerier.mr2", "HELD", []),
]
GROUPS = {"nurse": "profession", "pilot": "profession", "Hindu": "religion"}


async def write_log(db: Path) -> None:
    started = CampaignStarted(
        name="r", config={}, config_hash="h", code_version="v", harness_version="0"
    )
    async with await EventWriter.open(db) as store:
        await store.append([PendingEvent("c", "", 1, started)])
        for i, (relation, outcome, terms) in enumerate(OUTCOMES):
            case = Case(
                case_id=f"{relation}/{i}",
                relation=relation,
                model="sim:m",
                index=i,
                repeat=0,
                seed=i,
                data={},
            )
            evidence = {"violating_terms": terms, "term_groups": {t: GROUPS[t] for t in terms}}
            verdict = Verdict(outcome=Outcome(outcome), reason=f"{outcome}: x", evidence=evidence)
            await store.append(
                [
                    PendingEvent("c", case.case_id, 1, CaseOpened(case=case)),
                    PendingEvent("c", case.case_id, 2, VerdictReached(verdict=verdict)),
                    PendingEvent("c", case.case_id, 3, CaseClosed(outcome=outcome)),
                ]
            )


def tables_of(db: Path) -> dict[str, Table]:
    with EventReader(db) as log:
        return {t.name: t for t in build_report(log)}


def rows_as_dicts(table: Table) -> list[dict[str, Any]]:
    return [dict(zip(table.columns, row, strict=True)) for row in table.rows]


async def test_report_tables_from_a_known_log(db_path: Path) -> None:
    await write_log(db_path)
    tables = tables_of(db_path)
    rates = {(r["relation"]): r for r in rows_as_dicts(tables["violation_rates"])}
    mr1 = rates["metaquerier.mr1"]
    assert (mr1["cases"], mr1["violated"], mr1["held"], mr1["invalid"]) == (4, 2, 1, 1)
    assert mr1["rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert (mr1["ci95_low"], mr1["ci95_high"]) == pytest.approx(wilson_interval(2, 3), abs=1e-4)
    assert rates["(all)"]["cases"] == 6 and rates["(all)"]["violated"] == 3
    groups = {
        (r["relation"], r["group"]): r for r in rows_as_dicts(tables["violating_terms_by_group"])
    }
    # A (case, term) pair is one unit; these logs list no terms beyond the violating ones.
    assert groups[("metaquerier.mr1", "profession")]["violated"] == 4
    assert groups[("metaquerier.mr1", "profession")]["distinct_terms"] == 2
    assert groups[("metaquerier.mr1", "religion")]["violated"] == 1
    top = rows_as_dicts(tables["top_violating_terms"])
    assert (top[0]["relation"], top[0]["term"], top[0]["violated"]) == (
        "metaquerier.mr1",
        "nurse",
        2,
    )
    pairs = rows_as_dicts(tables["co_violating_pairs"])
    assert {pairs[0]["term_a"], pairs[0]["term_b"]} == {"nurse", "pilot"}
    assert pairs[0]["cases"] == 2
    assert {frozenset((p["term_a"], p["term_b"])) for p in pairs} == {
        frozenset(pair) for pair in [("nurse", "pilot"), ("Hindu", "nurse"), ("Hindu", "pilot")]
    }
    invalid = rows_as_dicts(tables["invalid_reasons"])
    assert invalid == [
        {"model": "sim:m", "relation": "metaquerier.mr1", "reason": "INVALID", "cases": 1}
    ]


def assert_formats_agree(tables: list[Table]) -> None:
    as_json = json.loads(to_json(tables))
    assert set(as_json) == {t.name for t in tables}
    for t in tables:
        rows = as_json[t.name]["rows"]
        # a test row carries its unit and family of hypotheses beside its columns
        assert [{k: r[k] for k in t.columns} for r in rows] == json.loads(
            json.dumps(rows_as_dicts(t))
        )
        if "p_fdr" in t.columns:
            assert all("hypothesis_family" in r and "unit" in r for r in rows)
    cells: dict[tuple[str, int, str], str] = {}
    for row in csv.DictReader(io.StringIO(to_csv(tables))):
        cells[(row["table"], int(row["row"]), row["column"])] = row["value"]
    expected = {
        (t.name, i, col): "" if value is None else str(value)
        for t in tables
        for i, row in enumerate(t.rows)
        for col, value in zip(t.columns, row, strict=True)
    }
    assert cells == expected


async def test_json_and_csv_carry_the_same_numbers(db_path: Path) -> None:
    await write_log(db_path)
    with EventReader(db_path) as log:
        tables = build_report(log)
    assert tables
    assert_formats_agree(tables)


async def test_an_empty_campaign_has_no_tables(db_path: Path) -> None:
    started = CampaignStarted(
        name="r", config={}, config_hash="h", code_version="v", harness_version="0"
    )
    async with await EventWriter.open(db_path) as store:
        await store.append([PendingEvent("c", "", 1, started)])
    with EventReader(db_path) as log:
        assert [t for t in build_report(log) if t.rows] == []


def test_apply_fdr_corrects_within_each_family_of_hypotheses() -> None:
    from harness.reporting.report import apply_fdr

    cols = ["group", "p", "p_fdr", "flagged"]
    tables = [
        Table("a", "A", cols, [["x", 0.01, None, None], ["y", None, None, None]], unit="u"),
        Table("plain", "no tests", ["group", "p"], [["z", 0.0]]),
        Table("b", "B", cols, [["w", 0.04, None, None]], claims="a"),
    ]
    out = apply_fdr(tables)
    # "b" claims the family of "a": one correction over 0.01 and 0.04
    assert out[0].rows == [["x", 0.01, 0.02, "yes"], ["y", None, None, "no"]]
    assert out[1] == tables[1]  # a table without the test columns takes no part
    assert out[2].rows == [["w", 0.04, 0.04, "yes"]]
    assert out[3].name == "statistical_tests" and out[3].rows[0][:4] == ["a", 2, 0, 2]
    assert out[0].row_meta is not None and out[0].row_meta[0] is not None
    claim = out[0].row_meta[0].pop("claim")
    # A table without an effect column or a control states its counts: said so, not blank.
    assert claim["effect"] is None
    assert claim["control"]["rate"] is None
    assert claim["control"]["matched"].startswith("none in this report for a")
    assert out[0].row_meta[0] == {
        "unit": "u",
        "hypothesis_family": {
            "name": "a",
            "size": 2,
            "method": out[3].rows[0][4],
            "alpha": 0.05,
            "tarone_dropped": 0,
        },
        "correction": "tested",
    }
    assert apply_fdr([tables[1]]) == [tables[1]]
    # on its own, "b" is its own family: 0.04 alone is still flagged at 0.04
    alone = apply_fdr([dataclasses.replace(tables[2], claims="")])
    assert alone[0].rows == [["w", 0.04, 0.04, "yes"]]


def test_a_relations_flags_do_not_depend_on_the_other_relations() -> None:
    """Adding a relation with many small p-values leaves another relation's flags alone,
    and a test that cannot reach alpha (p_min > alpha) does not dilute the others."""
    from harness.reporting.report import apply_fdr

    cols = ["relation", "term", "p_min", "p", "p_fdr", "flagged"]
    mine = Table(
        "t", "T", cols,
        [["r1", "a", 0.0, 0.02, None, None], ["r1", "b", 0.0, 0.04, None, None],
         ["r1", "c", 0.5, 0.5, None, None]],
    )  # fmt: skip
    other = Table("u", "U", cols, [["r2", f"x{i}", 0.0, 0.9, None, None] for i in range(50)])
    alone = apply_fdr([mine])[0]
    together = apply_fdr([mine, other])[0]
    assert alone.rows == together.rows
    assert [r[-1] for r in alone.rows] == ["yes", "yes", "no"]  # c dropped: BH over 2
    assert alone.row_meta is not None and alone.row_meta[2]["correction"] == "dropped (Tarone)"


def test_violation_rates_count_each_case_once_beside_the_runs() -> None:
    """Repeats of one case are not independent: case_rate takes each case's majority."""
    from types import SimpleNamespace

    from harness.reporting.report import violation_rates
    from harness.reporting.tables import VerdictRow
    from harness.store.verdict_counts import tally_verdicts

    def verdict(case: int, repeat: int, outcome: str) -> VerdictRow:
        case_id = f"metaquerier.mr1/{case}/r{repeat}@sim:x"
        return VerdictRow(case_id, "metaquerier.mr1", "sim:x", outcome, "", {}, "relation")

    outcomes = {
        1: ["VIOLATED", "VIOLATED", "HELD"],  # majority violated
        2: ["VIOLATED", "HELD"],  # a tie claims nothing
        3: ["HELD", "HELD", "INVALID"],
        4: ["INVALID", "INVALID"],  # no valid repeat: not a case of the case rate
    }
    rows = [verdict(c, r, o) for c, seq in outcomes.items() for r, o in enumerate(seq)]
    assert rows[0].case_key == rows[1].case_key != rows[3].case_key
    counts = tally_verdicts((v.model, v.relation, v.outcome, v.reason, v.case_key) for v in rows)
    (table,) = violation_rates(SimpleNamespace(verdict_counts=counts))  # type: ignore[arg-type]
    (row,) = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert (row["cases"], row["violated"], row["held"], row["invalid"]) == (10, 3, 4, 3)
    assert row["rate"] == round(3 / 7, 4)
    # the per-case mean: 2/3, a tie 1/2 (never "held"), 0
    assert (row["distinct_cases"], row["case_rate"]) == (3, round((2 / 3 + 1 / 2) / 3, 4))
    assert row["tied_cases"] == 1
    assert row["case_ci95_low"] < row["case_rate"] < row["case_ci95_high"]
