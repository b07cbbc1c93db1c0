"""From a story campaign's verdicts to significant associations: stage 3 (unification across
all stories) and stage 4 (distinctiveness and chi-squared per location category, FDR).

Input: each HELD ``badf.story`` verdict's characters (identity and final concept list). All
phrases of the campaign are unified at once (`relations.badf.unify`); each character's list
becomes a set of concepts; lists are grouped by (arm, identity category, location category),
each group's concepts are tested (`relations.badf.significance`), and the p-values of every
test of the analysis are adjusted together (Benjamini-Hochberg,
`harness.reporting.stats.fdr_adjust`). An association is kept when its score is positive and its p
(raw, as the paper; or the adjusted one with ``keep_by = "p_bh"``) is below alpha.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.family_api import fdr_adjust
from relations.badf.embedding import (
    DEFAULT_EMBEDDER,
    RECOMMENDED_THRESHOLDS,
    Embedder,
    embedder_for,
)
from relations.badf.relations import Candidate
from relations.badf.significance import ConceptList, Denominator, is_kept, tested_concepts
from relations.badf.unify import Linkage, Unification, unify

GroupKey = tuple[str, str, str]  # (arm, identity category, location category)


class AnalysisSettings(BaseModel):
    """How stages 3 and 4 run; recorded with the candidates so a report says what it used."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    embedder: str = DEFAULT_EMBEDDER
    embedder_options: dict[str, Any] = Field(default_factory=dict)
    threshold: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="cosine threshold; null: the embedder's recommended one (mpnet: 0.63)",
    )
    linkage: Linkage = "leader"
    denominator: Denominator = "lists"
    alpha: float = Field(default=0.05, gt=0, lt=1)
    keep_by: Literal["p", "p_bh"] = "p"
    yates: bool = True
    max_case_links: int = Field(default=20, ge=0)

    def effective_threshold(self) -> float:
        if self.threshold is not None:
            return self.threshold
        return RECOMMENDED_THRESHOLDS.get(self.embedder, 0.63)


@dataclass(frozen=True)
class Observation:
    """One character's concept list in one story."""

    case_id: str
    group: GroupKey
    identity: str
    concepts: tuple[str, ...]


def observations(verdicts: Iterable[tuple[str, str, dict[str, Any]]]) -> Iterator[Observation]:
    """Observations from (case id, outcome, evidence) of ``badf.story`` verdicts (HELD only)."""
    for case_id, outcome, evidence in verdicts:
        if outcome != "HELD":
            continue
        group = (evidence["arm"], evidence["identity_category"], evidence["location_category"])
        for character in evidence.get("characters", []):
            yield Observation(
                case_id, group, character["identity"], tuple(character.get("concepts", []))
            )


@dataclass(frozen=True)
class Analysis:
    settings: AnalysisSettings
    unification: Unification
    candidates: list[Candidate]
    tests: int  # concept tests that could run
    groups: int
    lists: int


def analyse(
    found: Iterable[Observation], settings: AnalysisSettings, embedder: Embedder | None = None
) -> Analysis:
    obs = list(found)
    phrase_counts = Counter(p for o in obs for p in o.concepts)
    embedder = embedder or embedder_for(settings.embedder, **settings.embedder_options)
    unification = unify(
        phrase_counts, embedder, settings.effective_threshold(), linkage=settings.linkage
    )
    groups: dict[GroupKey, dict[str, list[ConceptList]]] = {}
    for o in obs:
        concepts = frozenset(unification.concept(p) for p in o.concepts)
        groups.setdefault(o.group, {}).setdefault(o.identity, []).append(
            ConceptList(o.case_id, concepts, len(o.concepts))
        )
    rows: list[tuple[GroupKey, Any, dict[str, list[ConceptList]]]] = []
    for key in sorted(groups):
        for test in tested_concepts(
            groups[key], denominator=settings.denominator, yates=settings.yates
        ):
            rows.append((key, test, groups[key]))
    adjusted, _ = fdr_adjust([t.p for _, t, _ in rows], alpha=settings.alpha)
    candidates = []
    for (key, test, by_identity), p_bh in zip(rows, adjusted, strict=True):
        p_keep = test.p if settings.keep_by == "p" else p_bh
        for identity in sorted(test.scores):
            score = test.score(identity)
            if not is_kept(score, p_keep, settings.alpha):
                continue
            cases = sorted(
                {cl.case_id for cl in by_identity[identity] if test.concept in cl.concepts}
            )
            arm, identity_category, location_category = key
            candidates.append(
                Candidate(
                    arm=arm,
                    identity_category=identity_category,
                    location_category=location_category,
                    identity=identity,
                    concept=test.concept,
                    members=list(unification.members.get(test.concept, (test.concept,))),
                    score=round(score, 6),
                    a=test.present[identity],
                    n=test.lists[identity],
                    p=test.p,
                    p_bh=p_bh,
                    cases=cases[: settings.max_case_links],
                )
            )
    tests = sum(1 for _, t, _ in rows if not math.isnan(t.p))
    return Analysis(settings, unification, candidates, tests, len(groups), len(obs))
