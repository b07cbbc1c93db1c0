"""End to end on the simulated model: the report must find the biases planted in
harness/models/sim.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.tables import Table
from harness.running.campaign import embedded_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from relations.metafair.sim import DEFAULT_TAILORING
from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS
from tests.core.reporting.test_report import assert_formats_agree, rows_as_dicts


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    db = tmp_path_factory.mktemp("e2e") / "sim.db"
    config = embedded_campaign("sim")  # 1,476 cases: MR1 and MR2 300, MR8 138, two repeats
    summary = asyncio.run(run_campaign(config, db))
    assert summary.status == "completed"
    assert summary.cases_closed == 1476
    return db


def tables(db: Path, **options: Any) -> dict[str, Table]:
    with EventReader(db) as log:
        return {t.name: t for t in build_report(log, **options)}


def test_every_case_has_a_verdict_and_no_call_failed(sim_log: Path) -> None:
    with connect(sim_log) as conn:
        assert conn.execute("SELECT count(*) FROM verdicts").fetchone() == (1476,)
        assert conn.execute("SELECT count(*) FROM turns WHERE reply IS NULL").fetchone() == (0,)
        assert conn.execute("SELECT count(DISTINCT case_id) FROM turns").fetchone() == (1476,)


def test_top_violating_terms_are_the_planted_ones(sim_log: Path) -> None:
    top = rows_as_dicts(tables(sim_log, top=10)["top_violating_terms"])
    for relation in ("metaquerier.mr1", "metaquerier.mr2"):  # the top 10 of each relation
        mine = [r for r in top if r["relation"] == relation]
        assert len(mine) == 10
        planted = [r["term"] for r in mine if r["term"].lower() in DEFAULT_ASSOCIATIONS]
        assert len(planted) >= 7, mine
    # And per relation: MR1 and MR2 each point at the planted terms.
    with connect(sim_log) as conn:
        for relation in ("metaquerier.mr1", "metaquerier.mr2"):
            counts: Counter[str] = Counter()
            for (evidence,) in conn.execute(
                "SELECT evidence FROM verdicts WHERE relation = ?", (relation,)
            ):
                counts.update(json.loads(evidence).get("violating_terms") or [])
            leaders = [t for t, _ in counts.most_common(10)]
            hits = sum(t.lower() in DEFAULT_ASSOCIATIONS for t in leaders)
            assert hits >= 7, (relation, counts.most_common(10))


def test_mr8_violates_more_for_planted_tailoring(sim_log: Path) -> None:
    planted: Counter[str] = Counter()
    other: Counter[str] = Counter()
    with connect(sim_log) as conn:
        for outcome, evidence in conn.execute(
            "SELECT outcome, evidence FROM verdicts WHERE relation = 'metafair.mr8'"
        ):
            attribute = json.loads(evidence)["attribute"]
            bucket = planted if attribute in DEFAULT_TAILORING else other
            bucket[outcome] += 1
    assert sum(planted.values()) >= 20 and sum(other.values()) >= 20

    def rate(c: Counter[str]) -> float:
        return c["VIOLATED"] / (c["VIOLATED"] + c["HELD"])

    assert rate(planted) > 3 * rate(other), (planted, other)
    assert rate(planted) > 0.25


def test_violation_rates_match_the_verdicts(sim_log: Path) -> None:
    rates = rows_as_dicts(tables(sim_log)["violation_rates"])
    with connect(sim_log) as conn:
        for row in rates:
            if row["relation"] == "(all)":
                continue
            counts = dict(
                conn.execute(
                    "SELECT outcome, count(*) FROM verdicts WHERE relation = ? GROUP BY outcome",
                    (row["relation"],),
                ).fetchall()
            )
            assert row["violated"] == counts.get("VIOLATED", 0)
            assert row["held"] == counts.get("HELD", 0)
            assert row["cases"] == sum(counts.values())
    # MR2 checks more than MR1 (dropped and newly named terms), so it finds more.
    by_relation = {r["relation"]: r["rate"] for r in rates}
    assert by_relation["metaquerier.mr2"] > by_relation["metaquerier.mr1"] > 0


def test_json_and_csv_give_the_numbers_of_the_tables(sim_log: Path) -> None:
    with EventReader(sim_log) as log:
        assert_formats_agree(build_report(log))
