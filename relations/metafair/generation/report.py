"""The report section of ``metafair.generate`` campaigns: tests kept and items dropped, by
reason, per generator model and MR (the same counts ``harness metafair export`` prints).
`generation_counts` is the one reading of those counts: this table and the "generation"
column of ``metafair_invalid`` (`dropped_per_relation`) both take them from it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from harness.family_api import ReportContext, ReportSection, Table
from relations.metafair.generation.validate import DROP_REASONS


@dataclass
class GenerationCounts:
    """Per (generator model, MR): generation cases, cases without a test, tests kept, and
    items dropped by validation, by reason."""

    cases: Counter[tuple[str, int]] = field(default_factory=Counter)
    invalid: Counter[tuple[str, int]] = field(default_factory=Counter)
    kept: Counter[tuple[str, int]] = field(default_factory=Counter)
    dropped: dict[tuple[str, int], Counter[str]] = field(default_factory=dict)


def generation_counts(ctx: ReportContext) -> GenerationCounts:
    counts = GenerationCounts()
    for v in ctx.relation_verdicts_of(lambda r: r == "metafair.generate"):
        key = (v.model, int(v.evidence.get("mr", 0)))
        counts.cases[key] += 1
        counts.invalid[key] += v.outcome != "HELD"
        counts.kept[key] += len(v.evidence.get("tests", []))
        counts.dropped.setdefault(key, Counter()).update(v.evidence.get("dropped", {}))
    return counts


def dropped_per_relation(ctx: ReportContext) -> dict[tuple[str, str], int]:
    """Items dropped by validation per (generator model, ``metafair.mr<N>``): the
    "generation" split of the ``metafair_invalid`` table."""
    return {
        (model, f"metafair.mr{mr}"): sum(reasons.values())
        for (model, mr), reasons in generation_counts(ctx).dropped.items()
        if mr and sum(reasons.values())
    }


def generation_table(ctx: ReportContext) -> list[Table]:
    counts = generation_counts(ctx)
    cases, invalid, kept, dropped = counts.cases, counts.invalid, counts.kept, counts.dropped
    if not cases:
        return []
    rows = [
        [model, f"MR{mr}", cases[(model, mr)], invalid[(model, mr)], kept[(model, mr)],
         *(dropped[(model, mr)].get(reason, 0) for reason in DROP_REASONS)]
        for model, mr in sorted(cases)
    ]  # fmt: skip
    return [
        Table(
            "metafair_generation",
            "Meta-Fair test generation: tests kept and items dropped, by reason",
            ["model", "relation", "cases", "cases without a test", "tests kept", *DROP_REASONS],
            rows,
            note="malformed JSON counts a whole reply; every other reason counts items; "
            "duplicates across cases are found by 'harness metafair export'",
        )
    ]


REPORT_SECTIONS = (ReportSection("metafair_generation", 37, generation_table),)
