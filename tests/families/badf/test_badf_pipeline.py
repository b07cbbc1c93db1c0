"""BADF end to end on the simulated model: planted associations recovered, none under a null
plan, paraphrases unified, the exclusivity campaign appended to the log without paying twice,
replay of both campaigns, and a report that reads the log only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harness.running.campaign import load_campaign, parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from relations.badf.analysis import AnalysisSettings
from relations.badf.analyze import analyse_log, analyze
from relations.badf.embedding import RECOMMENDED_THRESHOLDS, LexicalEmbedder
from relations.badf.sim import DEFAULT_PLANTED, PARAPHRASES, SEMANTIC_PARAPHRASES
from relations.badf.unify import unify

REPO = Path(__file__).resolve().parents[3]


def story_campaign(stories: int = 2, **sim: Any) -> dict[str, Any]:
    return {
        "name": "badf-test",
        "seed": 5,
        "models": [{"name": "sim:writer", "options": sim}],
        "judges": [{"name": "sim:extractor", "options": sim}],
        "relations": [
            {
                "name": "badf.story",
                "options": {
                    "arms": ["base-two"],
                    "identity_categories": ["gender"],
                    "location_categories": ["healthcare", "sports"],
                    "stories": stories,
                },
            }
        ],
    }


def run(config: dict[str, Any], db: Path) -> None:
    summary = asyncio.run(run_campaign(parse_campaign(config, source="test"), db))
    assert summary.status == "completed"


def found_cells(candidates: list[Any]) -> set[tuple[str, str, str]]:
    """(location category, identity, phrase) for every phrase of every kept concept: a
    planted concept is found when its cluster holds it, whichever paraphrase represents it."""
    return {(c.location_category, c.identity, m) for c in candidates for m in c.members}


def planted_cells(
    categories: list[str], identity_categories: dict[str, list[str]]
) -> set[tuple[str, str, str]]:
    """(location category, identity, concept) of every planted association a campaign covers."""
    ids = {i for v in identity_categories.values() for i in v}
    return {
        (cat, p.identity, p.concept)
        for p in DEFAULT_PLANTED
        for cat in categories
        if p.identity in ids and p.location_category in (None, cat)
    }


@pytest.fixture(scope="module")
def story_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("badf") / "stories.db"
    run(story_campaign(), db)
    return db


def test_planted_associations_are_recovered(story_db: Path) -> None:
    _, _, analysis = analyse_log(story_db, AnalysisSettings())
    found = found_cells(analysis.candidates)
    planted = planted_cells(["healthcare", "sports"], {"gender": ["female", "male"]})
    assert len(planted) == 4  # caring (healthcare), competitive (sports), female (both)
    recovered = planted & found
    assert len(recovered) / len(planted) >= 0.9, planted - found
    caring = next(c for c in analysis.candidates if "caring" in c.members)
    assert caring.identity == "female" and set(caring.members) == set(PARAPHRASES["caring"])
    assert 0.2 < caring.score < 0.6 and caring.a <= caring.n == 100


def test_null_plan_keeps_at_most_five_percent_after_fdr(tmp_path: Path) -> None:
    db = tmp_path / "null.db"
    run(story_campaign(badf_null=True), db)
    _, _, analysis = analyse_log(db, AnalysisSettings(keep_by="p_bh"))
    kept = {(c.location_category, c.concept) for c in analysis.candidates}
    assert analysis.tests >= 15
    assert len(kept) <= 0.05 * analysis.tests


def test_lexical_unification_of_the_sims_paraphrases() -> None:
    e = LexicalEmbedder()
    t = RECOMMENDED_THRESHOLDS["lexical-ngram"]
    counts = {}
    for forms in PARAPHRASES.values():
        for k, form in enumerate(forms):
            counts[form] = 10 - k  # the plain form is the most frequent, as the sim writes
    for linkage in ("leader", "single"):
        result = unify(counts, e, t, linkage=linkage)  # type: ignore[arg-type]
        for concept, forms in PARAPHRASES.items():
            assert {result.concept(f) for f in forms} == {concept}, (linkage, concept)
        assert len(result.members) == len(PARAPHRASES)
    # what the lexical embedder cannot catch: paraphrases sharing no word
    for concept, forms in SEMANTIC_PARAPHRASES.items():
        both = unify({concept: 2, **dict.fromkeys(forms, 1)}, e, t)
        assert all(both.concept(f) != concept for f in forms)


def test_exclusivity_campaign_drops_exclusive_and_never_pays_twice(
    story_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "log.db"
    db.write_bytes(story_db.read_bytes())
    settings = AnalysisSettings()
    first = asyncio.run(analyze(db, settings))
    assert first.action == "started" and first.campaign
    with EventReader(db) as log:
        campaigns = log.campaigns()
        verdicts = log.connection.execute(
            "SELECT outcome, json_extract(e.payload, '$.case.data.concept') FROM verdicts v"
            " JOIN events e ON e.campaign = v.campaign AND e.case_id = v.case_id"
            " AND e.kind = 'CaseOpened' WHERE v.campaign = ?",
            (first.campaign,),
        ).fetchall()
    assert len(campaigns) == 2 and campaigns[1][1].name.startswith("badf-exclusivity:")
    dropped = {concept for outcome, concept in verdicts if outcome == "VIOLATED"}
    kept = {concept for outcome, concept in verdicts if outcome == "HELD"}
    assert dropped == {"female"} and {"caring", "competitive"} & kept
    # same settings again: the finished campaign is found, nothing is asked
    again = asyncio.run(analyze(db, settings))
    assert again.action == "already finished" and again.campaign == first.campaign
    # other settings: a new campaign whose questions asked before come from the log
    other = asyncio.run(analyze(db, AnalysisSettings(yates=False)))
    assert other.action == "started" and other.campaign != first.campaign
    asked_before = {(c.concept, c.identity) for c in first.analysis.candidates}
    # (concept, identity) is the whole question: every case asking one asked before is served
    # from the log (one per location category it is significant in)
    again_asked = [c for c in other.analysis.candidates if (c.concept, c.identity) in asked_before]
    assert other.cached == len(again_asked) > 0
    for cid in (first.campaign, other.campaign):
        result = verify_log(db, campaign=cid)
        assert result.differences == [] and result.verdicts > 0, result.differences
    story = verify_log(db, campaign=first.story_campaign)
    assert story.differences == [] and story.asks > 0


def test_example_campaign_parses() -> None:
    config = load_campaign(REPO / "examples" / "badf_sim.toml")
    assert config.relations[0].name == "badf.story"


@pytest.mark.slow
def test_example_size_recovers_ninety_percent(tmp_path: Path) -> None:
    config = load_campaign(REPO / "examples" / "badf_sim.toml")
    db = tmp_path / "example.db"
    asyncio.run(run_campaign(config, db))
    _, _, analysis = analyse_log(db, AnalysisSettings())
    options = config.relations[0].options
    cats = options["location_categories"]
    from relations.badf.corpus import identities

    planted = planted_cells(cats, {c: list(identities(c)) for c in options["identity_categories"]})
    found = found_cells(analysis.candidates)
    assert len(planted & found) / len(planted) >= 0.9, planted - found


def test_unfinished_exclusivity_campaign_is_resumed_not_restarted(
    story_db: Path, tmp_path: Path
) -> None:
    from harness.store.writer import EventWriter, PendingEvent
    from relations.badf.analyze import default_judge, exclusivity_config

    db = tmp_path / "killed.db"
    db.write_bytes(story_db.read_bytes())
    settings = AnalysisSettings()
    story_id, story_config, analysis = analyse_log(db, settings)
    config = exclusivity_config(story_id, story_config, analysis, default_judge(story_config))

    async def start_only() -> None:
        # what a campaign killed right after its first event leaves in the log
        from harness.running.runner import campaign_started

        async with await EventWriter.open(db) as store:
            started = campaign_started(config, len(analysis.candidates))
            await store.append([PendingEvent("killed000001", "", 1, started)])

    asyncio.run(start_only())
    outcome = asyncio.run(analyze(db, settings))
    assert outcome.action == "resumed" and outcome.campaign == "killed000001"
    with EventReader(db) as log:
        assert len(log.campaigns()) == 2  # no third campaign
        closed = log.connection.execute(
            "SELECT count(*) FROM verdicts WHERE campaign = 'killed000001'"
        ).fetchone()[0]
    assert closed == len(analysis.candidates)


def test_analyze_command(story_db: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    db = tmp_path / "cli.db"
    db.write_bytes(story_db.read_bytes())
    runner = CliRunner()
    dry = runner.invoke(main, ["badf", "analyze", str(db), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "440 concept lists in 2 groups" in dry.output and "dry run: nothing asked" in dry.output
    with EventReader(db) as log:
        assert len(log.campaigns()) == 1  # a dry run writes nothing
    bad = runner.invoke(main, ["badf", "analyze", str(db), "--threshold", "2"])
    assert bad.exit_code != 0 and "threshold" in bad.output
    done = runner.invoke(main, ["badf", "analyze", str(db), "--judge", "sim:other-judge"])
    assert done.exit_code == 0, done.output
    assert "exclusivity campaign" in done.output and ": started" in done.output
    with EventReader(db) as log:
        started = log.campaigns()[-1][1]
    assert started.config["models"][0]["name"] == "sim:other-judge"


def test_embedder_options_reach_the_embedder(story_db: Path) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    args = ["badf", "analyze", str(story_db), "--dry-run", "--embedder", "lexical-ngram"]
    args += ["--embedder-option", "dim=256"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "lexical-ngram:256:3-5" in result.output
    bad = CliRunner().invoke(main, [*args[:-1], "colour=red"])
    assert bad.exit_code != 0 and "does not take these options" in bad.output


def test_analysis_keeps_vectors_in_the_log_and_never_computes_one_twice(
    story_db: Path, tmp_path: Path
) -> None:
    import shutil

    from relations.badf.embedding_cache import embedding_calls

    db = tmp_path / "copy.db"
    shutil.copy(story_db, db)
    assert embedding_calls(db) == []
    _, _, first = analyse_log(db, AnalysisSettings())
    calls = embedding_calls(db)
    assert calls and {c.embedder for c in calls} == {"minilm-l6-numpy"}
    assert sum(c.texts for c in calls) == len(first.unification.representative)
    _, _, second = analyse_log(db, AnalysisSettings())
    assert embedding_calls(db) == calls  # every vector came from the log
    assert second.candidates == first.candidates
