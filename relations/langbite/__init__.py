"""LangBiTe: prompt templates instantiated per community, judged by four oracle kinds
against ethical requirements; libraries in LangBiTe's published format can be imported."""

from pathlib import Path
from typing import Any

from harness.family_api import Deferred, Family, Lazy, package_attribute

# Parts by reference: describing the family imports none of them (harness.plugins.family_refs).
FAMILY = Family(
    name="langbite",
    summary="community-instantiated templates checked against ethical requirements",
    relations=(Lazy("langbite", "relations.langbite.relations:LangBiTe"),),
    report_sections=Deferred("relations.langbite.report:REPORT_SECTIONS"),
    sim_handlers=Deferred("relations.langbite.sim:SIM_HANDLERS"),
    sim_options=Deferred("relations.langbite.sim:LangBiteTruth"),
    commands=(Lazy("langbite", "relations.langbite.cli:group"),),
    corpora=Deferred("relations.langbite.corpus:CORPORA"),
    docs=Path(__file__).with_name("docs.md"),
)


def __getattr__(name: str) -> Any:
    # PEP 562: `from relations.langbite import SomeRelation` still works, on first use.
    return package_attribute(
        __name__, [*FAMILY.relations, *FAMILY.commands, *FAMILY.importers], name
    )
