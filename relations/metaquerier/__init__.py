"""MetaQuerier: term lists asked twice in one conversation (MR1 term deletion, MR2 term
insertion); a model that names a term only when pushed reveals an association."""

from pathlib import Path
from typing import Any

from harness.family_api import Deferred, Family, Lazy, package_attribute

# Parts by reference: describing the family imports none of them (harness.plugins.family_refs).
FAMILY = Family(
    name="metaquerier",
    summary="gendered term lists: deletion (MR1) and insertion (MR2) in one conversation",
    relations=(
        Lazy("metaquerier.mr1", "relations.metaquerier.relations:TermDeletion"),
        Lazy("metaquerier.mr2", "relations.metaquerier.relations:TermInsertion"),
    ),
    report_sections=Deferred("relations.metaquerier.report:REPORT_SECTIONS"),
    sim_handlers=Deferred("relations.metaquerier.sim:SIM_HANDLERS"),
    sim_options=Deferred("relations.metaquerier.sim:MetaQuerierTruth"),
    judge_rubric=Lazy("metaquerier", "relations._common.conversation_rubric:RUBRIC"),
    corpora=Deferred("relations.metaquerier.corpus:CORPORA"),
    docs=Path(__file__).with_name("docs.md"),
)


def __getattr__(name: str) -> Any:
    # PEP 562: `from relations.metaquerier import SomeRelation` still works, on first use.
    return package_attribute(
        __name__, [*FAMILY.relations, *FAMILY.commands, *FAMILY.importers], name
    )
