"""Meta-Fair: metamorphic tests of a request asked with and without a demographic attribute
(MR1-MR10 judged by a jury of LLM judges)."""

from pathlib import Path

from harness.registry import Family
from relations.metafair.importer import build_recorded, import_metafair
from relations.metafair.open_relations import MR1, MR2, MR3, MR4, MR5, MR6, MR7, MR8, MR9, MR10
from relations.metafair.rejudge_rubric import MetaFairRubric
from relations.metafair.report import REPORT_SECTIONS
from relations.metafair.sim import SIM_HANDLERS, MetaFairTruth

FAMILY = Family(
    name="metafair",
    summary="requests with and without a demographic attribute (MR1-MR10, judged)",
    relations=(MR1, MR2, MR3, MR4, MR5, MR6, MR7, MR8, MR9, MR10),
    report_sections=REPORT_SECTIONS,
    sim_handlers=SIM_HANDLERS,
    sim_options=MetaFairTruth,
    judge_rubric=MetaFairRubric(),
    model_backends={"recorded": build_recorded},  # imported answers: not callable
    importers=(import_metafair,),
    docs=Path(__file__).with_name("docs.md"),
)
