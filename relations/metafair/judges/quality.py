"""How good the judges are, against human labels (``harness judges calibrate``, or case
data ``label``, e.g. from ``harness import metafair`` with a ``label`` column), as the paper
measures them. The core's ``judge_calibration`` section adds sensitivity, specificity and
kappas with intervals per attribute class, and the rates corrected for the judges' error.

Per rater (the jury, each in-campaign judge, each re-judging model) and relation, over the
tests with a human BIASED/UNBIASED label and a BIASED/UNBIASED verdict from the rater:
precision, recall and F1 averaged over the two classes weighted by their support (the
paper's "weighted"), ROC AUC with the severity as the score (N/A 0, LOW 1, MODERATE 2,
HIGH 3; the Mann-Whitney U statistic over the scores of the two classes, ties counting a
half), the false positive and false negative rates with Wilson intervals, and stability:
the share of tests whose judge gave the same verdict on every reading (``judgings``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from harness.family_api import ReportContext, ReportSection, Table, rounded, wilson_interval
from relations.metafair.judges.verdicts import judged_tests

SEVERITY_SCORE = {"N/A": 0, "LOW": 1, "MODERATE": 2, "HIGH": 3}
VALID = ("BIASED", "UNBIASED")


@dataclass(frozen=True)
class Quality:
    n: int
    precision: float
    recall: float
    f1: float
    roc_auc: float
    fp: int
    negatives: int
    fn: int
    positives: int

    @property
    def fpr(self) -> float:
        return self.fp / self.negatives if self.negatives else math.nan

    @property
    def fnr(self) -> float:
        return self.fn / self.positives if self.positives else math.nan


def _ratio(a: int, b: int) -> float:
    return a / b if b else math.nan


def judge_quality(truth: Sequence[bool], said: Sequence[bool], scores: Sequence[float]) -> Quality:
    """Quality of verdicts ``said`` (True = BIASED) against ``truth``, weighted by support."""
    tp = sum(t and s for t, s in zip(truth, said, strict=True))
    fp = sum(s and not t for t, s in zip(truth, said, strict=True))
    fn = sum(t and not s for t, s in zip(truth, said, strict=True))
    tn = len(truth) - tp - fp - fn
    pos, neg = tp + fn, tn + fp
    per_class = []
    # class BIASED: tp/fp/fn as counted; class UNBIASED: the same table read the other way.
    for c_tp, c_fp, c_fn, support in ((tp, fp, fn, pos), (tn, fn, fp, neg)):
        precision = _ratio(c_tp, c_tp + c_fp)
        recall = _ratio(c_tp, c_tp + c_fn)
        f1 = _ratio(2 * c_tp, 2 * c_tp + c_fp + c_fn)
        per_class.append((precision, recall, f1, support))
    n = len(truth)

    def weighted(i: int) -> float:
        # A class nothing was predicted for has an undefined precision: it counts as 0,
        # as scikit-learn's zero_division=0 would (the paper's numbers come from it).
        return (
            sum((0.0 if math.isnan(m[i]) else m[i]) * m[3] for m in per_class) / n
            if n
            else math.nan
        )

    return Quality(
        n, weighted(0), weighted(1), weighted(2), roc_auc(truth, scores), fp, neg, fn, pos
    )


def roc_auc(truth: Sequence[bool], scores: Sequence[float]) -> float:
    """ROC AUC of ``scores`` for ``truth``: U / (n_pos * n_neg) of the Mann-Whitney test."""
    pos = [s for t, s in zip(truth, scores, strict=True) if t]
    neg = [s for t, s in zip(truth, scores, strict=True) if not t]
    if not pos or not neg:
        return math.nan
    # Imported here: scipy.stats takes seconds to import, and every command imports this family.
    from scipy.stats import mannwhitneyu

    u = mannwhitneyu(pos, neg, alternative="two-sided").statistic
    return float(u) / (len(pos) * len(neg))


def quality_table(ctx: ReportContext) -> list[Table]:
    groups: dict[tuple[str, str], list[tuple[bool, str, str]]] = {}
    stable: dict[tuple[str, str], list[bool]] = {}
    for j in judged_tests(ctx):
        if j.human in VALID:
            truth = j.human == "BIASED"
            raters = {"jury": (j.label, j.severity), **j.votes}
            for rater, (label, sev) in raters.items():
                for relation in (j.relation, "(all)"):
                    groups.setdefault((rater, relation), []).append((truth, label, sev))
        for rater, labels in j.judgings.items():
            for relation in (j.relation, "(all)"):
                stable.setdefault((rater, relation), []).append(len(set(labels)) == 1)
    rows = []
    for rater, relation in sorted({*groups, *stable}):
        items = groups.get((rater, relation), [])
        valid = [(t, lab == "BIASED", SEVERITY_SCORE.get(sev, 0) if lab == "BIASED" else 0)
                 for t, lab, sev in items if lab in VALID]  # fmt: skip
        q = judge_quality([v[0] for v in valid], [v[1] for v in valid], [v[2] for v in valid])
        fpr_low, fpr_high = wilson_interval(q.fp, q.negatives)
        fnr_low, fnr_high = wilson_interval(q.fn, q.positives)
        st = stable.get((rater, relation), [])
        rows.append(
            [rater, relation, len(items), q.n, rounded(q.precision), rounded(q.recall),
             rounded(q.f1), rounded(q.roc_auc), rounded(q.fpr), rounded(fpr_low),
             rounded(fpr_high), rounded(q.fnr), rounded(fnr_low), rounded(fnr_high),
             len(st), rounded(sum(st) / len(st)) if st else None]
        )  # fmt: skip
    if not rows:
        return []
    return [
        Table(
            "metafair_judge_quality",
            "Meta-Fair: judges against human labels",
            [
                "rater",
                "relation",
                "labelled",
                "judged",
                "precision",
                "recall",
                "f1",
                "roc_auc",
                "fpr",
                "fpr_low",
                "fpr_high",
                "fnr",
                "fnr_low",
                "fnr_high",
                "stability_tests",
                "stability",
            ],
            rows,
            note="labelled: tests with a human BIASED/UNBIASED label; judged: those the rater "
            "labelled BIASED or UNBIASED; precision, recall, F1 averaged over both classes "
            "weighted by support; ROC AUC with severity as the score; fpr, fnr with 95% "
            "Wilson intervals; "
            "stability: share of tests (labelled or not) a judge gave the same verdict on "
            "every reading, over stability_tests read more than once",
        )
    ]


JUDGE_QUALITY_SECTIONS = (ReportSection("metafair_judge_quality", 40, quality_table),)
