"""The core's typed lookups of what the families contribute, one function per kind.

`harness.plugins.registry` holds the entries and the duplicate rule; these views give the core each
kind with its type (a relation class, a model factory, a click command...), importing a part
only when it is asked for by name or its whole kind is listed.
"""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING

from harness.plugins.registry import ENTRY_POINT_GROUP, Family, registry

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

    from harness.reporting.tables import ReportSection
    from harness.vocabulary.corpus import Corpus
    from harness.vocabulary.model import ModelFactory
    from harness.vocabulary.relation import RelationBase
    from harness.vocabulary.rubric import JudgeRubric
    from harness.vocabulary.simulation import SimHandler


def families() -> list[Family]:
    return [e.value for e in registry().entries("family")]


def relation_classes() -> dict[str, type[RelationBase]]:
    """Every relation class, each imported (listings); `relation_class` imports one."""
    return {e.name: e.value for e in registry().entries("relation")}


def relation_names() -> list[str]:
    return registry().names("relation")


def relation_class(name: str) -> type[RelationBase] | None:
    cls: type[RelationBase] | None = registry().get("relation", name)
    return cls


def family_origin(name: str) -> str | None:
    """Where family ``name`` was found (``"package.module:ATTRIBUTE"`` for an entry point)."""
    return registry().origin(name)


def family_distribution(name: str) -> str | None:
    """``"distribution version"`` of the installed package whose entry point provides family
    ``name``; None when no entry point does (not installed, or registered by a test)."""
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        if ep.dist is not None:
            return f"{ep.dist.name} {ep.dist.version}"
    return None


def family_of(relation: str) -> Family | None:
    cls = registry().get("relation", relation)
    return registry().get("family", cls.family) if cls is not None else None


def report_sections() -> list[ReportSection]:
    found: list[ReportSection] = [e.value for e in registry().entries("report section")]
    return found


def sim_handlers() -> list[SimHandler]:
    found: list[SimHandler] = [e.value for e in registry().entries("sim handler")]
    return found


def sim_option_models() -> list[type[BaseModel]]:
    models = {e.value for e in registry().entries("sim option")}
    return sorted(models, key=lambda m: f"{m.__module__}.{m.__qualname__}")


def judge_rubric(family: str) -> JudgeRubric | None:
    rubric: JudgeRubric | None = registry().get("judge rubric", family)
    return rubric


def model_backends() -> dict[str, ModelFactory]:
    return {e.name: e.value for e in registry().entries("model backend")}


def model_schemes() -> list[str]:
    return registry().names("model backend")


def model_backend(scheme: str) -> ModelFactory | None:
    factory: ModelFactory | None = registry().get("model backend", scheme)
    return factory


def commands() -> list[click.Command]:
    return [e.value for e in registry().entries("command")]


def command_names() -> list[str]:
    return registry().names("command")


def command(name: str) -> click.Command | None:
    found: click.Command | None = registry().get("command", name)
    return found


def importers() -> list[click.Command]:
    return [e.value for e in registry().entries("importer")]


def importer_names() -> list[str]:
    return registry().names("importer")


def importer(name: str) -> click.Command | None:
    found: click.Command | None = registry().get("importer", name)
    return found


def corpora() -> list[tuple[str, Corpus]]:
    """Every registered corpus with the name of the family that declared it, by corpus name."""
    return [(e.family, e.value) for e in registry().entries("corpus")]
