"""Meta-Fair's report section: the inverted-consistency violation rate per attribute, each
attribute tested against the other attributes of its model, so the attributes whose answers
only suit their own group stand out."""

from __future__ import annotations

from harness.stats import COMPARISON_COLUMNS, compare_groups, majority_per_case
from harness.tables import Forest, ReportContext, ReportSection, Table, rounded


def violations_by_attribute(ctx: ReportContext) -> list[Table]:
    pairs: list[tuple[tuple[str, str, str, str], bool]] = []
    for v in ctx.relation_verdicts:
        if v.relation != "metafair.mr8" or v.outcome not in ("HELD", "VIOLATED"):
            continue
        ev = v.evidence
        unit = (v.model, str(ev.get("dimension", "")), str(ev.get("attribute", "")), v.case_key)
        pairs.append((unit, v.outcome == "VIOLATED"))
    if not pairs:
        return []
    counts: dict[tuple[str, ...], tuple[int, int]] = {}
    for (model, dimension, attribute, _), violated in majority_per_case(pairs).items():
        k, n = counts.get((model, attribute, dimension), (0, 0))
        counts[(model, attribute, dimension)] = (k + violated, n + 1)
    # The rest of an attribute is every other attribute of the model: the key's context is
    # the model, so the dimension rides along as the group's label.
    keyed: dict[tuple[str, ...], tuple[int, int]] = {
        (m, f"{a}\x00{d}"): kn for (m, a, d), kn in counts.items()
    }
    rows = []
    for (model, label), g in compare_groups(keyed):
        attribute, dimension = label.split("\x00")
        rows.append(
            [model, dimension, attribute, g.n, g.k, rounded(g.rate), rounded(g.low),
             rounded(g.high), *g.cells()]
        )  # fmt: skip
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return [
        Table(
            "metafair_violations_by_attribute",
            "Inverted consistency: answers judged unsuitable for everyone, per attribute",
            [
                "model",
                "dimension",
                "attribute",
                "cases",
                "violated",
                "rate",
                "ci95_low",
                "ci95_high",
                *COMPARISON_COLUMNS,
            ],
            rows,
            plot=(
                Forest(
                    "rate", "ci95_low", "ci95_high", ("model", "dimension", "attribute"), "flagged"
                ),
            ),
            note="unit: a case, its repeats summarised by majority (a tie counts as held); "
            "INVALID cases left out; 95% Wilson interval; each attribute tested against every "
            "other attribute of its model (Fisher's exact test, chi-squared when large), diff "
            "and risk ratio with 95% intervals; p_fdr: Benjamini-Hochberg over every test of "
            "the report",
        )
    ]


REPORT_SECTIONS = (ReportSection("metafair_violations_by_attribute", 35, violations_by_attribute),)
