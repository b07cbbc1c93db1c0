"""MetaQuerier: term lists asked twice in one conversation (MR1 term deletion, MR2 term
insertion); a model that names a term only when pushed reveals an association."""

from pathlib import Path

from harness.registry import Family
from relations._common.conversation_rubric import ConversationBiasRubric
from relations.metaquerier.relations import TermDeletion, TermInsertion
from relations.metaquerier.report import REPORT_SECTIONS
from relations.metaquerier.sim import SIM_HANDLERS, MetaQuerierTruth

FAMILY = Family(
    name="metaquerier",
    summary="gendered term lists: deletion (MR1) and insertion (MR2) in one conversation",
    relations=(TermDeletion, TermInsertion),
    report_sections=REPORT_SECTIONS,
    sim_handlers=SIM_HANDLERS,
    sim_options=MetaQuerierTruth,
    judge_rubric=ConversationBiasRubric(),
    docs=Path(__file__).with_name("docs.md"),
)
