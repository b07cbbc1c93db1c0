"""What the registered parts become: a relation or a model built by name with validated
options (what a campaign file's names become; a name no family registers is a
`ConfigError` naming the field and the names that exist), and a report over every
registered section."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from harness.plugins.family_parts import (
    model_backend,
    model_schemes,
    relation_class,
    relation_names,
    report_sections,
)
from harness.reporting.report import build_tables
from harness.reporting.tables import Table
from harness.store.reader import EventReader
from harness.vocabulary.config_errors import config_error
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import Model, ModelSpec
from harness.vocabulary.relation import Relation


def build_relation(name: str, options: dict[str, Any], *, field: str = "relations") -> Relation:
    """The registered relation ``name`` with validated options, or a ConfigError."""
    cls = relation_class(name)
    if cls is None:
        raise ConfigError(
            f"unknown relation {name!r}",
            field=f"{field}.name",
            fix=f"run 'harness relations' to list them; known: {', '.join(relation_names())}",
        )
    try:
        opts = cls.Options.model_validate(options)
    except ValidationError as exc:
        raise config_error(
            exc,
            where=f"{field}.options",
            data=options,
            fix=f"see the options of {name} in 'harness relations --verbose'",
            by_type=False,
        ) from exc
    relation: Relation = cls(opts)  # type: ignore[assignment]
    return relation


def known_schemes() -> list[str]:
    return model_schemes()


def build_model(spec: ModelSpec) -> Model:
    if ":" not in spec.target:
        raise ConfigError(
            f"model name {spec.target!r} has no backend prefix",
            field="models.name",
            fix=f"write it as 'scheme:identifier' with scheme one of {known_schemes()}",
        )
    factory = model_backend(spec.scheme)
    if factory is None:
        raise ConfigError(
            f"unknown model backend {spec.scheme!r} in {spec.name!r}",
            field="models.name",
            fix=f"use one of {known_schemes()}",
        )
    return factory(spec)


def build_report(log: EventReader, campaign: str | None = None, **options: Any) -> list[Table]:
    """Every registered report section's tables for ``campaign`` of ``log``, FDR applied."""
    return build_tables(log, campaign, sections=report_sections(), **options)
