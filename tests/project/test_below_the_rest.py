"""Groups pushed below the rest by another strong group (`harness.reporting.findings.
mark_pushed_below`): a two-sided group-vs-rest test flags every other group of a context
below a pool that one planted group inflates; those flags are marked "below the rest", name
the group that pushes them, and are not findings of their own, while a group that is below
the others too keeps its flag."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness.reporting.findings import BELOW_THE_REST, mark_pushed_below, read_findings
from harness.reporting.report import corrected
from harness.reporting.stats import COMPARISON_COLUMNS, compare_groups, compare_to_rest
from harness.reporting.tables import Table, rounded


def _table(counts: dict[str, tuple[int, int]]) -> Table:
    rows = []
    for (_, group), g in compare_groups({("m", k): v for k, v in counts.items()}):
        rows.append(["m", group, g.n, g.k, rounded(g.rate), *g.cells()])
    return Table(
        "groups",
        "groups against the rest",
        ["model", "group", "cases", "violated", "rate", *COMPARISON_COLUMNS],
        rows,
        unit="a case",
    )


def _flags(table: Table) -> dict[str, Any]:
    return {row[1]: row[-1] for row in table.rows}


def test_groups_below_only_because_one_group_is_above_are_marked_with_it() -> None:
    # A at 60 %, the others at 20 %: each of B-D is below a rest that A lifts to ~30 %.
    counts = {"A": (240, 400), "B": (80, 400), "C": (82, 400), "D": (78, 400)}
    (table, _) = corrected([_table(counts)])
    flags = _flags(table)
    assert flags == {"A": "yes", "B": BELOW_THE_REST, "C": BELOW_THE_REST, "D": BELOW_THE_REST}
    meta = {row[1]: m for row, m in zip(table.rows, table.row_meta or [], strict=True)}
    below = meta["B"]["below_the_rest"]
    assert below["pushed_by"] == ["A"]
    # Brute force: B against C and D pooled, Fisher's exact test.
    assert below["p_without"] == round(compare_to_rest(80, 400, 160, 800).p, 6)
    findings = read_findings([table])
    assert [f.cell.subject_text() for f in findings.flagged] == ["group A"]
    assert sorted(c.subject_text() for c in findings.below) == ["group B", "group C", "group D"]
    assert not any(i.cell.pushed_by for i in findings.inconclusive)


def test_a_group_below_the_others_too_keeps_its_flag() -> None:
    # D is below B and C as well: without A in its rest it is still far below.
    counts = {"A": (240, 400), "B": (80, 400), "C": (82, 400), "D": (10, 400)}
    (table, _) = corrected([_table(counts)])
    flags = _flags(table)
    assert flags["A"] == "yes" and flags["D"] == "yes"
    assert flags["B"] == BELOW_THE_REST


def test_nothing_is_marked_without_a_group_flagged_above() -> None:
    counts = {"A": (20, 400), "B": (80, 400), "C": (82, 400), "D": (78, 400)}
    (table, _) = corrected([_table(counts)])
    assert BELOW_THE_REST not in _flags(table).values()
    assert mark_pushed_below(table) is table


def test_on_the_sim_one_planted_community_no_longer_flags_the_others(tmp_path: Path) -> None:
    # LangBiTe's religions, 40 runs each: one planted community (Muslim), every answer at a
    # noise floor. Counting every run (400 answers a community) flagged the other religions
    # below the rest that Muslim lifts; the unit is now the instantiation (its runs by
    # majority: 10 a community), so the runs add no false precision and the others are not
    # flagged at all (the marking itself is tested on the hand-built tables above).
    from harness.plugins.assembly import build_report
    from harness.running.campaign import parse_campaign
    from harness.running.runner import run_campaign
    from harness.store.reader import EventReader

    config = parse_campaign(
        {
            "name": "one-planted",
            "seed": 3,
            "repeats": 40,
            "models": [
                {
                    "name": "sim:planted",
                    "max_in_flight": 32,
                    "options": {"langbite_planted": {"Muslim": 0.9}, "langbite_noise": 0.2},
                }
            ],
            "judges": [{"name": "sim:judge"}],
            "relations": [{"name": "langbite", "options": {"control": False}}],
        }
    )
    db = tmp_path / "lb.db"
    assert asyncio.run(run_campaign(config, db)).status == "completed"
    with EventReader(db) as log:
        tables = {t.name: t for t in build_report(log)}
    community = tables["langbite_community_tests"]
    at = community.columns.index
    religion = {
        r[at("community")]: r[-1]
        for r in community.rows
        if r[at("language")] == "en" and r[at("concern")] == "religion"
    }
    assert religion.pop("Muslim") == "yes"
    assert religion and set(religion.values()) <= {"no", BELOW_THE_REST}
    found = tables["findings"]
    kinds = [(r[0], r[1]) for r in found.rows]
    flagged = [t for k, t in kinds if k == "flagged"]
    assert all("religion" not in t or "Muslim" in t for t in flagged)
