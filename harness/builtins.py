"""The core's own contributions, registered like any family's: model backends, the report
sections every family shares, and the CLI commands. Found through the ``core`` entry point,
so one registry with one duplicate rule holds everything (a family cannot silently replace
``sim:`` or ``harness run``)."""

from __future__ import annotations

from harness.commands import (
    cache,
    campaigns,
    copy,
    corpora,
    export,
    importers,
    rejudge,
    relations,
    replay,
    report,
    resume,
    run,
    show,
    worker,
)
from harness.judge_agreement import JUDGE_SECTIONS
from harness.local import build_local
from harness.providers import VENDOR_BACKENDS
from harness.registry import Family
from harness.replay import build_replay
from harness.report import CORE_SECTIONS
from harness.sim import build_sim

CORE = Family(
    name="core",
    summary="the harness itself: sim, local, vendor and replay models; shared report sections",
    model_backends={
        "sim": build_sim,
        "local": build_local,
        "replay": build_replay,
        **VENDOR_BACKENDS,
    },
    report_sections=(*CORE_SECTIONS, *JUDGE_SECTIONS),
    commands=(
        run.command,
        resume.command,
        replay.command,
        rejudge.command,
        report.command,
        show.command,
        export.command,
        copy.command,
        worker.command,
        importers.group,
        cache.group,
        campaigns.command,
        relations.command,
        corpora.command,
    ),
)
