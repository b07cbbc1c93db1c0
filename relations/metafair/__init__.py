"""Meta-Fair: metamorphic tests of a request asked with and without a demographic attribute
(MR1-MR10 judged by a jury of LLM judges; MR11-MR14 by deterministic oracles; test
generation by a model)."""

from pathlib import Path

from harness.registry import Family
from relations.metafair.cli import group
from relations.metafair.closed import CLOSED_RELATIONS
from relations.metafair.closed_report import REPORT_SECTIONS as CLOSED_REPORT_SECTIONS
from relations.metafair.closed_sim import SIM_HANDLERS as CLOSED_SIM_HANDLERS
from relations.metafair.generate import GenerateTests
from relations.metafair.generation_report import REPORT_SECTIONS as GENERATION_REPORT_SECTIONS
from relations.metafair.generation_sim import SIM_HANDLERS as GENERATION_SIM_HANDLERS
from relations.metafair.importer import build_recorded, import_metafair
from relations.metafair.open_relations import MR1, MR2, MR3, MR4, MR5, MR6, MR7, MR8, MR9, MR10
from relations.metafair.rejudge_rubric import MetaFairRubric
from relations.metafair.report import REPORT_SECTIONS
from relations.metafair.sim import SIM_HANDLERS, MetaFairTruth

FAMILY = Family(
    name="metafair",
    summary="requests with and without a demographic attribute: MR1-MR10 judged, "
    "MR11-MR14 closed answers, and LLM-written tests (metafair.generate)",
    relations=(MR1, MR2, MR3, MR4, MR5, MR6, MR7, MR8, MR9, MR10, *CLOSED_RELATIONS, GenerateTests),
    report_sections=(*REPORT_SECTIONS, *CLOSED_REPORT_SECTIONS, *GENERATION_REPORT_SECTIONS),
    sim_handlers=(*SIM_HANDLERS, *CLOSED_SIM_HANDLERS, *GENERATION_SIM_HANDLERS),
    commands=(group,),
    sim_options=MetaFairTruth,
    judge_rubric=MetaFairRubric(),
    model_backends={"recorded": build_recorded},  # imported answers: not callable
    importers=(import_metafair,),
    docs=Path(__file__).with_name("docs.md"),
)
