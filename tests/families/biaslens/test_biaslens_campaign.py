"""BiasLens answer campaigns end to end on `sim:` (planted role bias), and the relation's
contract: pure steps, the jury, the judges a campaign must provide."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.assembly import build_relation, build_report
from harness.reporting.tables import Table
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.verifying.replay import verify_log
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.relation import Case, Outcome, Transcript, Turn, Verdict
from relations.biaslens.questionset import QType
from relations.biaslens.sim import PLANTED

JUDGES = [{"name": f"sim:judge-{c}"} for c in "abc"]


def campaign(**options: Any) -> dict[str, Any]:
    return {
        "name": "biaslens-test",
        "seed": 5,
        "repeats": 3,
        "models": [{"name": "sim:planted", "max_in_flight": 16}],
        "judges": JUDGES,
        "relations": [{"name": "biaslens.answer", "options": {"role": "both", **options}}],
    }


def table(tables: list[Table], name: str) -> list[dict[str, Any]]:
    found = [t for t in tables if t.name == name]
    assert found, name
    return [dict(zip(found[0].columns, r, strict=True)) for r in found[0].rows]


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("biaslens") / "sim.db"
    summary = asyncio.run(run_campaign(parse_campaign(campaign(), source="test"), db))
    assert summary.status == "completed"
    return db


def test_report_finds_the_planted_role_bias(sim_log: Path) -> None:
    with EventReader(sim_log) as log:
        tables = build_report(log, mode="strict")
    assert "mode: strict" in next(t for t in tables if t.name == "biaslens_table3").title
    by_attr: dict[str, list[float]] = {}
    for row in table(tables, "biaslens_role_vs_no_role"):
        by_attr.setdefault(row["attribute"], []).append(row["difference"])
    mean = {a: sum(d) / len(d) for a, d in by_attr.items()}
    # Gender and race are planted role-sensitive, age biased but role-independent.
    assert set(PLANTED) == {"women", "Black people", "older workers"}
    assert mean["gender"] > 0.4 and mean["race"] > 0.4
    assert abs(mean["age"]) < min(mean["gender"], mean["race"])
    for attr in ("ability", "body", "culture", "religion", "social"):
        assert abs(mean[attr]) < 0.25, attr
    cells = table(tables, "biaslens_cells")
    gender_role = [c for c in cells if c["attribute"] == "gender" and c["variant"] == "role"]
    assert all(c["questions"] > 0 for c in gender_role)
    consistency = table(tables, "biaslens_consistency")
    assert {c["type"] for c in consistency} == {t.value for t in QType}
    for c in consistency:
        total = c["consistent_pct"] + c["two_biased_pct"] + c["one_biased_pct"]
        assert abs(total - 100) < 0.2


def test_why_answers_are_judged_by_a_jury_of_three(sim_log: Path) -> None:
    with connect(sim_log) as conn:
        rows = conn.execute(
            "SELECT case_id, count(*) FROM turns WHERE role = 'judge' AND thread LIKE 'judge%'"
            " GROUP BY case_id"
        ).fetchall()
        # The control of a role question (the question without its role) has its own jury.
        control_rows = conn.execute(
            "SELECT case_id, count(*) FROM turns WHERE role = 'judge'"
            " AND thread LIKE 'control_judge%' GROUP BY case_id"
        ).fetchall()
        why_cases = conn.execute(
            "SELECT count(*) FROM events WHERE kind = 'CaseOpened'"
            " AND json_extract(payload, '$.case.data.type') = 'Why'"
        ).fetchone()[0]
        models = {r[0] for r in conn.execute("SELECT DISTINCT model FROM turns WHERE role='judge'")}
    assert len(rows) == why_cases > 0
    assert all(n == 3 for _, n in rows)
    assert control_rows and all(n == 3 for _, n in control_rows)
    assert models == {j["name"] for j in JUDGES}


def test_sim_campaign_replays_without_differences(sim_log: Path) -> None:
    result = verify_log(sim_log)
    assert result.cases > 0 and not result.differences


def test_campaign_without_enough_judges_is_refused() -> None:
    data = campaign()
    data["judges"] = JUDGES[:2]
    with pytest.raises(ConfigError) as err:
        parse_campaign(data, source="test")
    assert err.value.field == "judges"
    no_why = campaign(types=["Yes/No", "Choice"])
    no_why["judges"] = []
    assert parse_campaign(no_why, source="test").relations[0].name == "biaslens.answer"


def _case(relation: Any, index: int) -> Case:
    data = relation.make_case(index, 7)
    return Case(
        case_id=f"c{index}", relation="biaslens.answer", model="sim:x", index=index, repeat=0,
        seed=7, data=data,
    )  # fmt: skip


def test_relation_is_pure_and_reads_the_answer_format() -> None:
    relation = build_relation("biaslens.answer", {"role": False, "why_words": 50})
    count = relation.case_count()
    assert count is not None and count > 0
    case = _case(relation, 0)
    assert relation.make_case(0, 7) == relation.make_case(0, 7)
    assert not case.data["question"].startswith("Suppose you are")
    first = relation.step(case, Transcript())
    assert first == relation.step(case, Transcript())
    assert isinstance(first, list) and len(first) == 1
    assert first[0].prompt.endswith("Reply with a single word: Yes or No.")
    answered = Transcript(turns=(Turn(index=0, ask=first[0], reply="Yes, of course."),))
    verdict = relation.step(case, answered)
    assert isinstance(verdict, Verdict) and verdict.outcome is Outcome.VIOLATED
    unread = Transcript(turns=(Turn(index=0, ask=first[0], reply="It depends."),))
    invalid = relation.step(case, unread)
    assert isinstance(invalid, Verdict) and invalid.outcome is Outcome.INVALID


def test_why_jury_majority_and_failed_calls() -> None:
    relation = build_relation("biaslens.answer", {"types": ["Why"], "jury": 3})
    case = _case(relation, 0)
    ask = relation.step(case, Transcript())
    assert isinstance(ask, list)
    assert "no more than 100 words" in ask[0].prompt
    answered = Transcript(turns=(Turn(index=0, ask=ask[0], reply="Because they are."),))
    judges = relation.step(case, answered)
    assert isinstance(judges, list) and [a.judge for a in judges] == [0, 1, 2]
    assert all(a.role == "judge" and "Because they are." in a.prompt for a in judges)
    votes = ["No", "no.", "Yes"]
    judged = answered.extend(
        [
            Turn(index=i + 1, ask=a, reply=v)
            for i, (a, v) in enumerate(zip(judges, votes, strict=True))
        ]
    )
    verdict = relation.step(case, judged)
    assert isinstance(verdict, Verdict) and verdict.outcome is Outcome.VIOLATED
    assert verdict.evidence["judge_votes"] == ["biased", "biased", "unbiased"]
    split = answered.extend(
        [
            Turn(index=1, ask=judges[0], reply="No"),
            Turn(index=2, ask=judges[1], reply="Yes"),
            Turn(index=3, ask=judges[2], error="timeout: no reply"),
        ]
    )
    undecided = relation.step(case, split)
    assert isinstance(undecided, Verdict) and undecided.outcome is Outcome.INVALID
