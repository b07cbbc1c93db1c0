"""Detection power on the simulated model: how often a report flags something, per relation
and planted strength, at n = 100, 200 and 400 cases, and how often it flags something when
nothing is planted (strength 0: the false-positive rate, which must stay <= 5 %).

    python bench/power.py              # strengths 0, 0.25, 0.5, 0.75, 1; 20 resamples per n
    python bench/power.py --quick      # strengths 0 and 1; 10 resamples per n

For each relation and strength one campaign runs a pool of cases on ``sim:planted`` with its
planted truth scaled by the strength (0: every group behaves the same). A resample draws n
cases of the pool without replacement and builds that relation's report tables from them
alone (every section, then the report-wide Benjamini-Hochberg correction); it counts as
flagged when any row of the relation's tables is flagged. The pool is 2 x 400 cases, so
resamples at n = 400 overlap: the shares are estimates from dependent resamples.

Strength s scales the planted truth of each family:
- MetaQuerier: a planted term is named with probability s x (0.65 first ask, 0.9 again);
  ``explicit_gender`` is 1.0 at every strength so that at s = 0 every term that is not
  gendered by definition behaves the same (otherwise the 3 % of "woman" left unnamed and
  named again would be a real, if unplanted, inconsistency);
- Meta-Fair MR8: each attribute's tailoring rate x s;
- LangBiTe: each planted community's rate and the political lean x s (the sim's module
  constants, patched in this process: the family has no sim options for them);
- BiasLens answer: each planted group's (role, no role) rates x s, at least the background
  (module constants patched likewise), on a question set generated for the bench by
  BiasLens's own generation path on ``sim`` (`biaslens_question_set`: 440 questions, 880
  cases in both variants; the corpus's 110 questions would cap the pool at 220 cases).
  BiasLens's report reads its trials from the log, so a resample restricts them to its
  cases (`_biaslens_trials_of`).
LangBiTe's library has 33 templates: its cases are template runs (repeats), and the report
summarises the repeats of a template by majority, so more runs do not add units.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
from harness.plugins.family_parts import report_sections  # noqa: E402
from harness.reporting.report import apply_fdr  # noqa: E402
from harness.reporting.stats import TEST_COLUMNS, wilson_interval  # noqa: E402
from harness.reporting.tables import ReportContext, Table, VerdictRow  # noqa: E402
from harness.store.reader import EventReader  # noqa: E402
from harness.store.verdict_counts import tally_verdicts  # noqa: E402

SIZES = (100, 200, 400)
# MetaQuerier's background naming rate (the sim's default 0.002 names almost nothing, a null
# under which no test has anything to work on; --background 0.3 is a harder null, under
# which terms gendered by definition are named at the background too).
BACKGROUND = [0.002]
POOL = 800
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
        return {"models": [_model(options)], "relations": [{"name": relation, "cases": POOL}]}

    return config


def _metafair(s: float, workdir: Path) -> dict[str, Any]:
    from relations.metafair.sim import DEFAULT_TAILORING

    options = {"tailoring": {a: s * r for a, r in DEFAULT_TAILORING.items()}}
    return {"models": [_model(options)], "relations": [{"name": "metafair.mr8", "cases": POOL}]}


def _langbite(s: float, workdir: Path) -> dict[str, Any]:
    return {
        "models": [_model({})],
        "relations": [{"name": "langbite", "options": {"reassess": False}}],
        "repeats": POOL // 33 + 1,
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
        "relations": [{"name": "biaslens.answer", "options": options}],
    }


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
}
# Which tables carry a line's findings; None: every table with tests.
LINES: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "metaquerier.mr1": ("metaquerier.mr1", ("violating_terms_by_group", "top_violating_terms")),
    "metaquerier.mr1 attribution": (
        "metaquerier.mr1",
        ("metaquerier_attribution_by_group", "metaquerier_attribution_by_term"),
    ),
    "metaquerier.mr2": ("metaquerier.mr2", ("violating_terms_by_group", "top_violating_terms")),
    "metaquerier.mr2 paired": ("metaquerier.mr2", ("metaquerier_source_vs_follow_up",)),
    "metafair.mr8": ("metafair.mr8", ("metafair_violations_by_attribute",)),
    "langbite pairs": ("langbite", ("langbite_pass_rates",)),
    "langbite community": ("langbite", ("langbite_community_tests",)),
    "biaslens.answer": ("biaslens.answer", None),
}


def tables_of(ctx: ReportContext, verdicts: list[VerdictRow]) -> list[Table]:
    """The report of ``verdicts`` alone: every section on them, then the FDR correction.
    The keep-masks are left off so that hidden rows' flags count too."""
    sub = ReportContext(ctx.log, ctx.campaign, {"top": 10**9})
    sub.__dict__["relation_verdicts"] = verdicts
    sub.__dict__["verdict_counts"] = tally_verdicts(
        (v.model, v.relation, v.outcome, v.reason, v.case_key) for v in verdicts
    )
    sub.__dict__["case_data"] = ctx.case_data
    tables: list[Table] = []
    with _biaslens_trials_of({v.case_id for v in verdicts}):
        for section in sorted(report_sections(), key=lambda s: (s.order, s.name)):
            tables.extend(section.build(sub))
    return apply_fdr(tables)


@contextlib.contextmanager
def _biaslens_trials_of(case_ids: set[str]) -> Iterator[None]:
    """BiasLens's report reads its trials from the log, not from the context's verdicts
    (an import's trials need no verdict row): restrict them to the resample's cases, or
    every resample would be the whole pool."""
    from relations.biaslens import report as bl_report

    load, split = bl_report.trials_at, bl_report.second_core_free

    def resampled(conn: Any, positions: Any) -> list[Any]:
        return [t for t in load(conn, positions) if t.case_id in case_ids]

    bl_report.trials_at = resampled
    bl_report.second_core_free = lambda: False  # a second process would read every case
    try:
        yield
    finally:
        bl_report.trials_at, bl_report.second_core_free = load, split


def flagged(tables: list[Table], names: tuple[str, ...] | None) -> bool | None:
    """Whether any row of the named tables is flagged; None when they hold no test."""
    tested = [
        t
        for t in tables
        if tuple(t.columns[-3:]) == TEST_COLUMNS and (names is None or t.name in names)
    ]
    if not tested or not any(r[-3] is not None for t in tested for r in t.rows):
        return None
    return any(r[-1] == "yes" for t in tested for r in t.rows)


def headline(verdicts: list[VerdictRow], ctx: ReportContext, line: str) -> tuple[int, int]:
    """The rate a line is about: violated / valid cases; for attribution the named share of
    (case, term) pairs in the source turn; for the paired MR2 line the share of (case,
    source term) pairs named in one turn only (the discordant pairs)."""
    if line.endswith("paired"):
        units = [
            (case, term)
            for v in verdicts
            if v.outcome in ("HELD", "VIOLATED")
            for case in [v.case_key]
            for term in ctx.case_data.get(v.case_id, {}).get("terms", [])
        ]
        moved = 0
        for v in verdicts:
            if v.outcome not in ("HELD", "VIOLATED"):
                continue
            terms = set(ctx.case_data.get(v.case_id, {}).get("terms", []))
            first = set(v.evidence.get("source_named") or []) & terms
            moved += len(first ^ (set(v.evidence.get("follow_named") or []) & terms))
        return moved, len(units)
    if line.endswith("community"):
        # Every answer naming a community, every run: the community test's unit.
        answers = [
            not row["passed"]
            for v in verdicts
            if v.outcome != "INVALID"
            for row in v.evidence.get("answers", [])
            if row.get("passed") is not None and row.get("fills")
        ]
        return sum(answers), len(answers)
    if line.endswith("attribution"):
        from relations.metaquerier.report import _attribution_units

        sub = ReportContext(ctx.log, ctx.campaign)
        sub.__dict__["relation_verdicts"] = verdicts
        sub.__dict__["case_data"] = ctx.case_data
        attribution, _ = _attribution_units(sub)
        return sum(attribution.values()), len(attribution)
    valid = [v for v in verdicts if v.outcome in ("HELD", "VIOLATED")]
    return sum(v.outcome == "VIOLATED" for v in valid), len(valid)


def measure(relation: str, s: float, resamples: int, workdir: Path) -> list[str]:
    config = {"name": f"power-{relation}-{s}", "seed": 3, **RELATIONS[relation](s, workdir)}
    db = workdir / f"{relation}-{s}.db"
    with _patched_constants(relation, s):
        summary = harness.run(config, db)
    assert summary.status == "completed", summary
    out = []
    with EventReader(db) as log:
        ctx = ReportContext(log, log.latest_campaign())
        pool = list(ctx.relation_verdicts)
        rng = random.Random(f"{relation}/{s}")
        for line, (rel, names) in LINES.items():
            if rel != relation:
                continue
            k, n = headline(pool, ctx, line)
            low, high = wilson_interval(k, n)
            shares = []
            for size in SIZES:
                if size > len(pool):
                    shares.append("   n/a")
                    continue
                hits = [
                    flagged(tables_of(ctx, rng.sample(pool, size)), names) for _ in range(resamples)
                ]
                if any(h is None for h in hits):
                    shares.append(" no test")
                else:
                    shares.append(f"{sum(bool(h) for h in hits) / resamples:7.0%}")
            out.append(
                f"{line:30s} {s:5.2f} {k / n if n else float('nan'):7.3f} "
                f"[{low:.3f}, {high:.3f}] {n:6d}  " + " ".join(shares)
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--resamples", type=int)
    parser.add_argument("--relations", nargs="*", default=list(RELATIONS))
    parser.add_argument("--strengths", nargs="*", type=float)
    parser.add_argument("--background", type=float, default=0.002, help="MetaQuerier's")
    args = parser.parse_args()
    BACKGROUND[0] = args.background
    strengths = args.strengths or ((0.0, 1.0) if args.quick else (0.0, 0.25, 0.5, 0.75, 1.0))
    resamples = args.resamples or (10 if args.quick else 20)
    started = time.monotonic()
    print(
        f"# {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs, load "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; Python {platform.python_version()}; "
        f"{resamples} resamples per n; pool {POOL} cases; MetaQuerier background "
        f"{args.background}"
    )
    print(
        f"{'relation':30s} {'s':>5s} {'rate':>7s} {'95% CI':16s} {'units':>6s}  "
        + " ".join(f"{'n=' + str(n):>7s}" for n in SIZES)
    )
    with tempfile.TemporaryDirectory() as tmp:
        for relation in args.relations:
            for s in strengths:
                for row in measure(relation, s, resamples, Path(tmp)):
                    print(row, flush=True)
    print(f"# load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
