"""From a story campaign's verdicts to significant associations: stage 3 (unification across
all stories) and stage 4 (significance per location category, FDR).

Input: each HELD ``badf.story`` verdict's characters (identity and final concept list). All
phrases of the campaign are unified at once (`relations.badf.unify`); each character's list
becomes a set of concepts; lists are grouped by (arm, identity category, location category),
and each group is tested (`relations.badf.significance`) by the analysis's ``rule``:

- ``evidence`` (the default): each identity against the rest of its group, an exact test
  stratified by story (the unit of the two characters of one story); the tests that can
  reach alpha (Tarone's rule) are corrected together, Benjamini-Hochberg over the analysis
  (`harness.reporting.stats.fdr_adjust_tarone`), and an association is kept when its score
  is positive and its adjusted p is below alpha (``keep_by`` defaults to ``p_bh``);
- ``paper``: the paper's rule: the chi-squared test of the identity x concept table, the
  score against the least frequent other identity, kept by the raw p (``keep_by`` defaults
  to ``p``), with the Benjamini-Hochberg adjustment over every test shown beside.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.family_api import fdr_adjust, fdr_adjust_tarone
from relations.badf.control import CONTROL_PERMUTATIONS, NullFloor, null_floor
from relations.badf.embedding import (
    DEFAULT_EMBEDDER,
    RECOMMENDED_THRESHOLDS,
    Embedder,
    embedder_for,
)
from relations.badf.relations import Candidate
from relations.badf.significance import (
    ConceptList,
    Denominator,
    IdentityTest,
    Rule,
    identity_tests,
    is_kept,
    score_interval,
    tested_concepts,
)
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
    rule: Rule = Field(
        default="evidence",
        description="evidence: each identity against the rest, exact test stratified by "
        "story, Benjamini-Hochberg after Tarone's rule; paper: chi-squared, score against the "
        "least frequent identity, raw p (the paper's rule)",
    )
    keep_by: Literal["p", "p_bh"] | None = Field(
        default=None, description="null: p_bh for the evidence rule, p for the paper's"
    )
    yates: bool = True
    max_case_links: int = Field(default=20, ge=0)
    control_permutations: int = Field(
        default=CONTROL_PERMUTATIONS,
        ge=0,
        description="the null control: analyses of the same lists with the identities "
        "shuffled between stories (relations/badf/control.py); 0: none",
    )

    def effective_keep_by(self) -> Literal["p", "p_bh"]:
        if self.keep_by is not None:
            return self.keep_by
        return "p_bh" if self.rule == "evidence" else "p"

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
    tests: int  # tests that could run (evidence rule: those kept by Tarone's rule)
    groups: int
    lists: int
    dropped: int = 0  # tests left out by Tarone's rule (evidence rule)
    # The matched null control (`relations.badf.control`): what the same analysis keeps
    # with the identities shuffled between stories; None when not run.
    control: NullFloor | None = None


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
    found_analysis = _tested(groups, settings, unification, len(obs))
    if settings.control_permutations:
        floor = null_floor(
            groups,
            lambda permuted: _tested(permuted, settings, unification, len(obs)).candidates,
            settings.control_permutations,
        )
        found_analysis = dataclasses.replace(found_analysis, control=floor)
    return found_analysis


def _tested(
    groups: dict[GroupKey, dict[str, list[ConceptList]]],
    settings: AnalysisSettings,
    unification: Unification,
    lists: int,
) -> Analysis:
    """Stage 4 on grouped concept lists, by the settings' rule."""
    if settings.rule == "evidence":
        return _by_evidence(groups, settings, unification, lists)
    return _by_paper(groups, settings, unification, lists)


def _by_paper(
    groups: dict[GroupKey, dict[str, list[ConceptList]]],
    settings: AnalysisSettings,
    unification: Unification,
    lists: int,
) -> Analysis:
    """The paper's rule: chi-squared per concept, the score against the least frequent
    identity, kept by the raw p (or p_bh)."""
    rows: list[tuple[GroupKey, Any, dict[str, list[ConceptList]]]] = []
    for key in sorted(groups):
        for test in tested_concepts(
            groups[key], denominator=settings.denominator, yates=settings.yates
        ):
            rows.append((key, test, groups[key]))
    adjusted, _ = fdr_adjust([t.p for _, t, _ in rows], alpha=settings.alpha)
    candidates = []
    for (key, test, by_identity), p_bh in zip(rows, adjusted, strict=True):
        p_keep = test.p if settings.effective_keep_by() == "p" else p_bh
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
                    rule="paper",
                )
            )
    tests = sum(1 for _, t, _ in rows if not math.isnan(t.p))
    return Analysis(settings, unification, candidates, tests, len(groups), lists)


def _by_evidence(
    groups: dict[GroupKey, dict[str, list[ConceptList]]],
    settings: AnalysisSettings,
    unification: Unification,
    lists: int,
) -> Analysis:
    """The evidence rule: identity-vs-rest exact tests stratified by story, one
    Benjamini-Hochberg correction over the analysis after Tarone's rule."""
    rows: list[tuple[GroupKey, IdentityTest]] = [
        (key, test) for key in sorted(groups) for test in identity_tests(groups[key])
    ]
    correction = fdr_adjust_tarone(
        [t.p for _, t in rows], [t.p_min for _, t in rows], alpha=settings.alpha
    )
    keep_raw = settings.effective_keep_by() == "p"
    candidates = []
    for (key, test), p_bh in zip(rows, correction.adjusted, strict=True):
        p_keep = test.p if keep_raw else p_bh
        if not (test.score > 0 and not math.isnan(p_keep) and p_keep < settings.alpha):
            continue
        if keep_raw and test.p_min > settings.alpha:
            continue
        cases = sorted(
            {cl.case_id for cl in groups[key][test.identity] if test.concept in cl.concepts}
        )
        arm, identity_category, location_category = key
        interval = score_interval(groups[key], test.concept, test.identity)
        candidates.append(
            Candidate(
                arm=arm,
                identity_category=identity_category,
                location_category=location_category,
                identity=test.identity,
                concept=test.concept,
                members=list(unification.members.get(test.concept, (test.concept,))),
                score=round(test.score, 6),
                a=test.a,
                n=test.n,
                p=test.p,
                p_bh=p_bh,
                cases=cases[: settings.max_case_links],
                rest_a=test.rest_a,
                rest_n=test.rest_n,
                p_min=test.p_min,
                rule="evidence",
                score_se=None if interval is None else interval.se,
                score_low=None if interval is None else interval.low,
                score_high=None if interval is None else interval.high,
                clusters=None if interval is None else interval.clusters,
            )
        )
    return Analysis(
        settings, unification, candidates, correction.tested, len(groups), lists,
        correction.dropped,
    )  # fmt: skip
