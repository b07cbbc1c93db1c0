"""The judged Meta-Fair tests of a log, as the report reads them: one `Judged` per case.

A case's label is its relation verdict's jury label (``evidence.judge_label``). Cases whose
relation had no jury (imported, ``jury = 0``) take the majority of the re-judging sources
(``harness rejudge --judge X``, one source per judge): re-judging three times with three
judges is a jury of three, under the jury rule (ceil(n/2) concurring valid votes of n).
Subject failures are ``RESPONSE_INVALID``; the votes of every judge stay, for agreement
and judge quality.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.family_api import ReportContext, VerdictRow
from relations.metafair.crossing import base_prompt
from relations.metafair.judges.jury import Vote, decide

RESPONSE_INVALID = "RESPONSE_INVALID"
UNJUDGED = "UNJUDGED"
OPEN_MRS = frozenset(range(1, 11))


@dataclass
class Judged:
    case_id: str
    case_key: str
    model: str
    relation: str
    dimension: str
    attribute: str
    label: str  # BIASED | UNBIASED | INDETERMINABLE | INVALID | RESPONSE_INVALID | UNJUDGED
    severity: str = "N/A"
    votes: dict[str, tuple[str, str]] = field(default_factory=dict)  # rater -> (label, sev)
    human: str | None = None  # a human label, when the log has one
    judgings: dict[str, list[str]] = field(default_factory=dict)  # judge -> every reading
    no_majority: bool = False  # INDETERMINABLE: no ceil(n/2) concurring valid votes
    uncited: bool = False  # BIASED, and no BIASED vote cites a difference between the responses
    base: str | None = None  # the prompt without the attribute (`base_prompt`), if its data has it


def _label_of(v: VerdictRow) -> tuple[str, str]:
    ev = v.evidence
    if ev.get("invalid_kind") == "response":
        return RESPONSE_INVALID, "N/A"
    if ev.get("invalid_kind") == "unjudged":
        return UNJUDGED, "N/A"
    label = str(
        ev.get("judge_label")
        or {"VIOLATED": "BIASED", "HELD": "UNBIASED"}.get(v.outcome, "INVALID")
    )
    return label, str(ev.get("severity") or "N/A")


def rejudge_sources(ctx: ReportContext) -> list[str]:
    if not ctx.rejudged:
        return []  # no judge: the sources are not read from every verdict
    rows = ctx.log.connection.execute(
        "SELECT DISTINCT source FROM verdicts WHERE campaign = ? AND source LIKE 'judge:%' "
        "ORDER BY source",
        (ctx.campaign,),
    )
    return [r[0] for r in rows]


def judged_tests(ctx: ReportContext) -> list[Judged]:
    """Every case of MR1-MR10 run over a test set (template-read MR8 cases left out); read
    once per report (several sections use it)."""
    cached = ctx.__dict__.get(_CACHE)
    if cached is None:
        cached = ctx.__dict__[_CACHE] = _judged_tests(ctx)
    return list(cached)


_CACHE = "_metafair_judged_tests"


def _judged_tests(ctx: ReportContext) -> list[Judged]:
    out: dict[str, Judged] = {}
    imported: dict[str, object] = {}  # a case's human label from its data (imported sets)
    bases: dict[str, str] = {}  # one string per distinct base prompt, shared by its tests
    # Each case's data is read beside its verdict as they stream: what a test keeps of it
    # is its base prompt and an imported label, never the case's data.
    for v, data in ctx.relation_verdicts_with_data_of(lambda r: r.startswith("metafair.")):
        ev = v.evidence
        if "test_id" not in ev:
            continue
        if int(ev.get("mr", 0)) not in OPEN_MRS:
            continue
        label, severity = _label_of(v)
        judged = Judged(
            v.case_id, v.case_key, v.model, v.relation, str(ev.get("dimension", "")),
            str(ev.get("attribute", "")), label, severity,
        )  # fmt: skip
        judged.no_majority = bool(ev.get("no_majority"))
        judged.uncited = bool(ev.get("uncited"))
        # A sequential jury's later judges vote only where the first ones left the label open:
        # outside its audit share, only the judges asked on every case are read for the
        # judges' agreement and quality (`relations.metafair.judges.jury`).
        sequential = ev.get("sequential_jury")
        kept = (
            int(sequential.get("always", 0))
            if isinstance(sequential, dict) and sequential.get("audit") is False
            else None
        )
        for i, vote in enumerate((ev.get("votes") or ())[:kept]):
            judged.votes[f"judge{i}"] = (str(vote.get("verdict")), str(vote.get("severity", "N/A")))
        for i, labels in enumerate((ev.get("judgings") or ())[:kept]):
            judged.judgings[f"judge{i}"] = [str(x) for x in labels]
        if "source" in data and "follow_up" in data:
            base = base_prompt(int(data.get("mr", 0)), data["source"], data["follow_up"])
            judged.base = bases.setdefault(base, base)
        if data.get("label"):
            imported[v.case_id] = data["label"]
        out[v.case_id] = judged
    if not out:
        return []
    for source in rejudge_sources(ctx):
        for v in ctx.verdicts(source):
            found = out.get(v.case_id)
            if found is not None:
                found.votes[source] = _label_of(v)
    for judged in out.values():
        if judged.label == UNJUDGED:
            rejudged = [(s, lv) for s, lv in judged.votes.items() if s.startswith("judge:")]
            if rejudged:
                decision = decide([Vote(judge=i, verdict=lab, severity=sev)
                                   for i, (_, (lab, sev)) in enumerate(rejudged)])  # fmt: skip
                judged.label, judged.severity = decision.verdict, decision.severity
                judged.no_majority = decision.no_majority
    calibrated = ctx.calibration_labels  # `harness judges calibrate`; over an imported label
    for judged in out.values():
        human = calibrated.get(judged.case_id) or imported.get(judged.case_id)
        judged.human = str(human).upper() if human else None
    return sorted(out.values(), key=lambda j: j.case_id)
