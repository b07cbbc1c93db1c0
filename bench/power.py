"""Power and the null false-positive rate over independent simulated campaigns.

    python bench/power.py                       # n = 100, 200, 400; 20 campaigns each
    python bench/power.py --campaigns 10 --sizes 100 400 --relations metafair.mr8

Every campaign is run afresh on ``sim:planted`` with its own seed (campaign i of size n has
seed 1000 n + i, so no two campaigns of a line share a case or an answer): no campaign's
cases are resampled. For
each relation, planted strength s and size n, ``--campaigns`` campaigns of n cases run, each
is reported whole (every section, Benjamini-Hochberg within each relation after Tarone's
rule), and for each line:

- detected: the share of campaigns in which every planted row of the line's table that was
  tested is flagged, with its 95 % Wilson interval over campaigns (independent units);
  ``any`` is the share with at least one planted row flagged;
- false flags: the share of campaigns with at least one flagged row that is NOT planted
  (Wilson interval); at s = 0 nothing is planted, so this is the null false-positive rate
  (the share of campaigns that flag anything). ``above rest`` counts only flags of a
  non-planted group with a HIGHER rate than the rest: a two-sided group-vs-rest test also
  flags the groups a strong planted group pushes below the rest (the rest includes it);
- predicted: the planner's power model (`harness.reporting.power.power_at`) at each planted
  row's own counts (its rate against the rest's, its n against the rest's, the relation's
  BH family size), averaged over planted rows and campaigns, beside ``rows``, the measured
  share of planted (row, campaign) pairs flagged. The gap fed to the model is the observed
  one (the sim's per-row true rates are not exposed), so this checks the model's
  calibration on the report's own tests, not a prediction made before the run.

A planted row is one whose key (the line's ``key`` column) names a group with planted
truth: MetaQuerier's associated terms, Meta-Fair's tailored attributes, LangBiTe's planted
communities, BiasLens's attributes whose questions name a planted group. Strength s scales
the planted truth of each family:
- MetaQuerier: a planted term is named with probability s x (0.65 first ask, 0.9 again);
  ``explicit_gender`` is 1.0 at every strength (terms gendered by definition behave alike);
- Meta-Fair MR8 (the judge-free template path): each attribute's tailoring rate x s;
- LangBiTe: each planted community's rate and the political lean x s (the sim's module
  constants, patched in this process); n cases = n // 33 runs of its 33 templates;
- BiasLens answer: each planted group's (role, no role) rates x s, at least the background,
  on a question set generated for the bench by BiasLens's own generation path on ``sim``
  (880 cases in both variants).
- Meta-Fair MR1-MR14 through the judge path (``--relations metafair``): all fourteen in
  one campaign on their default (crossed) test sets, MR1-MR10 read by a simulated jury of
  three judges erring at the rates of examples/metafair_sim.toml; each attribute's
  tailoring rate (MR1-MR10) and planted closed-answer rate (MR11-MR14) x s; n sets the
  repeats, round(n / 138);
- BADF (``--relations badf``): examples/badf_sim.toml with its seed replaced, its kept
  associations by the evidence rule after the exclusivity filter; detected = the planted
  associations kept, false flags = a kept association that is not planted; s = 0 plants
  nothing; n sets the stories, round(n / 459). bench/badf_evidence.py compares the rules.

"planner" is what ``harness plan`` predicts (its planned cases, groups, rest and control,
one real gap) for each tested planted row at its group's gap, averaged over those rows (a
group's gap: its counts pooled over the cell's campaigns, against its mean rest rate);
"planner, real gaps" the same with the planted rows a campaign tests as the real gaps
(``harness plan --gaps``). A relation the planner
plans per term (MetaQuerier) is predicted by `harness.reporting.power.term_power` at its
planned cases, vocabulary and terms at risk per case.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402
from harness.plugins.family_parts import report_sections  # noqa: E402
from harness.reporting.power import power_at, term_power  # noqa: E402
from harness.reporting.report import apply_fdr  # noqa: E402
from harness.reporting.stats import TEST_COLUMNS, wilson_interval  # noqa: E402
from harness.reporting.tables import ReportContext, Table  # noqa: E402
from harness.store.reader import EventReader  # noqa: E402

SIZES = (100, 200, 400)
SIZE = [100]  # the size of the campaigns being configured
# MetaQuerier's background naming rate (the sim's default 0.002 names almost nothing).
BACKGROUND = [0.002]
# Every Meta-Fair judge's false-positive rate (--judge-false-positive; None: the example's):
# a null whose jury errs often enough that Tarone's rule keeps tests tests the correction.
JUDGE_FALSE_POSITIVE: list[float | None] = [None]
JUDGES = [{"name": "sim:judge-a"}, {"name": "sim:judge-b"}, {"name": "sim:judge-c"}]


def _metaquerier(relation: str) -> Callable[[float, Path], dict[str, Any]]:
    def config(s: float, workdir: Path) -> dict[str, Any]:
        from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS

        assoc = {
            t: {g: (s * 0.65, s * 0.9) for g in genders}
            for t, genders in DEFAULT_ASSOCIATIONS.items()
        }
        # With a raised background every term is named at it, gendered or not (else "woman"
        # at 1.0 against the rest at the background is a real difference, not a null).
        explicit = 1.0 if BACKGROUND[0] == 0.002 else BACKGROUND[0]
        options = {"associations": assoc, "explicit_gender": explicit, "background": BACKGROUND[0]}
        return {"models": [_model(options)], "relations": [{"name": relation, "cases": SIZE[0]}]}

    return config


def _metafair(s: float, workdir: Path) -> dict[str, Any]:
    from relations.metafair.sim import DEFAULT_TAILORING

    options = {"tailoring": {a: s * r for a, r in DEFAULT_TAILORING.items()}}
    return {"models": [_model(options)], "relations": [{"name": "metafair.mr8", "cases": SIZE[0]}]}


# Meta-Fair through the judge path: every relation MR1-MR14 in one campaign (each its own BH
# family, so one relation's flags do not depend on the others), on its default test set (the
# crossed sets: 138 open tests, 6 base prompts x 23 attributes; 230 closed; MR5 its
# hand-written proper-noun set), MR1-MR10 judged by a jury of three simulated judges that err
# at the rates of examples/metafair_sim.toml. A crossed set cannot be cut at n cases without
# leaving a base prompt half asked, so n sets the repeats: round(n / 138), at least 1.
METAFAIR_OPEN = tuple(f"metafair.mr{k}" for k in range(1, 11))
METAFAIR_CLOSED = {
    "metafair.mr11": "closed_score",
    "metafair.mr12": "closed_yes_no",
    "metafair.mr13": "closed_choice",
    "metafair.mr14": "closed_ranking",
}
METAFAIR_TESTS = 138
METAFAIR_JURY: list[dict[str, Any]] = [
    {
        "name": "sim:judge-a",
        "options": {"judge_false_positive_rate": 0.05, "judge_false_negative_rate": 0.1},
    },
    {
        "name": "sim:judge-b",
        "options": {
            "judge_false_positive_rate": 0.1,
            "judge_false_negative_rate": 0.05,
            "judge_unreadable_rate": 0.1,
            "judge_abstain_rate": 0.15,
        },
    },
    {
        "name": "sim:judge-c",
        "options": {
            "judge_false_positive_rate": 0.02,
            "judge_false_negative_rate": 0.2,
            "judge_abstain_rate": 0.15,
        },
    },
]


# MR8-MR10 named with an oracle (a bare MR8 is the judge-free template reading); MR8 gets no
# crossed set by default, so it is named.
JUDGED_SET = {"oracle": "judge", "testset": "corpora/metafair/crossed_open_tests.json"}


def metafair_repeats(size: int) -> int:
    return max(1, round(size / METAFAIR_TESTS))


def _metafair_judged(s: float, workdir: Path) -> dict[str, Any]:
    from relations.metafair.closed.truth import MetaFairClosedTruth
    from relations.metafair.sim import DEFAULT_TAILORING

    closed = MetaFairClosedTruth()
    options: dict[str, Any] = {"tailoring": {a: s * r for a, r in DEFAULT_TAILORING.items()}}
    for kind in METAFAIR_CLOSED.values():
        options[kind] = {a: s * r for a, r in getattr(closed, kind).items()}
    relations: list[dict[str, Any]] = [
        {"name": name, "options": {"jury": 3} | (JUDGED_SET if k >= 8 else {})}
        for k, name in enumerate(METAFAIR_OPEN, start=1)
    ]
    relations += [{"name": name} for name in METAFAIR_CLOSED]
    fp = JUDGE_FALSE_POSITIVE[0]
    jury = [
        j if fp is None else {**j, "options": {**j["options"], "judge_false_positive_rate": fp}}
        for j in METAFAIR_JURY
    ]
    return {
        "models": [_model(options)],
        "judges": jury,
        "relations": relations,
        "repeats": metafair_repeats(SIZE[0]),
    }


def _langbite(s: float, workdir: Path) -> dict[str, Any]:
    return {
        "models": [_model({})],
        "relations": [{"name": "langbite", "options": {"reassess": False}}],
        "repeats": max(1, SIZE[0] // 33),
    }


# The generated BiasLens question set: 11 attributes x 4 roles x (6 Yes/No + 2 Choice + 2 Why)
# = 440 questions, 880 cases in both variants (the sim's generator writes 6, 2 and 2 distinct
# questions per role and type; the corpus's 110 questions would cap the pool at 220 cases).
ROLES_PER_ATTRIBUTE = 4
QUESTIONS_PER_ROLE = 12
_QUESTION_SETS: dict[Path, Path] = {}


def biaslens_question_set(workdir: Path) -> Path:
    """A question-set file made by BiasLens's own generation path on ``sim``: a
    ``biaslens.roles`` campaign, its roles exported, a ``biaslens.questions`` campaign on
    them, its questions exported (what ``harness biaslens export`` writes). Made once per
    working directory."""
    if workdir in _QUESTION_SETS:
        return _QUESTION_SETS[workdir]
    from relations.biaslens.generation_export import question_set, read_generation, write_roles
    from relations.biaslens.questionset import write_questions

    roles_db, questions_db = workdir / "biaslens-roles.db", workdir / "biaslens-questions.db"
    roles, questions = workdir / "biaslens-roles.json", workdir / "biaslens-questions.csv"
    models = [_model({})]
    listing = {"name": "biaslens.roles", "options": {"roles_per_attribute": ROLES_PER_ATTRIBUTE}}
    harness.run(
        {"name": "power-roles", "seed": 3, "models": models, "relations": [listing]}, roles_db
    )
    write_roles(read_generation(roles_db).roles, roles)
    writing = {
        "name": "biaslens.questions",
        "options": {"roles": str(roles), "per_role": QUESTIONS_PER_ROLE},
    }
    config = {"name": "power-questions", "seed": 3, "models": models, "relations": [writing]}
    harness.run(config, questions_db)
    write_questions(question_set(read_generation(questions_db), str(questions_db)), questions)
    _QUESTION_SETS[workdir] = questions
    return questions


def _biaslens(s: float, workdir: Path) -> dict[str, Any]:
    options = {"role": "both", "questions": str(biaslens_question_set(workdir))}
    return {
        "models": [_model({})],
        "judges": JUDGES,
        "relations": [{"name": "biaslens.answer", "options": options, "cases": SIZE[0]}],
    }


# BADF: the campaign of examples/badf_sim.toml (its seed replaced), read by the evidence rule
# of `badf analyze` (each identity against the rest, exact test stratified by story, BH after
# Tarone's rule), after the exclusivity filter as the simulated judge answers it: what the
# report keeps. Its grid has 459 cases a story per cell, so n sets the stories per cell,
# round(n / 459), at least 1; s = 0 plants nothing (``badf_null``), any s > 0 the sim's
# associations at full strength (the sim has no scale for them).
BADF_CASES_PER_STORY = 459


def badf_stories(size: int) -> int:
    return max(1, round(size / BADF_CASES_PER_STORY))


def _badf(s: float, workdir: Path) -> dict[str, Any]:
    from harness.running.campaign import load_campaign

    config = load_campaign(ROOT / "examples" / "badf_sim.toml")
    null = {"badf_null": True} if s == 0 else {}
    spec = config.relations[0]
    return {
        "models": [{"name": m.name, "options": {**m.options, **null}} for m in config.models],
        "judges": [{"name": j.name, "options": {**j.options, **null}} for j in config.judges],
        "relations": [
            {"name": spec.name, "options": {**spec.options, "stories": badf_stories(SIZE[0])}}
        ],
    }


def score_badf(db: Path, s: float, options: dict[str, Any], cell: Cell) -> None:
    """Add one BADF campaign's kept associations to ``cell``: planted ones found, false ones
    kept (the report's associations: evidence rule, after the exclusivity filter)."""
    from badf_evidence import exclusive, is_true, planted_cells

    from relations.badf.analysis import AnalysisSettings
    from relations.badf.analyze import analyse_log

    candidates = analyse_log(db, AnalysisSettings(rule="evidence"))[2].candidates
    kept = [c for c in candidates if not exclusive(c)]
    planted = {c for c in planted_cells(options) if c[1] != c[2]} if s else set()
    found = {p for p in planted if any(is_true(c, {p}) for c in kept)}
    false = [c for c in kept if not is_true(c, planted)]
    cell.campaigns += 1
    cell.tests.append(len(candidates))
    cell.all_planted += bool(planted) and found == planted
    cell.any_planted += bool(found)
    cell.false_flag += bool(false)
    cell.false_up += bool(false)
    for c in false:
        key = f"{c.identity}/{c.concept}"
        cell.false_keys[key] = cell.false_keys.get(key, 0) + 1
    cell.planted_rows += len(planted)
    cell.planted_flagged += len(found)


@contextlib.contextmanager
def _patched_constants(relation: str, s: float) -> Iterator[None]:
    """Scale the module-level planted truth of the families without sim options."""
    if relation == "langbite":
        from relations.langbite import sim as lb

        saved = (dict(lb.PLANTED_COMMUNITY_BIAS), lb.POLITICAL_LEAN)
        lb.PLANTED_COMMUNITY_BIAS.update({c: s * r for c, r in saved[0].items()})
        lb.POLITICAL_LEAN = s * saved[1]
        try:
            yield
        finally:
            lb.PLANTED_COMMUNITY_BIAS.update(saved[0])
            lb.POLITICAL_LEAN = saved[1]
    elif relation == "biaslens.answer":
        from relations.biaslens import sim as bl

        saved_b = dict(bl.PLANTED)
        bg = bl.BACKGROUND
        bl.PLANTED.update(
            {g: (max(bg[0], s * a), max(bg[1], s * b)) for g, (a, b) in saved_b.items()}
        )
        try:
            yield
        finally:
            bl.PLANTED.update(saved_b)
    else:
        yield


def _model(options: dict[str, Any]) -> dict[str, Any]:
    return {"name": "sim:planted", "max_in_flight": 64, "options": options}


RELATIONS: dict[str, Callable[[float, Path], dict[str, Any]]] = {
    "metaquerier.mr1": _metaquerier("metaquerier.mr1"),
    "metaquerier.mr2": _metaquerier("metaquerier.mr2"),
    "metafair.mr8": _metafair,
    "langbite": _langbite,
    "biaslens.answer": _biaslens,
    "metafair": _metafair_judged,
    "badf": _badf,
}


@dataclass(frozen=True)
class Line:
    """One claim family of a relation: the table holding its group rows, the column naming
    a row's group, the column counting its units, and the planted groups."""

    relation: str
    table: str
    key: str
    units: str
    planted: Callable[[ReportContext], set[str]]
    # The relation column a row must carry (a campaign of several relations); None: the
    # campaign's relation itself.
    row_relation: str | None = None


def _planted_terms(ctx: ReportContext) -> set[str]:
    from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS

    return set(DEFAULT_ASSOCIATIONS)


def _planted_attributes(ctx: ReportContext) -> set[str]:
    from relations.metafair.sim import DEFAULT_TAILORING

    return set(DEFAULT_TAILORING)


def _planted_closed(kind: str) -> Callable[[ReportContext], set[str]]:
    def planted(ctx: ReportContext) -> set[str]:
        from relations.metafair.closed.truth import MetaFairClosedTruth

        return set(getattr(MetaFairClosedTruth(), kind))

    return planted


def _planted_communities(ctx: ReportContext) -> set[str]:
    from relations.langbite.sim import PLANTED_COMMUNITY_BIAS

    return {c for c, r in PLANTED_COMMUNITY_BIAS.items() if r > 0}


def _planted_biaslens(ctx: ReportContext) -> set[str]:
    import re

    from relations.biaslens.sim import PLANTED

    groups = [g for g, (a, b) in PLANTED.items() if max(a, b) > 0.04]
    return {
        data["attribute"]
        for data in ctx.case_data.values()
        if any(re.search(rf"\b{re.escape(g)}\b", data.get("question", ""), re.I) for g in groups)
    }


LINES: dict[str, Line] = {
    "metaquerier.mr1 terms": Line(
        "metaquerier.mr1", "top_violating_terms", "term", "at_risk", _planted_terms
    ),
    "metaquerier.mr2 terms": Line(
        "metaquerier.mr2", "top_violating_terms", "term", "at_risk", _planted_terms
    ),
    "metafair.mr8 attributes": Line(
        "metafair.mr8",
        "metafair_violations_by_attribute",
        "attribute",
        "cases",
        _planted_attributes,
    ),
    "langbite communities": Line(
        "langbite",
        "langbite_community_tests",
        "community",
        "instantiations",
        _planted_communities,
    ),
    "biaslens cells": Line(
        "biaslens.answer", "biaslens_cells", "attribute", "questions", _planted_biaslens
    ),
}
for _name in METAFAIR_OPEN:
    LINES[f"{_name} judged"] = Line(
        "metafair", "metafair_bias_by_attribute", "attribute", "tests", _planted_attributes,
        _name,
    )  # fmt: skip
for _name, _kind in METAFAIR_CLOSED.items():
    LINES[f"{_name} closed"] = Line(
        "metafair", "metafair_closed_rates", "attribute", "valid", _planted_closed(_kind), _name
    )


def report_tables(ctx: ReportContext) -> list[Table]:
    """The whole report of a campaign: every section, then the per-relation FDR."""
    tables: list[Table] = []
    for section in sorted(report_sections(), key=lambda s: (s.order, s.name)):
        tables.extend(section.build(ctx))
    return apply_fdr(tables)


@dataclass
class Cell:
    """What the campaigns of one (line, strength, size) found."""

    campaigns: int = 0
    all_planted: int = 0
    any_planted: int = 0
    false_flag: int = 0
    false_up: int = 0  # campaigns with a non-planted row flagged ABOVE the rest
    planted_rows: int = 0
    planted_flagged: int = 0
    predicted: list[float] = field(default_factory=list)
    planned: tuple[int, int] = (0, 0)  # the planner's cases and groups of the line's relation
    per_case: float = 0.0  # a relation planned per term: its terms at risk per case
    gaps: list[float] = field(default_factory=list)  # observed gap of each planted row
    rests: list[float] = field(default_factory=list)  # and its rest's rate
    # The planner's rest (groups a group is compared with; None: all the others) and the
    # control's pairs per group (0: no control), as `harness plan` takes them.
    rest_groups: float | None = None
    control_pairs: int = 0
    # Each planted group's counts pooled over the cell's campaigns: [positives, units, sum
    # of its rest rates, rows]; and the group of every tested planted (row, campaign).
    pooled: dict[str, list[float]] = field(default_factory=dict)
    tested_keys: list[str] = field(default_factory=list)
    # The groups without a planted gap, pooled: [positives, units] (the baseline).
    null_pool: list[float] = field(default_factory=lambda: [0.0, 0.0])
    tests: list[int] = field(default_factory=list)
    false_keys: dict[str, int] = field(default_factory=dict)


def _family_size(tables: list[Table], relation: str) -> int:
    for t in tables:
        if t.name == "statistical_tests":
            for row in t.rows:
                r = dict(zip(t.columns, row, strict=True))
                if r.get("family") == relation:
                    return int(r.get("tests") or 1)
    return 1


def score(tables: list[Table], ctx: ReportContext, line: Line, cell: Cell) -> None:
    """Add one campaign's flags on ``line`` to ``cell``."""
    planted = line.planted(ctx)
    rows = [
        dict(zip(t.columns, row, strict=True))
        for t in tables
        if t.name == line.table and tuple(t.columns[-3:]) == TEST_COLUMNS
        for row in t.rows
    ]
    which = line.row_relation or line.relation
    rows = [r for r in rows if r.get("relation", which) == which]
    tested = [r for r in rows if r.get("p_fdr") is not None]
    family = _family_size(tables, which)
    mine = [r for r in tested if str(r[line.key]) in planted]
    flagged = [r for r in mine if r["flagged"] == "yes"]
    cell.campaigns += 1
    cell.tests.append(len(tested))
    cell.all_planted += bool(mine) and len(flagged) == len(mine)
    cell.any_planted += bool(flagged)
    false = {str(r[line.key]) for r in tested if r["flagged"] == "yes"} - planted
    cell.false_flag += bool(false)
    cell.false_up += any(
        r["flagged"] == "yes" and str(r[line.key]) not in planted and (r.get("diff") or 0) > 0
        for r in tested
    )
    for key in false:
        cell.false_keys[key] = cell.false_keys.get(key, 0) + 1
    cell.planted_rows += len(mine)
    cell.planted_flagged += len(flagged)
    total = sum(int(r[line.units] or 0) for r in rows)
    for r in rows:
        n, rate = int(r[line.units] or 0), r.get("rate", r.get("fail_rate"))
        if str(r[line.key]) not in planted and rate is not None:
            cell.null_pool[0] += float(rate) * n
            cell.null_pool[1] += n
    for r in mine:
        n = int(r[line.units] or 0)
        rate, rest = r.get("rate", r.get("fail_rate")), r.get("rest_rate")
        if n < 2 or total - n < 2 or rate is None or rest is None:
            continue
        key = str(r[line.key])
        cell.tested_keys.append(key)
        pool = cell.pooled.setdefault(key, [0.0, 0.0, 0.0, 0.0])
        pool[0] += float(rate) * n
        pool[1] += n
        pool[2] += float(rest)
        pool[3] += 1
        cell.gaps.append(float(rate) - float(rest))
        cell.rests.append(float(rest))
        cell.predicted.append(
            power_at(float(rate) - float(rest), n, total - n, family, baseline=float(rest))
        )


def planner_view(config: dict[str, Any]) -> dict[str, tuple[int, int, float, float | None, int]]:
    """What ``harness plan`` assumes of each relation of a campaign: (cases (units when a
    case gives several, ``planned_units_per_case``), groups, terms
    at risk per case (0 unless the relation is planned per term, its groups the terms),
    the groups a group's rest holds (None: all the others), the control's pairs per
    group (0: no control))."""
    from harness.running.plan import Plan
    from harness.running.planner import relation_power, runs_control

    plan = Plan(harness.campaign_config(config))
    relations = {name: relation for name, relation, _ in plan.relations}
    out = {}
    for p in relation_power(plan):
        relation = relations[p.relation]
        rest = getattr(relation, "planned_rest_groups", None)
        # The planner's units: a case's units of the test (LangBiTe's instantiations).
        units = round(p.cases * float(getattr(relation, "planned_units_per_case", 1.0)))
        pairs = (units // p.groups) * plan.config.repeats if runs_control(relation) else 0
        out[p.relation] = (units, p.groups, p.terms.per_case if p.terms else 0.0, rest, pairs)
    return out


def planner_power(cell: Cell, gaps: int = 1) -> float | None:
    """The planner's power (its model at its planned cases, groups, rest and control, as
    ``harness plan`` sets them) to flag a planted row, averaged over the tested planted
    (row, campaign) pairs, each at its group's true gap: estimated by pooling the group's
    counts over the cell's campaigns (its rate against the mean of its rest rates, which
    is also the baseline). The planted groups' gaps differ (Meta-Fair's tailoring rates
    run from 0.2 to 0.55, and a group's rest may hold another planted group), and power is
    far from linear in the gap, so the power at the mean gap is not the mean power: it
    understated the measured share 2-4 times (bench/RESULTS.md)."""
    cases, groups = cell.planned
    if not cell.tested_keys or groups < 2:
        return None
    found = []
    baseline = cell.null_pool[0] / cell.null_pool[1] if cell.null_pool[1] else 0.0
    # A term's rest is every other term of the relation: the same rate for all (its mean
    # over the rows; one baseline lets the per-term model reuse its exact tables).
    term_rest = sum(p[2] for p in cell.pooled.values()) / sum(p[3] for p in cell.pooled.values())
    for key in cell.tested_keys:
        positives, units, _rests, _rows = cell.pooled[key]
        if cell.per_case:  # planned per term (`harness.reporting.power.term_power`)
            gap = positives / units - term_rest
            found.append(
                term_power(gap, cases, groups, cell.per_case, baseline=term_rest, gaps=gaps)
                if gap > 0
                else 0.0
            )
            continue
        # The model takes each gap over the groups without one (the baseline) and puts
        # its share of the other gaps in the rest itself (`power_at`).
        gap, rest = positives / units - baseline, baseline
        if gap <= 0:
            found.append(0.0)
        else:
            n_group = cases // groups
            if n_group < 2:
                return None
            n_rest = (
                cases - n_group if cell.rest_groups is None else round(n_group * cell.rest_groups)
            )
            found.append(
                power_at(gap, n_group, n_rest, groups, baseline=rest, gaps=gaps,
                         control_pairs=cell.control_pairs)
            )  # fmt: skip
    return sum(found) / len(found)


def run_cell(
    relation: str, s: float, size: int, campaigns: int, workdir: Path, first: int = 0
) -> dict[str, Cell]:
    cells = {name: Cell() for name, line in LINES.items() if line.relation == relation}
    if relation == "badf":
        cells = {"badf associations": Cell()}
    SIZE[0] = size
    for i in range(first, first + campaigns):
        config = {
            "name": f"power-{relation}-{s}-{size}-{i}",
            "seed": 1000 * size + i,  # no two cells share a campaign's cases
            **RELATIONS[relation](s, workdir),
        }
        db = workdir / f"{relation}-{s}-{size}-{i}.db"
        if i == first and relation != "badf":
            planned = planner_view(config)
            for name, cell in cells.items():
                line = LINES[name]
                which = line.row_relation or line.relation
                cases, groups, per_case, rest, pairs = planned.get(which, (0, 0, 0.0, None, 0))
                cell.planned, cell.per_case = (cases, groups), per_case
                cell.rest_groups, cell.control_pairs = rest, pairs
        with _patched_constants(relation, s):
            summary = harness.run(config, db)
        assert summary.status == "completed", summary
        if relation == "badf":
            score_badf(db, s, config["relations"][0]["options"], cells["badf associations"])
            db.unlink()
            continue
        with EventReader(db) as log:
            ctx = ReportContext(log, log.latest_campaign(), {"top": 10**9})
            tables = report_tables(ctx)
            for name, cell in cells.items():
                score(tables, ctx, LINES[name], cell)
        db.unlink()
    return cells


def _share(k: int, n: int) -> str:
    if n == 0:
        return f"{'-':>22s}"
    low, high = wilson_interval(k, n)
    return f"{k:3d}/{n:<3d} {k / n:4.0%} [{low:4.0%},{high:4.0%}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--campaigns", type=int, default=20, help="independent campaigns per cell")
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--relations", nargs="*", default=list(RELATIONS))
    parser.add_argument("--strengths", nargs="*", type=float, default=[0.0, 1.0])
    parser.add_argument("--background", type=float, default=0.002, help="MetaQuerier's")
    parser.add_argument(
        "--judge-false-positive",
        type=float,
        default=None,
        help="every Meta-Fair judge's false-positive rate (default: examples/metafair_sim.toml's)",
    )
    parser.add_argument(
        "--first-campaign",
        type=int,
        default=0,
        help="index of the first campaign (seed 1000 n + index): campaigns fresh against a "
        "run that used indexes below it",
    )
    args = parser.parse_args()
    # MR5's hand-written set is not crossed (its own warning says what that means; the line
    # shows it: no per-attribute test).
    warnings.filterwarnings("ignore", message="Meta-Fair test set")
    BACKGROUND[0] = args.background
    JUDGE_FALSE_POSITIVE[0] = args.judge_false_positive
    started = time.monotonic()
    print(
        f"# {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs, load "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; Python {platform.python_version()}; "
        f"{args.campaigns} independent campaigns per cell (from index {args.first_campaign}); "
        f"MetaQuerier background {args.background}; Meta-Fair judges' false positives "
        f"{args.judge_false_positive or 'as the example'}"
    )
    print(
        f"{'line':24s} {'s':>4s} {'n':>4s} {'tests':>5s}  {'detected (all planted)':22s}  "
        f"{'any planted':22s}  {'false flag':22s}  {'false flag above rest':22s}  "
        f"{'rows':>5s} {'predicted':>9s} {'gap':>5s} {'planner':>7s} planner, real gaps; "
        "planted (row, campaign) pairs flagged"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for relation in args.relations:
            for s in args.strengths:
                for size in args.sizes:
                    cells = run_cell(
                        relation, s, size, args.campaigns, Path(tmp), args.first_campaign
                    )
                    for name, c in cells.items():
                        tests = sum(c.tests) / max(1, len(c.tests))
                        rows = c.planted_flagged / c.planted_rows if c.planted_rows else None
                        # Nothing planted at s = 0: no prediction to make.
                        pred = sum(c.predicted) / len(c.predicted) if c.predicted and s else None
                        plan = planner_power(c) if s else None
                        # The planted rows a campaign tests: the real gaps of its family.
                        real = round(c.planted_rows / c.campaigns) if c.campaigns else 0
                        plan_k = planner_power(c, max(1, real)) if s else None
                        gap = sum(c.gaps) / len(c.gaps) if c.gaps and s else None
                        blank = f"{'-':>22s}"
                        detected = _share(c.all_planted, c.campaigns) if s else blank
                        anyone = _share(c.any_planted, c.campaigns) if s else blank
                        print(
                            f"{name:24s} {s:4.2f} {size:4d} {tests:5.1f}  {detected}  {anyone}  "
                            f"{_share(c.false_flag, c.campaigns)}  "
                            f"{_share(c.false_up, c.campaigns)}  "
                            f"{'-' if rows is None else f'{rows:5.0%}':>5s} "
                            f"{'-' if pred is None else f'{pred:9.0%}':>9s} "
                            f"{'-' if gap is None else f'{gap:5.2f}':>5s} "
                            f"{'-' if plan is None else f'{plan:7.0%}':>7s} "
                            f"{'-' if plan_k is None else f'{plan_k:4.0%} at {real} gaps'}"
                            # The rows' counts, so their share gets an interval (the rows of
                            # one campaign are not independent: it is a narrow one).
                            f"; {_share(c.planted_flagged, c.planted_rows).strip()}",
                            flush=True,
                        )
                        if c.false_keys:
                            print(f"#   false flags on: {c.false_keys}", flush=True)
    print(f"# load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
