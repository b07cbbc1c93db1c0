"""BiasLens: role-play questions (Yes/No, Choice, Why) asked with and without a role, the
generation campaigns that write roles and questions, the authors' released answers."""

from pathlib import Path

from harness.registry import Family
from relations.biaslens.cli import group, import_biaslens
from relations.biaslens.generate import GenerateQuestions, GenerateRoles
from relations.biaslens.relations import BiasLensAnswer
from relations.biaslens.released_backend import build_released
from relations.biaslens.report import REPORT_SECTIONS
from relations.biaslens.sim import SIM_HANDLERS

FAMILY = Family(
    name="biaslens",
    summary="role-play questions with and without a role; role and question generation",
    relations=(BiasLensAnswer, GenerateRoles, GenerateQuestions),
    report_sections=REPORT_SECTIONS,
    sim_handlers=SIM_HANDLERS,
    model_backends={"released": build_released},  # imported answers: not callable
    commands=(group,),
    importers=(import_biaslens,),
    docs=Path(__file__).with_name("docs.md"),
)
