"""The core's own contributions, registered like any family's: model backends, the report
sections every family shares, and the CLI commands. Found through the ``core`` entry point,
so one registry with one duplicate rule holds everything (a family cannot silently replace
``sim:`` or ``harness run``)."""

from __future__ import annotations

from harness.family_refs import Deferred, Lazy
from harness.registry import Family

# By reference, like any family's parts: a command imports only the modules it runs.
CORE = Family(
    name="core",
    summary="the harness itself: sim, local, vendor and replay models; shared report sections",
    model_backends={
        "sim": Lazy("sim", "harness.sim:build_sim"),
        "local": Lazy("local", "harness.local:build_local"),
        "replay": Lazy("replay", "harness.replay:build_replay"),
        # The vendor SDKs take seconds to import: loaded when a vendor model is first built.
        "openai": Lazy("openai", "harness.providers._openai:build_openai"),
        "openai-compat": Lazy("openai-compat", "harness.providers._openai:build_openai_compat"),
        "anthropic": Lazy("anthropic", "harness.providers._anthropic:build_anthropic"),
        "google": Lazy("google", "harness.providers._google:build_gemini"),
    },
    report_sections=Deferred(
        "harness.report:CORE_SECTIONS", "harness.judge_agreement:JUDGE_SECTIONS"
    ),
    commands=(
        Lazy("run", "harness.commands.run:command"),
        Lazy("resume", "harness.commands.resume:command"),
        Lazy("replay", "harness.commands.replay:command"),
        Lazy("rejudge", "harness.commands.rejudge:command"),
        Lazy("report", "harness.commands.report:command"),
        Lazy("show", "harness.commands.show:command"),
        Lazy("export", "harness.commands.export:command"),
        Lazy("copy", "harness.commands.copy:command"),
        Lazy("worker", "harness.commands.worker:command"),
        Lazy("import", "harness.commands.importers:group"),
        Lazy("cache", "harness.commands.cache:group"),
        Lazy("campaigns", "harness.commands.campaigns:command"),
        Lazy("relations", "harness.commands.relations:command"),
        Lazy("corpora", "harness.commands.corpora:command"),
    ),
)
