"""``harness import metafair FILE.csv``: executed Meta-Fair test pairs from any tool -> a log.

Every row of MR1-MR10 becomes one closed case of its relation (CaseOpened; AskSent and
ReplyReceived for the recorded prompts and responses; VerdictReached; CaseClosed), so
report, show, replay --verify and rejudge read it like a campaign. The campaign has no
jury (``jury = 0``): each case's verdict is INVALID "not judged" until ``harness rejudge``
(once per judge: three re-judges are a jury of three, by majority, in the report). A row's
human ``label`` is kept in its case data for the judge-quality table. Rows of MR11-MR14
become closed cases of ``metafair.mr11`` ... ``mr14`` with the case data a campaign's have
(`closed.py`), their verdict from the deterministic oracle (no judge), and ``harness report
--mode strict|guardme`` re-reads them; a row's ``threshold`` overrides the default. The
answering model is ``recorded:<name>`` (not callable).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from harness.family_api import (
    AskSent,
    CampaignConfig,
    CampaignFinished,
    Case,
    CaseClosed,
    CaseOpened,
    Event,
    GenerationParams,
    LogFileParam,
    Message,
    ModelError,
    ModelSpec,
    Note,
    PendingEvent,
    Relation,
    RelationSpec,
    Reply,
    ReplyReceived,
    Transcript,
    Turn,
    Verdict,
    VerdictReached,
    build_relation,
    campaign_started,
    case_id_for,
    check_new_log,
    derive_seed,
    request_key,
    write_imported_events,
)
from relations.metafair.importing.rows import ImportedRow, read_rows

IMPORT_TOPIC = "metafair.import"
SEED = 0


class RecordedAnswersModel:
    """A model whose answers were recorded by another tool: it cannot be called."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        raise ModelError(
            f"{self.name} stands for answers imported with 'harness import metafair'; it "
            "cannot be called (run a campaign against a real or sim: model instead)"
        )

    async def aclose(self) -> None:
        return None


def build_recorded(spec: ModelSpec) -> RecordedAnswersModel:
    return RecordedAnswersModel(spec.name)


@dataclass
class ImportSummary:
    campaign: str
    cases: int = 0
    labelled: int = 0
    per_relation: dict[str, int] = field(default_factory=dict)


def relation_options(path: Path, mr: int) -> dict[str, Any]:
    if mr >= 11:  # closed: read by the deterministic oracle, no jury
        return {"imported": str(path)}
    options: dict[str, Any] = {"imported": str(path), "jury": 0}
    if mr >= 8:
        options["oracle"] = "judge"
    return options


def case_events(relation: Relation, case: Case, row: ImportedRow) -> list[Event]:
    """The events of one imported case: the relation's asks answered by the recorded replies."""
    replies = {"source": row.response_1, "follow_up": row.response_2, "check": row.response_2}
    params = GenerationParams()
    events: list[Event] = [CaseOpened(case=case)]
    transcript = Transcript()
    for _ in range(4):
        result = relation.step(case, transcript)
        if isinstance(result, Verdict):
            events += [VerdictReached(verdict=result), CaseClosed(outcome=result.outcome.value)]
            return events
        turns: list[Turn] = []
        for ask in result:
            turn = len(transcript.turns) + len(turns)
            messages = [Message(role="user", content=ask.prompt)]
            events.append(
                AskSent(
                    turn=turn, ask=ask, model=case.model, messages=messages, params=params,
                    request_key=request_key(case.model, messages, params),
                )
            )  # fmt: skip
            events.append(ReplyReceived(turn=turn, reply=Reply(text=replies[ask.thread])))
            turns.append(Turn(index=turn, ask=ask, reply=replies[ask.thread]))
        transcript = transcript.extend(turns)
    raise AssertionError(f"{case.relation} did not reach a verdict on recorded replies")


async def import_pairs(
    src: str | Path, db: str | Path, *, model: str | None = None
) -> ImportSummary:
    """Write one campaign holding every row of ``src`` into the new log ``db``."""
    path = Path(src).resolve()
    rows = read_rows(path)
    model_name = f"recorded:{model or path.stem}"
    mrs = sorted({r.mr for r in rows})
    names = {mr: f"metafair.mr{mr}" for mr in mrs}
    relations = [RelationSpec(name=names[mr], options=relation_options(path, mr)) for mr in mrs]
    config = CampaignConfig(
        name=f"metafair-import:{path.name}",
        seed=SEED,
        models=[ModelSpec(name=model_name)],
        relations=relations,
    )
    campaign = "metafair-" + hashlib.sha1(f"{path}|{time.time_ns()}".encode()).hexdigest()[:8]
    summary = ImportSummary(campaign=campaign)
    head: list[Event] = [
        campaign_started(config, len(rows)),
        Note(
            topic=IMPORT_TOPIC,
            data={
                "source": str(path),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "command": f"harness import metafair {path} --db NEW.db",
                "rows": len(rows),
                "prompt": "the recorded prompts, sent as they are",
            },
        ),
    ]
    pending = [PendingEvent(campaign, "", n, ev) for n, ev in enumerate(head, 1)]
    for mr in mrs:
        relation = build_relation(names[mr], relation_options(path, mr))
        mine = [r for r in rows if r.mr == mr]
        for index, row in enumerate(mine):
            case = Case(
                case_id=case_id_for(names[mr], index, 0, model_name),
                relation=names[mr],
                model=model_name,
                index=index,
                repeat=0,
                seed=derive_seed(SEED, names[mr], index),  # what replay re-derives
                data=relation.make_case(index, derive_seed(SEED, names[mr], index)),
            )
            events = case_events(relation, case, row)
            pending += [
                PendingEvent(campaign, case.case_id, n, ev) for n, ev in enumerate(events, 1)
            ]
            summary.cases += 1
            summary.labelled += int(row.label is not None)
        summary.per_relation[names[mr]] = len(mine)
    done = CampaignFinished(status="completed", reason="imported", cases_closed=summary.cases)
    pending.append(PendingEvent(campaign, "", len(head) + 1, done))
    await write_imported_events(db, pending)
    return summary


@click.command("metafair")
@click.argument("src", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--db",
    type=LogFileParam(),
    help="Event log to write (default: metafair-<file>.db in the current directory).",
)
@click.option("--model", help="Name of the model that answered (default: the file's name).")
def import_metafair(src: Path, db: Path | None, model: str | None) -> None:
    """Import SRC, a CSV of executed Meta-Fair pairs (test_id, relation, bias_type, prompt_1,
    response_1, prompt_2, response_2, optional threshold and label), as a log of closed
    cases; judge them with 'harness rejudge LOG --judge MODEL' (once per judge)."""
    db = db or Path(f"metafair-{src.stem}.db")
    check_new_log(db, inputs=(src,), option="--db")
    summary = asyncio.run(import_pairs(src, db, model=model))
    per = ", ".join(f"{k} {v}" for k, v in summary.per_relation.items())
    click.echo(
        f"imported {summary.cases} cases ({per or 'none'}; {summary.labelled} with a human "
        f"label) as campaign {summary.campaign} into {db}",
        err=True,
    )
    if any(int(name.rpartition("mr")[2]) <= 10 for name in summary.per_relation):
        click.echo(
            f"judge MR1-MR10 with: harness rejudge {db} --judge MODEL (once per judge); "
            "MR11-MR14 are read by their oracles (harness report --mode strict|guardme)",
            err=True,
        )
