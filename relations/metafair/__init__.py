"""Meta-Fair: relations between a question asked with and without a demographic attribute
(today MR8, inverted consistency)."""

from pathlib import Path

from harness.registry import Family
from relations._common.conversation_rubric import ConversationBiasRubric
from relations.metafair.cli import group
from relations.metafair.closed import CLOSED_RELATIONS
from relations.metafair.closed_report import REPORT_SECTIONS as CLOSED_REPORT_SECTIONS
from relations.metafair.closed_sim import SIM_HANDLERS as CLOSED_SIM_HANDLERS
from relations.metafair.generate import GenerateTests
from relations.metafair.generation_report import REPORT_SECTIONS as GENERATION_REPORT_SECTIONS
from relations.metafair.generation_sim import SIM_HANDLERS as GENERATION_SIM_HANDLERS
from relations.metafair.relations import InvertedConsistency
from relations.metafair.report import REPORT_SECTIONS
from relations.metafair.sim import SIM_HANDLERS, MetaFairTruth

FAMILY = Family(
    name="metafair",
    summary="questions with and without a demographic attribute (MR8 inverted consistency)",
    relations=(InvertedConsistency, *CLOSED_RELATIONS, GenerateTests),
    report_sections=(*REPORT_SECTIONS, *CLOSED_REPORT_SECTIONS, *GENERATION_REPORT_SECTIONS),
    sim_handlers=(*SIM_HANDLERS, *CLOSED_SIM_HANDLERS, *GENERATION_SIM_HANDLERS),
    commands=(group,),
    sim_options=MetaFairTruth,
    judge_rubric=ConversationBiasRubric(),
    docs=Path(__file__).with_name("docs.md"),
)
