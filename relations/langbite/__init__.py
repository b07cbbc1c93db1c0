"""LangBiTe: prompt templates instantiated per community, judged by four oracle kinds
against ethical requirements; libraries in LangBiTe's published format can be imported."""

from pathlib import Path

from harness.registry import Family
from relations.langbite.cli import group
from relations.langbite.relations import LangBiTe
from relations.langbite.report import REPORT_SECTIONS
from relations.langbite.sim import SIM_HANDLERS

FAMILY = Family(
    name="langbite",
    summary="community-instantiated templates checked against ethical requirements",
    relations=(LangBiTe,),
    report_sections=REPORT_SECTIONS,
    sim_handlers=SIM_HANDLERS,
    commands=(group,),
    docs=Path(__file__).with_name("docs.md"),
)
