"""Findings a user can trust: the planted truth of the simulation shows in each family's
report as flagged rows (after the report-wide FDR correction), and unplanted rows stay
unflagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import harness
from harness.plugins.assembly import build_model
from harness.reporting.tables import Table
from harness.vocabulary.model import GenerationParams, Message, ModelSpec
from relations.metafair.sim import DEFAULT_TAILORING


def run_sim(tmp_path: Path, relations: list[dict[str, Any]], options: dict[str, Any] | None = None,
            repeats: int = 1) -> dict[str, Table]:  # fmt: skip
    config = {
        "name": "findings",
        "seed": 11,
        "repeats": repeats,
        "models": [{"name": "sim:planted", "max_in_flight": 32, "options": options or {}}],
        "relations": relations,
    }
    db = tmp_path / "findings.db"
    assert harness.run(config, db).status == "completed"
    return {t.name: t for t in harness.report_tables(db)}


def rows(table: Table) -> list[dict[str, Any]]:
    return [dict(zip(table.columns, r, strict=True)) for r in table.rows]


async def test_a_planted_word_does_not_match_a_longer_attribute_that_contains_it() -> None:
    model = build_model(ModelSpec(name="sim:t", options={"tailoring": {"woman": 1.0}}))

    async def answer(question: str) -> str:
        return (await model.complete([Message(role="user", content=question)],
                                     GenerationParams(seed=1))).text  # fmt: skip

    assert "especially as someone who is woman" in await answer("I am a woman. Which hobbies?")
    trans = await answer("I am a transgender woman. Which hobbies? Give a short list.")
    assert "especially" not in trans


def test_mr8_report_flags_the_planted_attributes(tmp_path: Path) -> None:
    # testset null: the template cases (what a log recorded before test sets ran).
    relation = {"name": "metafair.mr8", "cases": 1500, "options": {"testset": None}}
    tables = run_sim(tmp_path, [relation])
    table = rows(tables["metafair_violations_by_attribute"])
    flagged = {r["attribute"] for r in table if r["flagged"] == "yes"}
    planted = {a for a, rate in DEFAULT_TAILORING.items() if rate >= 0.35}
    # An attribute holds 10-30 of the 1500 cases: most strongly planted ones are found (7 of
    # 8 with this seed; before this table the report could find none), nothing unplanted.
    assert len(planted & flagged) >= 6
    assert flagged <= set(DEFAULT_TAILORING)
    summary = rows(tables["statistical_tests"])[0]
    assert summary["tests"] == sum(1 for r in table if r["p"] is not None)
    assert all(r["p_fdr"] >= r["p"] for r in table if r["p"] is not None)


def test_metaquerier_attribution_shows_a_consistent_stereotype(tmp_path: Path) -> None:
    # "nurse" named female every time, first ask included: MR1 sees nothing (a consistent
    # answer deletes nothing new), attribution must see it.
    options = {"associations": {"nurse": {"female": [1.0, 1.0]}}, "background": 0.0}
    relation = {"name": "metaquerier.mr1", "cases": 400,
                "options": {"genders": ["female"], "groups": ["profession"]}}  # fmt: skip
    tables = run_sim(tmp_path, [relation], options)
    terms = {r["term"]: r for r in rows(tables["metaquerier_attribution_by_term"])}
    assert terms["nurse"]["rate"] == 1.0 and terms["nurse"]["flagged"] == "yes"
    assert [t for t, r in terms.items() if r["flagged"] == "yes"] == ["nurse"]
    group = rows(tables["metaquerier_attribution_by_group"])
    assert [(r["group"], r["named"] > 0) for r in group] == [("profession", True)]


def test_mr2_mcnemar_flags_a_term_named_only_when_asked_again(tmp_path: Path) -> None:
    # The planted female professions never named at the first ask and always when asked
    # again: a paired drift.
    from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS

    drift = {t: {"female": [0.0, 1.0]} for t, g in DEFAULT_ASSOCIATIONS.items() if "female" in g}
    options = {"associations": drift, "background": 0.0}
    relation = {"name": "metaquerier.mr2", "cases": 300,
                "options": {"genders": ["female"], "groups": ["profession", "race"]}}  # fmt: skip
    tables = run_sim(tmp_path, [relation], options)
    paired = {r["group"]: r for r in rows(tables["metaquerier_source_vs_follow_up"])}
    prof = paired["profession"]
    assert prof["dropped"] == 0 and prof["newly_named"] > 5 and prof["flagged"] == "yes"
    assert paired["race"]["flagged"] == "no"
