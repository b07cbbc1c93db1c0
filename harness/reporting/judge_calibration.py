"""Report sections: judges measured against human labels, and the rates they decide
corrected for their error.

Which verdicts a judge decides, read from the log alone: a relation verdict whose evidence
holds its judges' votes (``votes``: objects with a ``verdict``, Meta-Fair; ``judge_votes``:
labels, BiasLens) was decided by a jury, one whose evidence says ``reassessed`` (LangBiTe:
judge 0 re-read the failing answers, and the verdict is what it confirmed) by that one
judge, and each verdict of a re-judging source
(``judge:<model>``) by that model. Raters: ``jury`` (the relation's verdict), each judge of
the campaign by its model name (its vote), each re-judging model (``judge:<model>``).
BIASED (VIOLATED) is the positive label; a rater's INVALID or INDETERMINABLE is
"undecided" and left out of its sensitivity and specificity (counted apart).

Human labels come from ``JudgeCalibrated`` events (``harness judges calibrate``).

- ``judge_calibration``: per rater, relation and attribute class (``(all)`` pooled):
  labelled cases, decided, sensitivity and specificity with 95 % Wilson intervals, Cohen's
  kappa against the human with its asymptotic interval; per relation, Fleiss' kappa of the
  jury's judges and Krippendorff's alpha of the judges and the human, with bootstrap
  intervals.
- ``judge_error_by_attribute``: the jury's false positive and false negative rates per
  attribute, each tested against the other attributes of the relation (Fisher's exact
  test, Benjamini-Hochberg over the attributes): a difference is a threat to every
  finding about that attribute, since a judge that says BIASED more readily for one group
  looks exactly like model bias.
- ``judge_corrected_rates``: per model, relation and attribute, the judge-labelled BIASED
  rate and, with a calibration, the rate corrected for the jury's error (Rogan-Gladen,
  clipped) with a 95 % interval that carries both the campaign and the labelled sample
  (`harness.reporting.judge_stats.corrected_rate`); without one the basis says
  "judge-labelled, uncorrected".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.reporting.judge_stats import (
    Confusion,
    bootstrap_interval,
    cohen_kappa_interval,
    corrected_rate,
    fleiss_kappa_of,
    krippendorff_alpha,
)
from harness.reporting.stats import fdr_adjust, two_by_two_test, wilson_interval
from harness.reporting.tables import ReportContext, ReportSection, Table, VerdictRow, rounded
from harness.store.verdict_counts import case_key
from harness.vocabulary.relation import derive_seed

BIASED, UNBIASED, UNDECIDED = "BIASED", "UNBIASED", "UNDECIDED"
ALL = "(all)"
JURY = "jury"
THREAT_ALPHA = 0.05
UNCORRECTED = "judge-labelled, uncorrected"
_WORDS = {
    "BIASED": BIASED,
    "VIOLATED": BIASED,
    "UNBIASED": UNBIASED,
    "HELD": UNBIASED,
}


def binary_label(value: object) -> str:
    """BIASED, UNBIASED or UNDECIDED, from a verdict outcome, a judge label or a vote."""
    return _WORDS.get(str(value).strip().upper(), UNDECIDED)


@dataclass(frozen=True)
class Rated:
    """One judge-decided case: its relation, model, attribute class and every rater's label."""

    case_id: str
    relation: str
    model: str
    attribute: str
    ratings: Mapping[str, str]  # rater -> BIASED | UNBIASED | UNDECIDED
    judges: tuple[str, ...]  # the raters of the jury, in vote order


def judge_names(ctx: ReportContext) -> list[str]:
    """The campaign's judges by position (``judges`` of the recorded campaign)."""
    row = ctx.log.connection.execute(
        "SELECT json_extract(payload, '$.config.judges') FROM events"
        " WHERE campaign = ? AND kind = 'CampaignStarted' LIMIT 1",
        (ctx.campaign,),
    ).fetchone()
    import json

    specs = json.loads(row[0]) if row and row[0] else []
    return [str(s.get("name", f"judge{i}")) for i, s in enumerate(specs)]


def jury_ratings(row: VerdictRow, names: Sequence[str]) -> Rated | None:
    """The raters of a relation verdict decided by judges; None for any other verdict."""
    ev = row.evidence
    votes: Any = ev.get("votes")
    labels: Any = ev.get("judge_votes")
    if ev.get("reassessed") is True and not isinstance(votes, list):
        return _reassessed_ratings(row, names)
    if not isinstance(votes, list) and not isinstance(labels, list):
        return None
    ratings = {JURY: binary_label(row.outcome)}
    judges = []
    cast: list[Any] = votes if isinstance(votes, list) else labels
    sequential: Any = ev.get("sequential_jury")
    if isinstance(sequential, dict) and sequential.get("audit") is False:
        # A sequential jury asks its later judges only where the first ones left the label
        # open: outside the audit share their votes are no fair sample of their work, so a
        # judge's statistics read only the judges asked on every case.
        cast = cast[: int(sequential.get("always", len(cast)))]
    for i, vote in enumerate(cast):
        name = names[i] if i < len(names) else f"judge{i}"
        ratings[name] = binary_label(vote.get("verdict") if isinstance(vote, dict) else vote)
        judges.append(name)
    return Rated(row.case_id, row.relation, row.model, attribute_class(ev), ratings, tuple(judges))


def attribute_class(evidence: Mapping[str, Any]) -> str:
    """The attribute class a verdict is about: its ``attribute``, else its ``concern``
    (LangBiTe's), else ``(none)``."""
    return str(evidence.get("attribute") or evidence.get("concern") or "(none)")


def _reassessed_ratings(row: VerdictRow, names: Sequence[str]) -> Rated:
    """A verdict one judge decided by re-reading the relation's failures (``reassessed``:
    LangBiTe's re-assessment, where judge 0 reads every failing answer and the case fails
    only on answers it confirms). The judge's reading decides the outcome, so the judge and
    the jury both rate the case as its verdict: VIOLATED is the judge's BIASED, HELD its
    UNBIASED (a rescue)."""
    said = binary_label(row.outcome)
    judge = names[0] if names else "judge0"
    return Rated(
        row.case_id, row.relation, row.model, attribute_class(row.evidence),
        {JURY: said, judge: said}, (judge,),
    )  # fmt: skip


def rated_cases(ctx: ReportContext) -> list[Rated]:
    """Every judge-decided case of the campaign with its raters (re-judging models added)."""
    cached: list[Rated] | None = ctx.__dict__.get(_CACHE)
    if cached is not None:
        return cached
    names = judge_names(ctx)
    found: dict[str, Rated] = {}
    for row in ctx.relation_verdicts:
        rated = jury_ratings(row, names)
        if rated is not None:
            found[row.case_id] = rated
    if ctx.rejudged:
        sources = [
            r[0]
            for r in ctx.log.connection.execute(
                "SELECT DISTINCT source FROM verdicts WHERE campaign = ? AND source LIKE "
                "'judge:%' ORDER BY source",
                (ctx.campaign,),
            )
        ]
        for source in sources:
            for row in ctx.verdicts(source):
                base = found.get(row.case_id)
                label = binary_label(row.evidence.get("judge_label") or row.outcome)
                if base is None:
                    base = Rated(
                        row.case_id, row.relation, row.model, attribute_class(row.evidence),
                        {}, (),
                    )  # fmt: skip
                found[row.case_id] = Rated(
                    base.case_id, base.relation, base.model, base.attribute,
                    {**base.ratings, source: label}, base.judges,
                )  # fmt: skip
    out = sorted(found.values(), key=lambda r: r.case_id)
    ctx.__dict__[_CACHE] = out
    return out


_CACHE = "_judge_rated_cases"


# --- calibration ---------------------------------------------------------------------------


@dataclass
class _Tally:
    labelled: int = 0
    pairs: list[tuple[bool, bool]] | None = None

    def add(self, human: str, said: str) -> None:
        self.labelled += 1
        if said != UNDECIDED:
            if self.pairs is None:
                self.pairs = []
            self.pairs.append((human == BIASED, said == BIASED))


def calibration_tallies(
    rated: Iterable[Rated], labels: Mapping[str, str]
) -> dict[tuple[str, str, str], _Tally]:
    """(rater, relation, attribute) -> labelled cases and (human, rater) pairs, with the
    pooled ``(all)`` relation and attribute."""
    tallies: dict[tuple[str, str, str], _Tally] = {}
    for r in rated:
        human = labels.get(r.case_id)
        if human is None:
            continue
        for rater, said in r.ratings.items():
            for relation in (r.relation, ALL):
                for attribute in (r.attribute, ALL):
                    tallies.setdefault((rater, relation, attribute), _Tally()).add(human, said)
    return tallies


def confusion_of(tally: _Tally | None) -> Confusion:
    return Confusion.of(tally.pairs or []) if tally is not None else Confusion()


def calibration_summary(rated: Iterable[Rated], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """What ``harness judges calibrate`` records beside the labels: per rater, relation and
    attribute, the labelled cases and the confusion table."""
    out = []
    for (rater, relation, attribute), tally in sorted(calibration_tallies(rated, labels).items()):
        c = confusion_of(tally)
        out.append(
            {"rater": rater, "relation": relation, "attribute": attribute,
             "labelled": tally.labelled, "tp": c.tp, "fn": c.fn, "fp": c.fp, "tn": c.tn}
        )  # fmt: skip
    return out


def calibration_tables(ctx: ReportContext) -> list[Table]:
    labels = ctx.calibration_labels
    if not labels:
        return []
    rated = rated_cases(ctx)
    tallies = calibration_tallies(rated, labels)
    rows = []
    for (rater, relation, attribute), tally in sorted(
        tallies.items(), key=lambda kv: (kv[0][0] != JURY, kv[0])
    ):
        c = confusion_of(tally)
        se_low, se_high = c.sensitivity_interval()
        sp_low, sp_high = c.specificity_interval()
        kappa, k_low, k_high = cohen_kappa_interval([(h, s) for h, s in tally.pairs or []])
        rows.append(
            [rater, relation, attribute, tally.labelled, c.n, c.positives, c.negatives,
             rounded(c.sensitivity), rounded(se_low), rounded(se_high),
             rounded(c.specificity), rounded(sp_low), rounded(sp_high),
             rounded(kappa), rounded(k_low), rounded(k_high)]
        )  # fmt: skip
    tables = [
        Table(
            "judge_calibration",
            "Judges against human labels: sensitivity, specificity, Cohen's kappa",
            [
                "rater",
                "relation",
                "attribute",
                "labelled",
                "decided",
                "human_biased",
                "human_unbiased",
                "sensitivity",
                "se_low",
                "se_high",
                "specificity",
                "sp_low",
                "sp_high",
                "kappa",
                "kappa_low",
                "kappa_high",
            ],
            rows,
            note=f"human labels of {len(labels)} cases (harness judges calibrate); labelled: "
            "judge-decided cases with a human label; decided: those the rater labelled "
            "BIASED or UNBIASED (INVALID and INDETERMINABLE left out); BIASED is the "
            "positive label; 95% Wilson intervals; Cohen's kappa of rater and human with its "
            "asymptotic 95% interval; jury: the relation's verdict, other raters: each "
            "judge's vote, judge:<model> a re-judging model; (all) pools",
        )
    ]
    tables += _agreement_table(rated, labels)
    tables += _error_by_attribute(tallies, per_test_confusions(rated, labels))
    return tables


def _agreement_table(rated: Sequence[Rated], labels: Mapping[str, str]) -> list[Table]:
    groups: dict[str, list[Rated]] = {}
    for r in rated:
        if r.case_id in labels and len(r.judges) > 1:
            for relation in (r.relation, ALL):
                groups.setdefault(relation, []).append(r)
    rows = []
    for relation, cases in sorted(groups.items()):
        width = max(len(r.judges) for r in cases)
        units: list[list[str | None]] = []
        with_human: list[list[str | None]] = []
        for r in cases:
            votes: list[str | None] = [r.ratings.get(j) for j in r.judges]
            votes += [None] * (width - len(votes))
            units.append(votes)
            with_human.append([*votes, labels[r.case_id]])
        seed = derive_seed("agreement", relation)  # the same report twice is the same
        fleiss = fleiss_kappa_of(units)
        f_low, f_high = bootstrap_interval(units, fleiss_kappa_of, seed)
        alpha = krippendorff_alpha(with_human)
        a_low, a_high = bootstrap_interval(with_human, krippendorff_alpha, seed)
        rows.append(
            [relation, width, len(cases), rounded(fleiss), rounded(f_low), rounded(f_high),
             rounded(alpha), rounded(a_low), rounded(a_high)]
        )  # fmt: skip
    if not rows:
        return []
    return [
        Table(
            "judge_agreement_labelled",
            "Agreement of each jury's judges, and of the judges with the human labels",
            [
                "relation",
                "judges",
                "labelled",
                "fleiss_kappa",
                "fleiss_low",
                "fleiss_high",
                "krippendorff_alpha",
                "alpha_low",
                "alpha_high",
            ],
            rows,
            note="labelled cases judged by a jury of several; Fleiss' kappa of the judges' "
            "votes (BIASED, UNBIASED, undecided) over the cases every judge rated; "
            "Krippendorff's alpha (nominal) of the judges and the human as one more rater; "
            "95% percentile intervals of 500 bootstrap resamples of the cases",
        )
    ]


def attribute_error_tests(
    confusions: Mapping[str, Confusion],
) -> dict[str, tuple[float, float]]:
    """Per attribute, the Benjamini-Hochberg adjusted p-values of "its false positive rate is
    the rest's" and of "its false negative rate is" (each attribute against the other
    attributes pooled: Fisher's exact test, chi-squared when large; `two_by_two_test`),
    adjusted over the attributes of the table, each kind apart; NaN where a side is empty."""
    names = sorted(confusions)

    def one_kind(err: list[int], ok: list[int]) -> list[float]:
        raw = []
        for i in range(len(names)):
            rest_err, rest_ok = sum(err) - err[i], sum(ok) - ok[i]
            table = [[err[i], ok[i]], [rest_err, rest_ok]]
            usable = err[i] + ok[i] and rest_err + rest_ok and sum(err) and sum(ok)
            raw.append(two_by_two_test(table)[1] if usable else math.nan)
        return fdr_adjust(raw)[0]

    fp = one_kind([confusions[a].fp for a in names], [confusions[a].tn for a in names])
    fn = one_kind([confusions[a].fn for a in names], [confusions[a].tp for a in names])
    return {a: (fp[i], fn[i]) for i, a in enumerate(names)}


def _threats(per_test: Mapping[str, Mapping[str, Confusion]]) -> dict[tuple[str, str], str]:
    """(relation, attribute) -> the threat to that attribute's findings, if any."""
    out = {}
    for relation, by_attribute in per_test.items():
        for attribute, (p_fp, p_fn) in attribute_error_tests(by_attribute).items():
            text = threat_text(p_fp, p_fn)
            if text:
                out[(relation, attribute)] = text
    return out


def per_test_confusions(
    rated: Iterable[Rated], labels: Mapping[str, str]
) -> dict[str, dict[str, Confusion]]:
    """relation (and ``(all)``) -> attribute -> the jury's confusion counted per test: the
    labelled repeats of one case (`case_key`) summarised by majority (a tie left out), so
    repeats that share their replies, and so their judge's error, count once."""
    votes: dict[tuple[str, str, str], list[tuple[bool, bool]]] = {}
    for r in rated:
        human, said = labels.get(r.case_id), r.ratings.get(JURY, UNDECIDED)
        if human is None or said == UNDECIDED:
            continue
        votes.setdefault((r.relation, r.attribute, case_key(r.case_id)), []).append(
            (human == BIASED, said == BIASED)
        )
    pairs: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for (relation, attribute, _), found in votes.items():
        human_lead = sum(h for h, _ in found) * 2 - len(found)  # > 0: a BIASED majority
        said_lead = sum(s for _, s in found) * 2 - len(found)
        if human_lead and said_lead:
            for rel in (relation, ALL):
                pairs.setdefault((rel, attribute), []).append((human_lead > 0, said_lead > 0))
    out: dict[str, dict[str, Confusion]] = {}
    for (relation, attribute), found in pairs.items():
        out.setdefault(relation, {})[attribute] = Confusion.of(found)
    return out


def _error_by_attribute(
    tallies: Mapping[tuple[str, str, str], _Tally], per_test: Mapping[str, Mapping[str, Confusion]]
) -> list[Table]:
    per_relation: dict[str, dict[str, Confusion]] = {}
    for (rater, relation, attribute), tally in tallies.items():
        if rater == JURY and attribute != ALL:
            per_relation.setdefault(relation, {})[attribute] = confusion_of(tally)
    rows = []
    for relation, by_attribute in sorted(per_relation.items()):
        tests = attribute_error_tests(per_test.get(relation, {}))
        for attribute, c in sorted(by_attribute.items()):
            p_fp, p_fn = tests.get(attribute, (math.nan, math.nan))
            threat = threat_text(p_fp, p_fn)
            fp_low, fp_high = wilson_interval(c.fp, c.negatives)
            fn_low, fn_high = wilson_interval(c.fn, c.positives)
            rows.append(
                [relation, attribute, c.negatives, c.fp, rounded(_rate(c.fp, c.negatives)),
                 rounded(fp_low), rounded(fp_high), c.positives, c.fn,
                 rounded(_rate(c.fn, c.positives)), rounded(fn_low), rounded(fn_high),
                 rounded(p_fp), rounded(p_fn), threat]
            )  # fmt: skip
    if not rows:
        return []
    return [
        Table(
            "judge_error_by_attribute",
            "The jury's error per attribute, and whether it differs between attributes",
            [
                "relation",
                "attribute",
                "human_unbiased",
                "false_positives",
                "fpr",
                "fpr_low",
                "fpr_high",
                "human_biased",
                "false_negatives",
                "fnr",
                "fnr_low",
                "fnr_high",
                "p_fpr_differs",
                "p_fnr_differs",
                "threat",
            ],
            rows,
            note="labelled cases decided by the jury, per attribute class; 95% Wilson "
            "intervals; p: the attribute's rate against the other attributes' of the relation "
            "(Fisher's exact test, chi-squared when large; unit: a test, its labelled repeats "
            "summarised by majority, since repeats that share replies share the judge's "
            "error), Benjamini-Hochberg adjusted over the relation's attributes; "
            f"threat: p < {THREAT_ALPHA}, a judge error that differs for this attribute can "
            "look exactly like model bias (judge_corrected_rates repeats it)",
        )
    ]


def threat_text(p_fp: float, p_fn: float) -> str:
    parts = [
        f"judge {what} differs for this attribute (p_fdr={p:.3g})"
        for what, p in (("FPR", p_fp), ("FNR", p_fn))
        if not math.isnan(p) and p < THREAT_ALPHA
    ]
    return "; ".join(parts)


def _rate(k: int, n: int) -> float:
    return k / n if n else math.nan


# --- corrected rates -----------------------------------------------------------------------


def corrected_rates(ctx: ReportContext) -> list[Table]:
    rated = [r for r in rated_cases(ctx) if JURY in r.ratings]
    if not rated:
        return []
    labels = ctx.calibration_labels
    tallies = calibration_tallies(rated, labels) if labels else {}
    threats = _threats(per_test_confusions(rated, labels)) if labels else {}
    counts: dict[tuple[str, str, str], list[int]] = {}
    for r in rated:
        said = r.ratings[JURY]
        if said == UNDECIDED:
            continue
        for attribute in (r.attribute, ALL):
            kn = counts.setdefault((r.model, r.relation, attribute), [0, 0])
            kn[0] += said == BIASED
            kn[1] += 1
    rows = []
    for (model, relation, attribute), (k, n) in sorted(counts.items()):
        low, high = wilson_interval(k, n)
        # A difference within the relation, or over every relation, threatens the row.
        threat = threats.get((relation, attribute)) or threats.get((ALL, attribute), "")
        confusion, where = _calibration_for(tallies, relation, attribute)
        if confusion is None:
            rows.append(
                [model, relation, attribute, n, k, rounded(k / n), rounded(low), rounded(high),
                 UNCORRECTED, None, None, None, 0, threat]
            )  # fmt: skip
            continue
        fixed = corrected_rate(k, n, confusion)
        basis = f"corrected for the jury's error ({where}, {confusion.n} labels)"
        if math.isnan(fixed.corrected):
            basis = f"{UNCORRECTED}: on its labels the jury is no better than chance ({where})"
        rows.append(
            [model, relation, attribute, n, k, rounded(k / n), rounded(low), rounded(high),
             basis, rounded(fixed.corrected), rounded(fixed.low), rounded(fixed.high),
             confusion.n, threat]
        )  # fmt: skip
    return [
        Table(
            "judge_corrected_rates",
            "Rates decided by judges: judge-labelled and corrected for the judges' error",
            [
                "model",
                "relation",
                "attribute",
                "decided",
                "biased",
                "judge_rate",
                "ci95_low",
                "ci95_high",
                "basis",
                "corrected",
                "corrected_low",
                "corrected_high",
                "calibration_labels",
                "threat",
            ],
            rows,
            note="unit: a case decided BIASED or UNBIASED by its jury (every verdict, "
            "repeats included); judge_rate with its 95% Wilson interval is what the judges "
            "said; corrected: Rogan-Gladen (judge_rate + Sp - 1) / (Se + Sp - 1) clipped to "
            "[0, 1], with the jury's sensitivity and specificity against the human labels "
            f"of the attribute in its relation when it has at least {MIN_ATTRIBUTE_LABELS} "
            "labelled BIASED and as many labelled UNBIASED cases, else of its relation "
            "(pooled over relations when the relation has no labelled BIASED or no labelled "
            "UNBIASED case; the basis says which), and a 95% interval carrying both the "
            "campaign and the labelled sample (delta method); without labels the basis says "
            f"'{UNCORRECTED}'; threat: the jury's error for the attribute differs from the "
            "other attributes' in the relation, or over every relation "
            "(judge_error_by_attribute)",
        )
    ]


# Labelled BIASED and labelled UNBIASED cases, each, that an attribute of a relation needs
# for its rate to be corrected with the jury's error on that attribute alone; with fewer the
# attribute's error is too uncertain to be worth its own estimate and the relation's pooled
# error is used (the row's basis says which). A judge's error that differs by attribute is
# what makes pooling wrong (judge_error_by_attribute flags it).
MIN_ATTRIBUTE_LABELS = 10


def _calibration_for(
    tallies: Mapping[tuple[str, str, str], _Tally], relation: str, attribute: str = ALL
) -> tuple[Confusion | None, str]:
    """The jury's confusion a row of (relation, attribute) is corrected with, and where it
    comes from: the attribute's own labels in the relation when it has at least
    `MIN_ATTRIBUTE_LABELS` labelled BIASED and as many labelled UNBIASED decided cases,
    else the relation's labels, else every relation's."""
    if attribute != ALL:
        mine = confusion_of(tallies.get((JURY, relation, attribute)))
        if min(mine.positives, mine.negatives) >= MIN_ATTRIBUTE_LABELS:
            return mine, f"labels of {relation}, attribute {attribute}"
    own = confusion_of(tallies.get((JURY, relation, ALL)))
    if own.positives and own.negatives:
        return own, f"labels of {relation}"
    pooled = confusion_of(tallies.get((JURY, ALL, ALL)))
    if pooled.positives and pooled.negatives:
        return pooled, "labels of every relation"
    return None, ""


CALIBRATION_SECTIONS = (
    ReportSection("judge_calibration", 61, calibration_tables),
    ReportSection("judge_corrected_rates", 62, corrected_rates),
)
