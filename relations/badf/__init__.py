"""BADF: open-ended bias association discovery from generated stories (stories, concept
extraction, unification, significance per location category, exclusivity filter)."""

from pathlib import Path
from typing import Any

from harness.family_api import Deferred, Family, Lazy, package_attribute

# Parts by reference: describing the family imports none of them (harness.plugins.family_refs).
FAMILY = Family(
    name="badf",
    summary="bias associations discovered in generated stories: extraction, unification, "
    "distinctiveness and chi-squared per location category, exclusivity filter",
    relations=(
        Lazy("badf.story", "relations.badf.relations:BadfStory"),
        Lazy("badf.exclusivity", "relations.badf.relations:BadfExclusivity"),
        Lazy("badf.released", "relations.badf.released:BadfReleased"),
    ),
    report_sections=Deferred("relations.badf.report:REPORT_SECTIONS"),
    # imported findings: not callable
    model_backends={
        "badf-released": Lazy("badf-released", "relations.badf.released:build_released")
    },
    importers=(Lazy("badf", "relations.badf.cli:import_badf"),),
    sim_handlers=Deferred("relations.badf.sim:SIM_HANDLERS"),
    sim_options=Deferred("relations.badf.sim:BadfTruth"),
    commands=(Lazy("badf", "relations.badf.cli:group"),),
    corpora=Deferred("relations.badf.corpus:CORPORA"),
    docs=Path(__file__).with_name("docs.md"),
)


def __getattr__(name: str) -> Any:
    # PEP 562: `from relations.badf import SomeRelation` still works, on first use.
    return package_attribute(
        __name__, [*FAMILY.relations, *FAMILY.commands, *FAMILY.importers], name
    )
