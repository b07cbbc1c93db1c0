"""What state each campaign of a log is in, read from its lifecycle events: the header of
every report, ``harness campaigns DB``, and the checks of ``run`` (a log that already holds
a campaign) and ``resume`` (an import is never resumed).

A campaign's status is one of:

- ``completed``: it finished and closed every planned case;
- ``stopped``: stopped by a signal or the spending ceiling (resumable);
- ``aborted``: a vendor error stopped it (resumable once fixed);
- ``unfinished``: no end was recorded after its last start (a crash, a kill, or a run still
  going), or it ended with fewer cases closed than planned, or with cases failed,
  retryable (a vendor's transient failures outlasted ``max_attempts``: `retryable_cases`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.reporting.sequential import method_name
from harness.reporting.tables import REJUDGE_TOPIC, Table
from harness.store.reader import EventReader
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.events import (
    CampaignFinished,
    CampaignResumed,
    CampaignStarted,
    Note,
    StoppingLook,
)

# An importer of released data marks its campaign with a Note of this topic (or, in logs
# written before it existed, of a topic "<family>.import").
IMPORT_TOPIC = "campaign.import"


def is_import_topic(topic: str) -> bool:
    return topic == IMPORT_TOPIC or topic.endswith(".import")


@dataclass
class CampaignStatus:
    campaign: str
    name: str
    status: str = "unfinished"
    reason: str = ""
    started_at: float = 0.0
    finished_at: float | None = None
    planned: int | None = None
    opened: int = 0
    closed: int = 0
    retryable: int = 0  # open cases whose turn is failed, retryable (AskFailed "suspend")
    imported_from: str | None = None  # set for a campaign written by an importer
    import_command: str = ""
    started: CampaignStarted | None = field(default=None, repr=False)
    # Re-judging runs whose judge was a subject of the campaign: (judge, subject).
    self_rejudged: list[tuple[str, str]] = field(default_factory=list)
    # A campaign that stops when decided: every look, and the planned cases never opened
    # because their relation was decided (not lost: not drawn).
    looks: list[StoppingLook] = field(default_factory=list, repr=False)
    not_drawn: int = 0

    @property
    def cases(self) -> str:
        """``closed of planned`` (planned unknown: closed of opened)."""
        planned = self.planned if self.planned else None
        return f"{self.closed} of {planned if planned is not None else self.opened}"


def iso_time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso8601(ts: float | None) -> str | None:
    """A time as ISO 8601 in UTC (``2026-11-28T00:15:02Z``), for machine readers; None
    for no time."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _count(log: EventReader, campaign: str, kind: str) -> int:
    sql = "SELECT COUNT(*) FROM events WHERE campaign = ? AND kind = ?"
    return int(log.connection.execute(sql, (campaign, kind)).fetchone()[0])


# Open cases with a turn suspended (transient failures past max_attempts) and not sent
# again since: nothing closed them, nothing later of that turn was written.
_RETRYABLE_SQL = (
    "SELECT COUNT(DISTINCT e.case_id) FROM events e"
    " WHERE e.campaign = ? AND e.kind = 'AskFailed'"
    " AND json_extract(e.payload, '$.decision') = 'suspend'"
    " AND NOT EXISTS (SELECT 1 FROM events x WHERE x.campaign = e.campaign"
    " AND x.case_id = e.case_id AND x.seq > e.seq AND (x.kind = 'CaseClosed'"
    " OR (x.turn = e.turn AND x.kind IN ('AskSent', 'ReplyReceived'))))"
)


def retryable_cases(log: EventReader, campaign: str) -> int:
    """Cases of ``campaign`` left failed, retryable: a vendor outage is not a verdict, so
    they are open, and `harness resume` sends their turns again."""
    return int(log.connection.execute(_RETRYABLE_SQL, (campaign,)).fetchone()[0])


def paid_replies(log: EventReader, campaign: str) -> int:
    """The campaign's recorded replies that were paid for (not served from a cache). Not
    part of the status: it reads every reply's payload (a quarter of a second on 100,000
    replies), and only the HTML header and `harness run`'s refusal show it."""
    sql = (
        "SELECT COUNT(*) FROM events WHERE campaign = ? AND kind = 'ReplyReceived'"
        # JSON false is 0 in SQLite and 'false' in PostgreSQL: compared as text, both stores.
        " AND COALESCE(CAST(json_extract(payload, '$.cached') AS TEXT), '0') IN ('0', 'false')"
    )
    return int(log.connection.execute(sql, (campaign,)).fetchone()[0])


def campaign_statuses(log: EventReader) -> list[CampaignStatus]:
    """Every campaign of the log, oldest first.

    Read campaign by campaign, so every query finds its rows through the (campaign, kind)
    index: the lifecycle events of all campaigns at once, by kind alone, were a scan of the
    whole events table (4.7 GB at six BiasLens models) for a few dozen rows."""
    found: dict[str, CampaignStatus] = {}
    kinds = ("CampaignStarted", "CampaignResumed", "CampaignFinished", "Note", "StoppingLook")
    for cid, _ in log.campaigns():  # oldest first
        status: CampaignStatus | None = None
        for stored in log.events(cid, kinds=kinds):
            ev = stored.event
            if isinstance(ev, CampaignStarted):
                status = found[cid] = CampaignStatus(
                    cid, ev.name, started_at=stored.ts, planned=ev.planned_cases, started=ev
                )
            elif status is None:
                continue
            elif isinstance(ev, CampaignResumed):
                # A resume reopens the campaign: only an end recorded after it counts.
                status.status, status.reason, status.finished_at = "unfinished", "", None
            elif isinstance(ev, CampaignFinished):
                status.status, status.reason = ev.status, ev.reason
                status.finished_at = stored.ts
            elif isinstance(ev, StoppingLook):
                status.looks.append(ev)
            elif isinstance(ev, Note) and ev.topic == REJUDGE_TOPIC and ev.data.get("self_judging"):
                pair = (str(ev.data.get("judge")), str(ev.data["self_judging"]))
                if pair not in status.self_rejudged:
                    status.self_rejudged.append(pair)
            elif isinstance(ev, Note) and is_import_topic(ev.topic):
                status.imported_from = str(ev.data.get("source", "")) or "?"
                status.import_command = str(ev.data.get("command", ""))
        if status is None:
            continue
        status.opened = _count(log, cid, "CaseOpened")
        status.closed = _count(log, cid, "CaseClosed")
        if status.closed < status.opened:
            status.retryable = retryable_cases(log, cid)
    for status in found.values():
        if status.finished_at is None:
            status.reason = (
                "the import was interrupted" if status.imported_from else "no end recorded"
            ) + " (killed, crashed, or still running)"
        elif (
            status.status == "completed"
            and status.planned
            and any(stopped_by(status, x) for x in status.looks)
            and status.closed == status.opened
        ):
            # A completed run walked the whole plan: what it did not open, a decision skipped.
            status.not_drawn = status.planned - status.opened
        elif status.status == "completed" and status.planned and status.closed < status.planned:
            status.status = "unfinished"
            status.reason = f"{status.planned - status.closed} planned cases not closed"
        if status.retryable:
            status.status = "unfinished" if status.status == "completed" else status.status
            status.reason = (
                f"{status.reason}; " if status.reason else ""
            ) + f"{status.retryable} cases failed, retryable (run harness resume)"
    return list(found.values())


def campaign_status(log: EventReader, campaign: str | None = None) -> CampaignStatus:
    wanted = log.campaign_id(campaign)
    return next(s for s in campaign_statuses(log) if s.campaign == wanted)


def refuse_resume_of_import(log: EventReader, campaign: str | None = None) -> None:
    """An import writes recorded answers, it calls no model: resuming its campaign would run
    a plan it never had and mark a partial import "completed". It is imported again."""
    # The campaign's own Notes (an index lookup) say whether it is an import; the full
    # status, which counts every campaign's cases, is only needed for the refusal.
    wanted = log.campaign_id(campaign)
    notes = log.events(wanted, kinds=("Note",))
    if not any(isinstance(n.event, Note) and is_import_topic(n.event.topic) for n in notes):
        return
    status = campaign_status(log, wanted)
    if status.imported_from is None:
        return
    state = status.status + (f" ({status.reason})" if status.reason else "")
    raise ConfigError(
        f"campaign {status.campaign} of {log.path} is an import of {status.imported_from}, "
        f"{state}, {status.closed} answers imported; an import is not resumed",
        field="resume",
        fix=(status.import_command or "run the import again") + " (a new log)",
    )


def model_parameters(started: CampaignStarted | None) -> list[dict[str, Any]]:
    """Each model and judge with what it was called with: ``name``, ``role`` (model or
    judge), ``params`` (the campaign's defaults under its own parameters) and ``options``
    (its backend options), as the campaign recorded them, and ``system``, ``template`` and
    ``prefix`` when the model has them (what an application wraps around the relation's
    prompts, docs/targets.md)."""
    if started is None:
        return []
    config: dict[str, Any] = started.config
    defaults = {k: v for k, v in (config.get("defaults") or {}).items() if v is not None}
    out = []
    for role, key in (("model", "models"), ("judge", "judges")):
        for spec in config.get(key) or []:
            params = dict(defaults)
            params.update({k: v for k, v in (spec.get("params") or {}).items() if v is not None})
            entry: dict[str, Any] = {
                "name": spec.get("name", "?"),
                "role": role,
                "params": dict(sorted(params.items())),
                "options": dict(sorted((spec.get("options") or {}).items())),
            }
            entry.update({k: spec[k] for k in _WRAPPING if spec.get(k)})
            out.append(entry)
    return out


_WRAPPING = ("system", "template", "prefix")


def effective_models(started: CampaignStarted | None) -> list[str]:
    """Each model with the parameters it was called with, one line each (`model_parameters`
    in words)."""
    out = []
    for model in model_parameters(started):
        parts = [f"{k}={json.dumps(v)}" for k, v in model["params"].items()]
        parts += [f"{k}={json.dumps(v)}" for k, v in model["options"].items()]
        parts += [
            f"{k}={_shortened(json.dumps(model[k], ensure_ascii=False))}"
            for k in _WRAPPING
            if k in model
        ]
        label = model["name"] + (" (judge)" if model["role"] == "judge" else "")
        out.append(f"{label}: {', '.join(parts) or 'backend defaults'}")
    return out


def _shortened(text: str, most: int = 120) -> str:
    """``text`` cut to ``most`` characters (a system prompt may be pages long)."""
    return text if len(text) <= most else text[: most - 1] + "…"


def self_judging_lines(started: CampaignStarted | None) -> list[str]:
    """Each judge of the campaign that is also one of its subjects (same backend and model):
    its verdicts grade its own answers (``allow_self_judging``)."""
    if started is None:
        return []
    config: dict[str, Any] = started.config

    def target(spec: dict[str, Any]) -> str:
        return str(spec.get("backend") or spec.get("name", ""))

    subjects = {target(m): str(m.get("name")) for m in config.get("models") or []}
    return [
        f"judges[{i}] {j.get('name')!r} is the subject {subjects[target(j)]!r} "
        f"({target(j)}): it graded its own answers (allow_self_judging)"
        for i, j in enumerate(config.get("judges") or [])
        if target(j) in subjects
    ]


def header_table(status: CampaignStatus) -> Table:
    """The header every report starts with: which campaign, when, in what state, how far."""
    started = status.started
    rows: list[list[Any]] = [
        ["campaign", status.name],
        ["id", status.campaign],
        ["started", iso_time(status.started_at)],
        ["finished", iso_time(status.finished_at)],
        ["status", status.status + (f": {status.reason}" if status.reason else "")],
        ["cases closed", status.cases],
    ]
    if status.retryable:
        rows.append(["failed, retryable", status.retryable])
    if status.imported_from:
        rows.append(["imported from", status.imported_from])
    rows.extend(["model", line] for line in effective_models(started))
    rows.extend(["self-judging", line] for line in self_judging_lines(started))
    rows.extend(
        ["self-judging", f"re-judge judge:{judge} is the subject {subject!r}: it graded its own "
         "answers (--allow-self-judging)"]
        for judge, subject in status.self_rejudged
    )  # fmt: skip
    rows.extend(["stopping", line] for line in stopping_lines(status))
    rows.append(["seed", started.config.get("seed") if started else None])
    rows.append(["code version", started.code_version if started else None])
    rows.append(["harness version", started.harness_version if started else None])
    return Table("campaign", "Campaign", ["field", "value"], rows, fields=header_fields(status))


def header_fields(status: CampaignStatus) -> dict[str, Any]:
    """The header as typed fields, for the JSON report: counts are integers, times ISO 8601
    (UTC) or null, each model's parameters an object (docs/report.md lists them)."""
    started = status.started
    return {
        "name": status.name,
        "id": status.campaign,
        "status": status.status,
        "reason": status.reason,
        "started": iso8601(status.started_at),
        "finished": iso8601(status.finished_at),
        "cases_planned": status.planned or None,
        "cases_opened": status.opened,
        "cases_closed": status.closed,
        "cases_retryable": status.retryable,
        "imported_from": status.imported_from,
        "models": model_parameters(started),
        "self_judging": [
            *self_judging_lines(started),
            *(
                f"re-judge judge:{judge} is the subject {subject!r}: it graded its own answers"
                for judge, subject in status.self_rejudged
            ),
        ],
        "seed": started.config.get("seed") if started else None,
        # The order cases ran in (a log recorded without it ran in file order); an import
        # ran nothing.
        "order": (
            (started.config.get("order") or "file")
            if started and not status.imported_from
            else None
        ),
        "code_version": started.code_version if started else None,
        "harness_version": started.harness_version if started else None,
        **stopping_fields(status),
    }


def _stopping_config(status: CampaignStatus) -> dict[str, Any] | None:
    started = status.started
    spec = started.config.get("stopping") if started else None
    return spec if isinstance(spec, dict) else None


def stopped_by(status: CampaignStatus, look: StoppingLook) -> bool:
    """True when this look stopped its relation (its decision is one the campaign stops on)."""
    spec = _stopping_config(status) or {}
    return look.decision in spec.get("stop_on", ["effect", "no_effect"])


def stopping_lines(status: CampaignStatus) -> list[str]:
    """The header's lines of a campaign that stops when decided (none for the others): the
    method and its settings, then each relation's decision and where it was reached."""
    spec = _stopping_config(status)
    if spec is None:
        return []
    looks = status.looks
    alpha = looks[0].alpha if looks else None
    lines = [
        f"{method_name(spec.get('method'))}: a look every {spec.get('look_every')} closed "
        "cases of a relation "
        f"and model, alpha {spec.get('alpha')}"
        + (f" ({alpha:.4g} each)" if alpha is not None else "")
        + f", smallest effect {spec.get('smallest_effect')}; {len(looks)} looks"
    ]
    decided = [x for x in looks if stopped_by(status, x)]
    for x in decided:
        what = "an effect" if x.decision == "effect" else "no effect that large"
        lines.append(
            f"{x.relation} on {x.model}: {what} at look {x.look} ({x.cases} cases, {x.pairs} "
            f"pairs; excess {x.excess:+.3f} [{x.low:+.3f}, {x.high:+.3f}]); its later cases "
            "not drawn"
        )
    if status.not_drawn:
        lines.append(f"{status.not_drawn} planned cases not drawn (their relation was decided)")
    return lines


def stopping_fields(status: CampaignStatus) -> dict[str, Any]:
    """The JSON header's ``stopping`` (only for a campaign that stops when decided)."""
    spec = _stopping_config(status)
    if spec is None:
        return {}
    return {
        "stopping": {
            **spec,
            "method_name": method_name(spec.get("method")),
            "cases_not_drawn": status.not_drawn,
            "looks": [x.model_dump(mode="json", exclude={"kind"}) for x in status.looks],
        }
    }


def report_header(log: EventReader, campaign: str | None = None) -> list[Table]:
    """The header table of ``campaign``'s report (a list, to prepend to the sections)."""
    return [header_table(campaign_status(log, campaign))]


def campaigns_table(log: EventReader, *, typed: bool = False) -> Table:
    """``harness campaigns``: one row per campaign of the log. ``typed`` (JSON and CSV):
    the counts as integers in their own columns, the times ISO 8601 (UTC) or null, as the
    JSON report's header (`header_fields`) has them, in place of "2 of 6"."""
    statuses = campaign_statuses(log)
    if typed:
        columns = ["id", "name", "started", "finished", "status", "reason", "cases_planned",
                   "cases_opened", "cases_closed", "cases_retryable", "imported_from"]  # fmt: skip
        rows = [
            [s.campaign, s.name, iso8601(s.started_at), iso8601(s.finished_at), s.status,
             s.reason, s.planned or None, s.opened, s.closed, s.retryable, s.imported_from]
            for s in statuses
        ]  # fmt: skip
        return Table("campaigns", f"Campaigns in {log.path}", columns, rows)
    rows = [
        [s.campaign, s.name, iso_time(s.started_at), s.status, s.cases, s.reason] for s in statuses
    ]
    return Table(
        "campaigns",
        f"Campaigns in {log.path}",
        ["id", "name", "started", "status", "cases closed", "note"],
        rows,
    )
