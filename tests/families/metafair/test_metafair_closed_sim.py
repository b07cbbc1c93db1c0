"""MR11-14 on ``sim:`` with planted truth: each MR finds its planted attributes and nothing
else after the Benjamini-Hochberg correction, in both oracle modes; the campaign replays."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.reporting.stats import compare_groups, fdr_adjust
from harness.reporting.tables import ReportContext
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from relations.metafair.closed.relations import closed_tests
from relations.metafair.closed.truth import MetaFairClosedTruth
from relations.metafair.corpus import attribute_catalogue
from relations.metafair.testset import MetaFairTest, write_testset

VARIANTS = 20  # tests per (hand-written template, attribute)
PLANTED = MetaFairClosedTruth()
PLANTED_BY_MR = {
    11: set(PLANTED.closed_score),
    12: set(PLANTED.closed_yes_no),
    13: set(PLANTED.closed_choice),
    14: set(PLANTED.closed_ranking),
}


def _attributes_of(dimension: str, planted: set[str]) -> list[str]:
    """The planted attributes of ``dimension`` and three unplanted ones."""
    words = [a.word for a in attribute_catalogue().of(dimension)]
    chosen = [w for w in words if w in planted]
    chosen += [w for w in words if w not in planted][1:4]
    return chosen


def widened_testset(path: Path) -> Path:
    """The hand-written templates with their follow-up attribute replaced by several
    attributes of its dimension, each in VARIANTS numbered copies (independent draws)."""
    tests: list[MetaFairTest] = []
    for mr, planted in PLANTED_BY_MR.items():
        for test in closed_tests(None, mr)[::2]:  # one template per dimension
            old = test.attributes[0]
            for attribute in _attributes_of(test.dimension, planted):
                if attribute == test.source_attributes[0]:
                    continue
                follow = re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", attribute, test.follow_up)
                for k in range(VARIANTS):
                    tests.append(
                        test.model_copy(
                            update={
                                "id": f"{test.id}-{attribute}-{k}",
                                "attributes": (attribute,),
                                "source": f"Question {k}. {test.source}",
                                "follow_up": f"Question {k}. {follow}",
                            }
                        )
                    )
    write_testset(tests, path)
    return path


def campaign(testset: Path, mode: str) -> dict[str, Any]:
    return {
        "name": "metafair-closed-sim",
        "seed": 7,
        "models": [{"name": "sim:planted", "max_in_flight": 32}],
        "relations": [
            {"name": f"metafair.mr{mr}", "options": {"testset": str(testset), "mode": mode}}
            for mr in (11, 12, 13, 14)
        ],
    }


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("closed")
    testset = widened_testset(base / "tests.json")
    db = base / "sim.db"
    config = parse_campaign(campaign(testset, "strict"), source="test")
    summary = asyncio.run(run_campaign(config, db))
    assert summary.status == "completed"
    return db


def flagged_attributes(db: Path) -> dict[str, set[str]]:
    """Per MR, the attributes whose biased rate differs from the rest of their dimension
    after FDR over every test (compare_to_rest + Benjamini-Hochberg)."""
    with EventReader(db) as log:
        ctx = ReportContext(log, log.campaign_id(None))
        counts: Counter[tuple[str, ...]] = Counter()
        totals: Counter[tuple[str, ...]] = Counter()
        for v in ctx.relation_verdicts:
            if v.outcome == "INVALID":
                continue
            key = (v.relation, v.evidence["dimension"], v.evidence["attribute"])
            totals[key] += 1
            counts[key] += v.outcome == "VIOLATED"
    keyed = {k: (counts[k], totals[k]) for k in totals}
    compared = compare_groups(keyed)
    _, flags = fdr_adjust([g.p for _, g in compared])
    out: dict[str, set[str]] = {}
    for ((relation, _, attribute), g), flag in zip(compared, flags, strict=True):
        if flag and g.rate > g.rest_rate:
            out.setdefault(relation, set()).add(attribute)
    return out


def test_each_mr_finds_its_planted_attributes_and_nothing_else(sim_log: Path) -> None:
    found = flagged_attributes(sim_log)
    for mr, planted in PLANTED_BY_MR.items():
        assert found.get(f"metafair.mr{mr}", set()) == planted, mr


def test_sim_answers_are_all_readable_in_both_modes(sim_log: Path) -> None:
    with EventReader(sim_log) as log:
        ctx = ReportContext(log, log.campaign_id(None))
        verdicts = list(ctx.relation_verdicts)
    assert len(verdicts) > 400
    assert all(v.outcome != "INVALID" for v in verdicts)
    assert all(v.evidence["readings"]["strict"] == v.evidence["readings"]["guardme"]
               for v in verdicts)  # fmt: skip


def test_the_campaign_replays_without_differences(sim_log: Path) -> None:
    result = verify_log(sim_log)
    assert result.differences == []


def test_structured_answers_find_the_same_planted_attributes(tmp_path: Path) -> None:
    """With answer_format = "structured" every ask carries its shape (score, Yes/No, A/B/C,
    ranking), the sim answers in that shape, and both modes read the structured replies."""
    testset = widened_testset(tmp_path / "tests.json")
    spec = campaign(testset, "guardme")
    spec["answer_format"] = "structured"
    db = tmp_path / "structured.db"
    summary = asyncio.run(run_campaign(parse_campaign(spec, source="test"), db))
    assert summary.status == "completed"
    with EventReader(db) as log:
        shapes = {
            kind
            for (kind,) in log.connection.execute(
                "SELECT json_extract(payload, '$.ask.answer.kind') FROM events"
                " WHERE kind = 'AskSent'"
            )
        }
        verdicts = list(ReportContext(log, log.campaign_id(None)).relation_verdicts)
    assert shapes == {"score", "yes_no", "choice", "ranking"}
    assert all(v.outcome != "INVALID" for v in verdicts)
    found = flagged_attributes(db)
    assert {r: found.get(f"metafair.mr{r}", set()) for r in PLANTED_BY_MR} == PLANTED_BY_MR


def test_a_constrained_ranking_keeps_the_order_given() -> None:
    import random

    from harness.models.sim import constrained
    from harness.vocabulary.answer_shape import AnswerShape

    shape = AnswerShape(kind="ranking", options=("alpha", "beta", "gamma"))
    rng = random.Random(0)
    assert shape.read(constrained("[gamma, alpha, beta]", shape, rng)) == ["gamma", "alpha", "beta"]
    assert shape.read(constrained("1. beta\n2. gamma\n3. alpha", shape, rng)) == [
        "beta",
        "gamma",
        "alpha",
    ]
