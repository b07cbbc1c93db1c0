"""``harness badf analyze``: stages 3-5 as a campaign appended to the story campaign's log.

Stages 3 (unification) and 4 (significance) are computed from the story campaign's recorded
verdicts (no model call, unless the chosen embedder is a paid API; its calls are cached by
that embedder). Stage 5 asks a judge model, for every significant association, whether the
concept is exclusive to the identity by definition: that is a ``badf.exclusivity`` campaign
written into the same log, whose relation options carry the analysis settings and every
candidate with its statistics and story links. So:

- the report reads the log only (candidates from the exclusivity campaign's cases, verdicts
  from its judge turns): it never calls a model or an embedding API;
- running ``analyze`` again with the same settings finds the same campaign (same config
  hash): a finished one is left as it is, an unfinished one is resumed, nothing pays twice;
- with other settings a new exclusivity campaign starts, and every question already answered
  in this log (same judge, same prompt) is served from the log's answers (the answer cache),
  not asked again;
- ``harness replay --verify`` and ``harness rejudge`` work on it like on any campaign.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.family_api import (
    CampaignConfig,
    ConfigError,
    EventReader,
    LogAnswerCache,
    ModelSpec,
    ProgressSink,
    RelationSpec,
    ReportContext,
    campaign_statuses,
    resume_campaign,
    run_campaign,
)
from relations.badf.analysis import Analysis, AnalysisSettings, analyse, observations
from relations.badf.embedding import Embedder, embedder_for
from relations.badf.embedding_cache import CachedEmbedder

STORY = "badf.story"
EXCLUSIVITY = "badf.exclusivity"


def relations_of(config: dict[str, Any]) -> list[str]:
    return [r.get("name", "") for r in config.get("relations", [])]


def story_campaign(log: EventReader, wanted: str | None) -> tuple[str, dict[str, Any]]:
    """The story campaign to analyse: ``wanted``, or the latest with badf.story cases."""
    if wanted is not None:
        cid = log.campaign_id(wanted)
        started = dict(log.campaigns())[cid]
        if STORY not in relations_of(started.config):
            raise ConfigError(
                f"campaign {cid} has no {STORY} relation",
                field="--campaign",
                fix="give a story campaign",
            )
        return cid, started.config
    for cid, started in reversed(log.campaigns()):
        if STORY in relations_of(started.config):
            return cid, started.config
    raise ConfigError(
        f"{log.path} holds no {STORY} campaign",
        field="DB",
        fix="run a BADF story campaign first (examples/badf_sim.toml)",
    )


def default_judge(config: dict[str, Any]) -> ModelSpec:
    """The story campaign's extractor judge (judges[extractor_judge]), else its first model."""
    judges = config.get("judges") or []
    for rel in config.get("relations", []):
        if rel.get("name") == STORY and judges:
            index = int((rel.get("options") or {}).get("extractor_judge", 0))
            return ModelSpec.model_validate(judges[min(index, len(judges) - 1)])
    return ModelSpec.model_validate(config["models"][0])


def analyse_log(
    db: str | Path,
    settings: AnalysisSettings,
    *,
    campaign: str | None = None,
    embedder: Embedder | None = None,
) -> tuple[str, dict[str, Any], Analysis]:
    with EventReader(db) as log:
        cid, config = story_campaign(log, campaign)
        ctx = ReportContext(log, cid)
        rows = ((v.case_id, v.outcome, v.evidence) for v in ctx.verdicts() if v.relation == STORY)
        if embedder is None:
            # Vectors are kept in the log by (embedder, text): a second analysis, a resume or
            # another process never computes (or pays for) a phrase's vector twice.
            inner = embedder_for(settings.embedder, **settings.embedder_options)
            embedder = CachedEmbedder(inner, db, campaign=cid)
        analysis = analyse(observations(rows), settings, embedder)
    return cid, config, analysis


def exclusivity_config(
    story_id: str, story_config: dict[str, Any], analysis: Analysis, judge: ModelSpec
) -> CampaignConfig:
    recorded = analysis.settings.model_dump(mode="json") | {
        "threshold": analysis.unification.threshold,
        "embedder_name": analysis.unification.embedder,
        "keep_by": analysis.settings.effective_keep_by(),
        "tests": analysis.tests,
        "lists": analysis.lists,
    }
    if analysis.settings.rule == "evidence":
        recorded["tarone_dropped"] = analysis.dropped
    if analysis.control is not None:
        # The null floor travels with the candidates: the report reads the log only.
        recorded["control"] = analysis.control.recorded()
    options = {
        "source_campaign": story_id,
        "analysis": recorded,
        "candidates": [c.model_dump(mode="json") for c in analysis.candidates],
    }
    return CampaignConfig(
        name=f"badf-exclusivity:{story_config.get('name', story_id)}",
        seed=int(story_config.get("seed", 0)),
        models=[judge],
        relations=[RelationSpec(name=EXCLUSIVITY, options=options)],
    )


@dataclass
class AnalyzeOutcome:
    story_campaign: str
    analysis: Analysis
    campaign: str | None  # the exclusivity campaign (None: no candidate, nothing to ask)
    action: str  # "started" | "resumed" | "already finished" | "nothing to ask"
    cached: int = 0


async def analyze(
    db: str | Path,
    settings: AnalysisSettings,
    *,
    campaign: str | None = None,
    judge: ModelSpec | None = None,
    embedder: Embedder | None = None,
    progress: ProgressSink | None = None,
) -> AnalyzeOutcome:
    story_id, story_config, analysis = analyse_log(
        db, settings, campaign=campaign, embedder=embedder
    )
    if not analysis.candidates:
        return AnalyzeOutcome(story_id, analysis, None, "nothing to ask")
    config = exclusivity_config(
        story_id, story_config, analysis, judge or default_judge(story_config)
    )
    with EventReader(db) as log:
        same = [
            s
            for s in campaign_statuses(log)
            if s.started is not None and s.started.config_hash == config.config_hash()
        ]
    if same and same[-1].status == "completed":
        return AnalyzeOutcome(story_id, analysis, same[-1].campaign, "already finished")
    if same:
        summary = await resume_campaign(db, campaign=same[-1].campaign, progress=progress)
        return AnalyzeOutcome(story_id, analysis, summary.campaign, "resumed", summary.cached)
    cache = LogAnswerCache.from_logs([db])
    summary = await run_campaign(config, db, progress=progress, cache=cache)
    return AnalyzeOutcome(story_id, analysis, summary.campaign, "started", summary.cached)
