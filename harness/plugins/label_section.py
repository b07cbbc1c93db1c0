"""The report section of declared case labels: each relation's ``labels``, looked up in the
registry, handed to `harness.reporting.label_rates` (which cannot read the registry: the
reporting room lies below this one)."""

from __future__ import annotations

from harness.plugins.family_parts import relation_class
from harness.reporting.label_rates import label_tables
from harness.reporting.tables import ReportContext, ReportSection, Table


def declared_labels(relations: list[str]) -> dict[str, tuple[str, ...]]:
    """The label keys each of ``relations`` declares (relations unknown here, or declaring
    none, left out)."""
    found: dict[str, tuple[str, ...]] = {}
    for name in relations:
        cls = relation_class(name)
        keys = tuple(getattr(cls, "labels", ())) if cls is not None else ()
        if keys:
            found[name] = keys
    return found


def label_rates(ctx: ReportContext) -> list[Table]:
    # The campaign's plan names its relations without a pass over the verdicts; a hand-made
    # log whose start names none is read from its verdicts.
    names = sorted(ctx.planned_relations) or sorted(ctx.verdict_counts.relations)
    return label_tables(ctx, declared_labels(names))


LABEL_SECTIONS = (ReportSection("label_rates", 13, label_rates),)
