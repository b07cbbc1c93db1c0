"""Meta-Fair: metamorphic tests of a request asked with and without a demographic attribute
(MR1-MR10 judged by a jury of LLM judges; MR11-MR14 by deterministic oracles; test
generation by a model)."""

from pathlib import Path
from typing import Any

from harness.family_api import Deferred, Family, Lazy, package_attribute

# Parts by reference: describing the family imports none of them (harness.plugins.family_refs).
FAMILY = Family(
    name="metafair",
    summary="requests with and without a demographic attribute: MR1-MR10 judged, "
    "MR11-MR14 closed answers, and LLM-written tests (metafair.generate)",
    relations=(
        Lazy("metafair.mr1", "relations.metafair.open.relations:MR1"),
        Lazy("metafair.mr2", "relations.metafair.open.relations:MR2"),
        Lazy("metafair.mr3", "relations.metafair.open.relations:MR3"),
        Lazy("metafair.mr4", "relations.metafair.open.relations:MR4"),
        Lazy("metafair.mr5", "relations.metafair.open.relations:MR5"),
        Lazy("metafair.mr6", "relations.metafair.open.relations:MR6"),
        Lazy("metafair.mr7", "relations.metafair.open.relations:MR7"),
        Lazy("metafair.mr8", "relations.metafair.open.relations:MR8"),
        Lazy("metafair.mr9", "relations.metafair.open.relations:MR9"),
        Lazy("metafair.mr10", "relations.metafair.open.relations:MR10"),
        Lazy("metafair.mr11", "relations.metafair.closed.relations:ScoreRelation"),
        Lazy("metafair.mr12", "relations.metafair.closed.relations:YesNoRelation"),
        Lazy("metafair.mr13", "relations.metafair.closed.relations:ChoiceRelation"),
        Lazy("metafair.mr14", "relations.metafair.closed.relations:RankingRelation"),
        Lazy("metafair.generate", "relations.metafair.generation.generate:GenerateTests"),
    ),
    report_sections=Deferred(
        "relations.metafair.report:REPORT_SECTIONS",
        "relations.metafair.closed.report:REPORT_SECTIONS",
        "relations.metafair.generation.report:REPORT_SECTIONS",
    ),
    sim_handlers=Deferred(
        "relations.metafair.sim:SIM_HANDLERS",
        "relations.metafair.closed.sim:SIM_HANDLERS",
        "relations.metafair.generation.sim:SIM_HANDLERS",
    ),
    commands=(Lazy("metafair", "relations.metafair.cli:group"),),
    sim_options=Deferred("relations.metafair.sim:MetaFairTruth"),
    judge_rubric=Lazy("metafair", "relations.metafair.judges.rejudge_rubric:RUBRIC"),
    # imported answers: not callable
    model_backends={
        "recorded": Lazy("recorded", "relations.metafair.importing.importer:build_recorded")
    },
    importers=(Lazy("metafair", "relations.metafair.importing.importer:import_metafair"),),
    corpora=Deferred("relations.metafair.corpus:CORPORA"),
    docs=Path(__file__).with_name("docs.md"),
)


def __getattr__(name: str) -> Any:
    # PEP 562: `from relations.metafair import SomeRelation` still works, on first use.
    return package_attribute(
        __name__, [*FAMILY.relations, *FAMILY.commands, *FAMILY.importers], name
    )
