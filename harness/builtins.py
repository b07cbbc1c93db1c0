"""The core's own contributions, registered like any family's: model backends, the report
sections every family shares, and the CLI commands. Found through the ``core`` entry point,
so one registry with one duplicate rule holds everything (a family cannot silently replace
``sim:`` or ``harness run``)."""

from __future__ import annotations

from collections.abc import Callable

from harness.models.batch import BatchClient, register_batch_client
from harness.plugins.family_refs import Deferred, Lazy
from harness.plugins.registry import Family
from harness.vocabulary.model import ModelSpec

# By reference, like any family's parts: a command imports only the modules it runs.
CORE = Family(
    name="core",
    summary="the harness itself: sim, local, vendor, replay, http and python models; shared "
    "report sections",
    model_backends={
        "sim": Lazy("sim", "harness.models.sim:build_sim"),
        "local": Lazy("local", "harness.models.local:build_local"),
        "replay": Lazy("replay", "harness.verifying.replay:build_replay"),
        # The vendor SDKs take seconds to import: loaded when a vendor model is first built.
        "openai": Lazy("openai", "harness.models.providers:build_openai"),
        "openai-compat": Lazy("openai-compat", "harness.models.providers:build_openai_compat"),
        "anthropic": Lazy("anthropic", "harness.models.providers:build_anthropic"),
        "google": Lazy("google", "harness.models.providers:build_gemini"),
        # An application under test (docs/targets.md): its HTTP endpoint, its Python function.
        "http": Lazy("http", "harness.models.providers:build_http"),
        "python": Lazy("python", "harness.models.python_target:build_python"),
    },
    report_sections=Deferred(
        "harness.reporting.report:CORE_SECTIONS",
        "harness.reporting.judge_agreement:JUDGE_SECTIONS",
        "harness.reporting.excess:EXCESS_SECTIONS",
        "harness.reporting.judge_calibration:CALIBRATION_SECTIONS",
        "harness.plugins.label_section:LABEL_SECTIONS",
    ),
    commands=(
        Lazy("run", "harness.cli.commands.run:command"),
        Lazy("plan", "harness.cli.commands.plan:command"),
        Lazy("resume", "harness.cli.commands.resume:command"),
        Lazy("replay", "harness.cli.commands.replay:command"),
        Lazy("rejudge", "harness.cli.commands.rejudge:command"),
        Lazy("judges", "harness.cli.commands.judges:group"),
        Lazy("report", "harness.cli.commands.report:command"),
        Lazy("compare", "harness.cli.commands.compare:command"),
        Lazy("check", "harness.cli.commands.check:command"),
        Lazy("show", "harness.cli.commands.show:command"),
        Lazy("export", "harness.cli.commands.export:command"),
        Lazy("copy", "harness.cli.commands.copy:command"),
        Lazy("worker", "harness.cli.commands.worker:command"),
        Lazy("import", "harness.cli.commands.importers:group"),
        Lazy("cache", "harness.cli.commands.cache:group"),
        Lazy("campaigns", "harness.cli.commands.campaigns:command"),
        Lazy("relations", "harness.cli.commands.relations:command"),
        Lazy("corpora", "harness.cli.commands.corpora:command"),
        Lazy("new-family", "harness.cli.commands.new_family:command"),
    ),
)


# The vendors' batch APIs (harness.models.batch, docs/vendors.md "Batch APIs"), imported like
# their direct backends on first use; ``openai-compat`` servers have none.
_BATCH_CLIENTS = (
    Lazy("openai", "harness.models.providers:build_openai_batch"),
    Lazy("anthropic", "harness.models.providers:build_anthropic_batch"),
    Lazy("google", "harness.models.providers:build_gemini_batch"),
)


def _batch_factory(ref: Lazy) -> Callable[[ModelSpec], BatchClient]:
    def build(spec: ModelSpec) -> BatchClient:
        client: BatchClient = ref.load(f"the {ref.name} batch client")(spec)
        return client

    return build


for _ref in _BATCH_CLIENTS:
    register_batch_client(_ref.name, _batch_factory(_ref))
