"""MetaQuerier's units: MR2's paired first-ask / asked-again test counts a (case, term) pair
once from its repeats' shares (no majority, so a tie is never "not named"), and a social
group's rows pool the terms of one reply with an interval clustered by case."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness.plugins.assembly import build_report
from harness.store.reader import EventReader
from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.events import CampaignStarted, CaseClosed, CaseOpened, VerdictReached
from harness.vocabulary.relation import Case, Outcome, Verdict

# (case, repeat) -> terms named at the first ask, terms named again
MR2 = {
    (0, 0): ([], ["nurse"]),  # nurse: 0 of 2 first, 2 of 2 again: newly named
    (0, 1): ([], ["nurse"]),
    (1, 0): (["nurse"], ["nurse"]),  # 1 of 2 first (a tie), 2 of 2 again: newly named
    (1, 1): ([], ["nurse"]),
    (2, 0): (["nurse"], []),  # 2 of 2 first, 1 of 2 again (a tie): dropped
    (2, 1): (["nurse"], ["nurse"]),
    (3, 0): (["nurse"], ["nurse"]),  # the same at both asks: concordant
    (3, 1): ([], []),
}


async def write_log(db: Path) -> None:
    started = CampaignStarted(
        name="u", config={}, config_hash="h", code_version="v", harness_version="0"
    )
    events = [PendingEvent("c", "", 1, started)]
    for (case, repeat), (first, again) in MR2.items():
        case_id = f"metaquerier.mr2/{case}/r{repeat}@sim:m"
        data: dict[str, Any] = {"terms": ["nurse"], "groups": {"nurse": "profession"}}
        c = Case(case_id=case_id, relation="metaquerier.mr2", model="sim:m", index=case,
                 repeat=repeat, seed=case, data=data)  # fmt: skip
        evidence = {"source_named": first, "follow_named": again, "violating_terms": []}
        verdict = Verdict(outcome=Outcome.HELD, reason="HELD: x", evidence=evidence)
        events += [
            PendingEvent("c", case_id, 1, CaseOpened(case=c)),
            PendingEvent("c", case_id, 2, VerdictReached(verdict=verdict)),
            PendingEvent("c", case_id, 3, CaseClosed(outcome="HELD")),
        ]
    async with await EventWriter.open(db) as store:
        await store.append(events)


def test_mr2_pairs_count_once_from_their_repeats_shares(tmp_path: Path) -> None:
    db = tmp_path / "mr2.db"
    asyncio.run(write_log(db))
    with EventReader(db) as log:
        tables = {t.name: t for t in build_report(log)}
    table = tables["metaquerier_source_vs_follow_up"]
    (row,) = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert (row["pairs"], row["dropped"], row["newly_named"]) == (4, 1, 2)
    # shares of repeats naming nurse: first 0 + 0.5 + 1 + 0.5, again 1 + 1 + 0.5 + 0.5
    assert (row["named_first"], row["named_again"]) == (2.0, 3.0)
    assert row["p_min"] == 0.25 and row["p"] == 1.0  # 3 discordant pairs: 2 * 0.5**3
    rates = {r[1]: r for r in tables["violation_rates"].rows}
    assert rates["metaquerier.mr2"][tables["violation_rates"].columns.index("tied_cases")] == 0
