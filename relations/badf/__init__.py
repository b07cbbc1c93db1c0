"""BADF: open-ended bias association discovery from generated stories (stories, concept
extraction, unification, significance per location category, exclusivity filter)."""

from pathlib import Path

from harness.registry import Family
from relations.badf.cli import group, import_badf
from relations.badf.relations import BadfExclusivity, BadfStory
from relations.badf.released import BadfReleased, build_released
from relations.badf.report import REPORT_SECTIONS
from relations.badf.sim import SIM_HANDLERS, BadfTruth

FAMILY = Family(
    name="badf",
    summary="bias associations discovered in generated stories: extraction, unification, "
    "distinctiveness and chi-squared per location category, exclusivity filter",
    relations=(BadfStory, BadfExclusivity, BadfReleased),
    report_sections=REPORT_SECTIONS,
    model_backends={"badf-released": build_released},  # imported findings: not callable
    importers=(import_badf,),
    sim_handlers=SIM_HANDLERS,
    sim_options=BadfTruth,
    commands=(group,),
    docs=Path(__file__).with_name("docs.md"),
)
