"""Judge calibration: human labels for a sample of a campaign's cases, checked and recorded
as a ``JudgeCalibrated`` event, and the planner of how many labels a target precision needs.

The labels file is CSV (columns ``case_id`` and ``label``; ``case`` is read as
``case_id``) or JSON (a list of ``{"case_id", "label"}`` objects, or one object mapping case
ids to labels). A label is BIASED or UNBIASED (VIOLATED/HELD, yes/no and 1/0 read as
BIASED/UNBIASED, case aside). Every case id must be a case of the campaign, and every label
readable, or nothing is recorded (a `ConfigError` naming the first bad row). The event is
appended like a re-judging run's note, after whatever the log holds: no verdict changes,
``replay --verify`` re-derives the campaign as before, and every report recomputes the
judges' error from the labels.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.reporting.judge_calibration import (
    ALL,
    JURY,
    calibration_summary,
    calibration_tallies,
    confusion_of,
    rated_cases,
)
from harness.reporting.judge_stats import LabelPlan, labels_needed
from harness.reporting.tables import ReportContext
from harness.store.log import LogLike
from harness.store.open import open_reader, open_writer
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.events import JudgeCalibrated

_LABELS = {
    "biased": "BIASED",
    "violated": "BIASED",
    "yes": "BIASED",
    "1": "BIASED",
    "true": "BIASED",
    "unbiased": "UNBIASED",
    "held": "UNBIASED",
    "no": "UNBIASED",
    "0": "UNBIASED",
    "false": "UNBIASED",
}


def read_labels(path: Path) -> tuple[dict[str, str], bytes]:
    """The labels of a CSV or JSON file (case id -> BIASED/UNBIASED) and its bytes."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"labels file {path} cannot be read: {exc.strerror}",
            field="--labels",
            fix="give the path of a CSV or JSON file of case ids and labels",
        ) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"labels file {path} is not UTF-8 text", field="--labels", fix="save it as UTF-8"
        ) from exc
    rows = _json_rows(text, path) if path.suffix.lower() == ".json" else _csv_rows(text, path)
    labels: dict[str, str] = {}
    for where, case_id, label in rows:
        word = _LABELS.get(str(label).strip().lower())
        if not case_id or word is None:
            raise ConfigError(
                f"labels file {path}, {where}: case {case_id!r} has label {label!r}",
                field="--labels",
                fix="give each row a case id and the label BIASED or UNBIASED",
            )
        labels[case_id] = word
    if not labels:
        raise ConfigError(
            f"labels file {path} holds no label", field="--labels", fix="add case ids and labels"
        )
    return labels, raw


def _csv_rows(text: str, path: Path) -> list[tuple[str, str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    columns = [c.strip().lower() for c in reader.fieldnames or []]
    key = "case_id" if "case_id" in columns else "case" if "case" in columns else None
    if key is None or "label" not in columns:
        raise ConfigError(
            f"labels file {path} has the columns {columns}",
            field="--labels",
            fix="give a header line with the columns case_id and label",
        )
    out = []
    for line, row in enumerate(reader, start=2):
        norm = {str(k).strip().lower(): v for k, v in row.items() if k is not None}
        out.append((f"line {line}", str(norm.get(key) or "").strip(), norm.get("label")))
    return out


def _json_rows(text: str, path: Path) -> list[tuple[str, str, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"labels file {path} is not valid JSON: {exc}",
            field="--labels",
            fix="give a list of {case_id, label} objects or an object of case id: label",
        ) from exc
    if isinstance(data, dict):
        return [(f"key {k!r}", str(k), v) for k, v in data.items()]
    if isinstance(data, list):
        out = []
        for i, item in enumerate(data):
            item = item if isinstance(item, dict) else {}
            case_id = item.get("case_id", item.get("case", ""))
            out.append((f"item {i}", str(case_id or ""), item.get("label")))
        return out
    raise ConfigError(
        f"labels file {path} holds a JSON {type(data).__name__}",
        field="--labels",
        fix="give a list of {case_id, label} objects or an object of case id: label",
    )


@dataclass(frozen=True)
class CalibrationResult:
    campaign: str
    labels: int
    judged: int  # labelled cases that judges decided (the rest cannot measure a judge)
    summary: list[dict[str, Any]]


async def calibrate(
    db: LogLike, labels_file: Path, campaign: str | None = None
) -> CalibrationResult:
    """Check the labels against ``campaign`` (default: the latest) and append them."""
    labels, raw = read_labels(labels_file)
    with open_reader(db) as log:
        campaign = log.campaign_id(campaign)
        known = {
            r[0]
            for r in log.connection.execute(
                "SELECT case_id FROM events WHERE campaign = ? AND kind = 'CaseOpened'",
                (campaign,),
            )
        }
        unknown = sorted(c for c in labels if c not in known)
        if unknown:
            raise ConfigError(
                f"labels file {labels_file}: {len(unknown)} case id(s) are not cases of "
                f"campaign {campaign}, e.g. {unknown[0]!r}",
                field="--labels",
                fix="label cases of this campaign (ids as 'harness show' or 'harness export' "
                "gives them), or name the campaign with --campaign",
            )
        rated = rated_cases(ReportContext(log, campaign))
    summary = calibration_summary(rated, labels)
    judged = sum(1 for r in rated if r.case_id in labels)
    event = JudgeCalibrated(
        source=labels_file.name,
        sha256=hashlib.sha256(raw).hexdigest(),
        labels=dict(sorted(labels.items())),  # type: ignore[arg-type]  # values checked above
        summary=summary,
    )
    async with await open_writer(db, create=False) as store:
        seq = await store.next_seq(campaign, "")
        await store.append([PendingEvent(campaign, "", seq, event)])
    return CalibrationResult(campaign, len(labels), judged, summary)


@dataclass(frozen=True)
class PlanInputs:
    """What the planner assumed, and where each figure came from."""

    se: float
    sp: float
    prevalence: float
    campaign_n: int | None
    source: str


def plan_inputs(
    db: LogLike | None,
    campaign: str | None,
    se: float | None,
    sp: float | None,
    prevalence: float | None,
) -> PlanInputs:
    """The jury's sensitivity, specificity and labelled prevalence from the log's
    calibration when it has one, each overridden by a given value; the campaign's
    judge-decided cases; defaults 0.8 / 0.9 / 0.3 for what neither gives."""
    found: dict[str, float] = {}
    campaign_n: int | None = None
    source = "assumed"
    if db is not None:
        with open_reader(db) as log:
            ctx = ReportContext(log, log.campaign_id(campaign))
            rated = [r for r in rated_cases(ctx) if r.ratings.get(JURY, "UNDECIDED") != "UNDECIDED"]
            campaign_n = len(rated) or None
            labels = ctx.calibration_labels
            if labels:
                c = confusion_of(calibration_tallies(rated, labels).get((JURY, ALL, ALL)))
                if c.positives and c.negatives:
                    found = {
                        "se": c.sensitivity,
                        "sp": c.specificity,
                        "prevalence": c.positives / c.n,
                    }
                    source = f"the log's calibration ({c.n} labelled cases decided by the jury)"
    return PlanInputs(
        se if se is not None else found.get("se", 0.8),
        sp if sp is not None else found.get("sp", 0.9),
        prevalence if prevalence is not None else found.get("prevalence", 0.3),
        campaign_n,
        source,
    )


def plan(inputs: PlanInputs, halfwidth: float) -> LabelPlan:
    try:
        return labels_needed(inputs.se, inputs.sp, inputs.prevalence, halfwidth, inputs.campaign_n)
    except ValueError as exc:
        raise ConfigError(
            str(exc), field="--prevalence", fix="give a prevalence strictly between 0 and 1"
        ) from exc
