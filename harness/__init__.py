"""bias-harness as a library: run, resume, verify, re-judge and report campaigns from Python.

    import harness

    summary = harness.run("sim", "sim.db")        # a TOML path, an embedded name, a dict
    print(summary.status, summary.outcomes)        #   or a CampaignConfig
    for table in harness.report_tables("sim.db"):  # the same tables as `harness report`
        print(table.title, table.rows[:3])
    assert not harness.verify("sim.db").differences  # offline replay, no network
    harness.rejudge_campaign("sim.db", "sim:judge")  # verdicts by another model
    harness.resume("crashed.db")                   # after kill -9 or Ctrl-C

The functions block until done (they run their own event loop); inside a running loop use
the coroutines `run_campaign`, `resume_campaign` and `rejudge` of `harness.running.runner` and
`harness.verifying.rejudge`. Everything they raise on purpose is a `HarnessError`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.vocabulary.errors import ConfigError, HarnessError

if TYPE_CHECKING:
    from harness.plugins.family_parts import families, relation_classes
    from harness.plugins.registry import Family
    from harness.reporting.tables import Table
    from harness.running.campaign import CampaignConfig
    from harness.running.engine import ProgressSink, RunSummary
    from harness.store.log import LogLike
    from harness.store.reader import EventReader
    from harness.verifying.rejudge import RejudgeSummary
    from harness.verifying.replay import VerifyResult
    from harness.vocabulary.relation import Ask, Case, Outcome, RelationBase, Transcript, Verdict

# Where each re-exported name lives. They are imported on first use (PEP 562), not with the
# package: every `harness` command imports this package first, and the engine, the cache and
# the event models it would pull in cost a report or `--help` over half a second of start-up.
_LAZY = {
    "CampaignConfig": "harness.running.campaign",
    "ProgressSink": "harness.running.engine",
    "RunSummary": "harness.running.engine",
    "Family": "harness.plugins.registry",
    "families": "harness.plugins.family_parts",
    "relation_classes": "harness.plugins.family_parts",
    "RejudgeSummary": "harness.verifying.rejudge",
    "Ask": "harness.vocabulary.relation",
    "Case": "harness.vocabulary.relation",
    "Outcome": "harness.vocabulary.relation",
    "RelationBase": "harness.vocabulary.relation",
    "Transcript": "harness.vocabulary.relation",
    "Verdict": "harness.vocabulary.relation",
    "VerifyResult": "harness.verifying.replay",
    "EventReader": "harness.store.reader",
    "Table": "harness.reporting.tables",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


__all__ = [
    "Ask",
    "CampaignConfig",
    "Case",
    "ConfigError",
    "EventReader",
    "Family",
    "HarnessError",
    "Outcome",
    "RejudgeSummary",
    "RelationBase",
    "RunSummary",
    "Table",
    "Transcript",
    "Verdict",
    "VerifyResult",
    "campaign_config",
    "families",
    "rejudge_campaign",
    "relation_classes",
    "report_tables",
    "report_text",
    "resume",
    "run",
    "verify",
]


def campaign_config(campaign: str | Path | Mapping[str, Any] | CampaignConfig) -> CampaignConfig:
    """A validated campaign: a TOML file, an embedded name (``demo``, ``sim``), the TOML's
    contents as a dict, or a `CampaignConfig` as is."""
    from harness.running.campaign import (
        CampaignConfig,
        load_campaign,
        parse_campaign,
        resolve_campaign,
    )

    if isinstance(campaign, CampaignConfig):
        return campaign
    if isinstance(campaign, Mapping):
        return parse_campaign(dict(campaign), source="campaign (Python)")
    if isinstance(campaign, Path):
        return load_campaign(campaign)
    return resolve_campaign(campaign)[0]


def run(
    campaign: str | Path | Mapping[str, Any] | CampaignConfig,
    db: LogLike,
    *,
    reuse: Iterable[str | Path] = (),
    progress: ProgressSink | None = None,
) -> RunSummary:
    """Run a campaign to the end, logging every turn in ``db``; answers recorded in the
    ``reuse`` logs are not paid again."""
    import asyncio

    from harness.running.cache import open_cache
    from harness.running.runner import run_campaign
    from harness.store.log import Log

    log = Log.at(db, field="db")
    config = campaign_config(campaign)
    cache = open_cache(tuple(str(p) for p in reuse))
    return asyncio.run(run_campaign(config, log, progress=progress, cache=cache))


def resume(
    db: LogLike,
    *,
    campaign: str | None = None,
    spend_ceiling_usd: float | None = None,
    reuse: Iterable[str | Path] = (),
    progress: ProgressSink | None = None,
) -> RunSummary:
    """Continue an interrupted campaign of ``db`` (default: the latest); recorded replies
    are never paid again."""
    import asyncio

    from harness.running.cache import open_cache
    from harness.running.runner import resume_campaign
    from harness.store.log import Log

    log = Log.at(db, field="db")
    updates = {} if spend_ceiling_usd is None else {"limits.spend_ceiling_usd": spend_ceiling_usd}
    cache = open_cache(tuple(str(p) for p in reuse))
    if log.is_postgres:  # leases each case, as a worker: workers may run beside it
        from harness.running.worker import resume_with_leases  # psycopg only when a log is there

        return asyncio.run(
            resume_with_leases(
                log, campaign=campaign, config_updates=updates, progress=progress, cache=cache
            )
        )
    return asyncio.run(
        resume_campaign(
            log, campaign=campaign, config_updates=updates, progress=progress, cache=cache
        )
    )


def verify(db: LogLike, *, campaign: str | None = None) -> VerifyResult:
    """Replay a campaign offline and list every ask or verdict today's code computes
    differently (``.differences`` is empty when nothing changed)."""
    from harness.store.log import Log
    from harness.verifying.replay import verify_log

    return verify_log(Log.at(db, field="db"), campaign)


def rejudge_campaign(
    db: LogLike,
    judge: str,
    *,
    campaign: str | None = None,
    options: Mapping[str, object] | None = None,
    limit: int | None = None,
    answer_format: Literal["free", "structured"] | None = None,
) -> RejudgeSummary:
    """Ask the model ``judge`` (e.g. ``"sim:judge"``) about every closed case; its verdicts
    are appended beside the relation's own."""
    import asyncio

    from harness.store.log import Log
    from harness.verifying.rejudge import judge_spec
    from harness.verifying.rejudge import rejudge as _rejudge

    log = Log.at(db, field="db")
    spec = judge_spec(judge, dict(options or {}), answer_format=answer_format)
    return asyncio.run(_rejudge(log, spec, campaign=campaign, limit=limit))


def report_tables(db: LogLike, *, campaign: str | None = None, **options: Any) -> list[Table]:
    """Every report table of a campaign (default: the latest in ``db``), after the header
    table ``campaign`` (name, id, times, status, cases closed of planned, models, seed)."""
    from harness.plugins.assembly import build_report
    from harness.reporting.campaign_status import report_header
    from harness.store.log import Log

    with Log.at(db, field="db").reader() as log:
        return [*report_header(log, campaign), *build_report(log, campaign, **options)]


def report_text(
    db: LogLike, *, format: str = "json", campaign: str | None = None, **options: Any
) -> str:
    """The report as ``json`` or ``csv`` text, exactly as ``harness report --format``."""
    from harness.reporting.report import to_csv, to_json

    render = {"json": to_json, "csv": to_csv}.get(format)
    if render is None:
        raise ConfigError(
            f"unknown report format {format!r}", field="format", fix="use json or csv"
        )
    return render(report_tables(db, campaign=campaign, **options))
