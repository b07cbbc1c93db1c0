"""``harness import badf``: the authors' released association files -> one campaign of closed
``badf.released`` cases, appended to a log (a new one, or the log of our own BADF campaign
so that the report shows their associations beside ours)."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from harness.family_api import (
    IMPORT_TOPIC,
    CampaignConfig,
    CampaignFinished,
    Case,
    CaseClosed,
    CaseOpened,
    Event,
    ModelSpec,
    Note,
    PendingEvent,
    RelationSpec,
    Transcript,
    Verdict,
    VerdictReached,
    build_relation,
    campaign_started,
    derive_seed,
    write_imported_events,
)
from relations.badf.released import load_folder

RELATION = "badf.released"
MODEL = "badf-released:authors"
SEED = 0


@dataclass
class ImportSummary:
    campaign: str
    files: int
    rows: int
    skipped: int
    first_problem: str


async def import_associations(src: str | Path, db: str | Path) -> ImportSummary:
    src = Path(src).resolve()
    load_folder.cache_clear()  # read the folder as it is now
    folder = load_folder(str(src))
    options = {"folder": str(src)}
    relation = build_relation(RELATION, options)
    config = CampaignConfig(
        name=f"badf-import:{src.name}",
        seed=SEED,
        models=[ModelSpec(name=MODEL)],
        relations=[RelationSpec(name=RELATION, cases=max(1, len(folder.rows)), options=options)],
    )
    campaign = "badf-" + hashlib.sha1(f"{src}|{time.time_ns()}".encode()).hexdigest()[:8]
    events: list[tuple[str, Event]] = [
        ("", campaign_started(config, len(folder.rows))),
        (
            "",
            Note(
                topic=IMPORT_TOPIC,
                data={
                    "source": str(src),
                    "command": f"harness import badf {src} --db NEW.db",
                    "files": folder.files,
                    "rows": len(folder.rows),
                    "skipped_rows": folder.skipped,
                    "first_problem": folder.first_problem,
                },
            ),
        ),
    ]
    for index, data in enumerate(folder.rows):
        case_id = f"{RELATION}/{index}/r0@{MODEL}"
        case = Case(
            case_id=case_id,
            relation=RELATION,
            model=MODEL,
            index=index,
            repeat=0,
            seed=derive_seed(SEED, RELATION, index),  # what replay re-derives
            data=data,
        )
        verdict = relation.step(case, Transcript())
        assert isinstance(verdict, Verdict)
        events += [
            (case_id, CaseOpened(case=case)),
            (case_id, VerdictReached(verdict=verdict)),
            (case_id, CaseClosed(outcome=verdict.outcome.value)),
        ]
    events.append(
        ("", CampaignFinished(status="completed", reason="imported", cases_closed=len(folder.rows)))
    )
    seqs: dict[str, int] = {}
    pending = []
    for case_id, event in events:
        seqs[case_id] = seqs.get(case_id, 0) + 1
        pending.append(PendingEvent(campaign, case_id, seqs[case_id], event))
    await write_imported_events(db, pending)
    return ImportSummary(
        campaign, folder.files, len(folder.rows), folder.skipped, folder.first_problem
    )
