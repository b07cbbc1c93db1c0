"""BiasLens: role-play questions (Yes/No, Choice, Why) asked with and without a role, the
generation campaigns that write roles and questions, the authors' released answers."""

from pathlib import Path
from typing import Any

from harness.family_api import Deferred, Family, Lazy, package_attribute

# Parts by reference: describing the family imports none of them (harness.plugins.family_refs).
FAMILY = Family(
    name="biaslens",
    summary="role-play questions with and without a role; role and question generation",
    relations=(
        Lazy("biaslens.answer", "relations.biaslens.relations:BiasLensAnswer"),
        Lazy("biaslens.roles", "relations.biaslens.generate:GenerateRoles"),
        Lazy("biaslens.questions", "relations.biaslens.generate:GenerateQuestions"),
    ),
    report_sections=Deferred("relations.biaslens.report:REPORT_SECTIONS"),
    sim_handlers=Deferred("relations.biaslens.sim:SIM_HANDLERS"),
    sim_options=Deferred("relations.biaslens.sim:BiasLensTruth"),
    # imported answers: not callable
    model_backends={
        "released": Lazy("released", "relations.biaslens.released_backend:build_released")
    },
    commands=(Lazy("biaslens", "relations.biaslens.cli:group"),),
    importers=(Lazy("biaslens", "relations.biaslens.cli:import_biaslens"),),
    corpora=Deferred("relations.biaslens.corpus:CORPORA"),
    docs=Path(__file__).with_name("docs.md"),
)


def __getattr__(name: str) -> Any:
    # PEP 562: `from relations.biaslens import SomeRelation` still works, on first use.
    return package_attribute(
        __name__, [*FAMILY.relations, *FAMILY.commands, *FAMILY.importers], name
    )
