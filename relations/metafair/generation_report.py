"""The report section of ``metafair.generate`` campaigns: tests kept and items dropped, by
reason, per generator model and MR (the same counts ``harness metafair export`` prints)."""

from __future__ import annotations

from collections import Counter

from harness.tables import ReportContext, ReportSection, Table
from relations.metafair.generation_validate import DROP_REASONS


def generation_table(ctx: ReportContext) -> list[Table]:
    cases: Counter[tuple[str, int]] = Counter()
    invalid: Counter[tuple[str, int]] = Counter()
    kept: Counter[tuple[str, int]] = Counter()
    dropped: dict[tuple[str, int], Counter[str]] = {}
    for v in ctx.relation_verdicts:
        if v.relation != "metafair.generate":
            continue
        key = (v.model, int(v.evidence.get("mr", 0)))
        cases[key] += 1
        invalid[key] += v.outcome != "HELD"
        kept[key] += len(v.evidence.get("tests", []))
        dropped.setdefault(key, Counter()).update(v.evidence.get("dropped", {}))
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
