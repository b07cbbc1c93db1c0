"""Import a released BiasLens answers folder into an event log.

Layout read: ``answers/<role|without_role>/<model>/<attribute>_answers_<run>.csv`` with
columns ``Role, Question Type, Question, Answer, LLM 1, LLM 2, LLM 3, final``; ``roles/`` and
``questions/`` are summarised in a Note. Every answer becomes one closed case of
``biaslens.answer`` (CaseOpened, AskSent, ReplyReceived, VerdictReached, CaseClosed), so
report, show and replay read it like any campaign. The recorded prompt is the bare question:
the released files do not say which answer-format instruction the authors appended.
Each file's row count is kept in a Note because the released scripts pick the run with the
fewest rows as the base of the three-run alignment.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import functools
import hashlib
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.campaign import CampaignConfig, RelationSpec
from harness.engine import NullProgress, ProgressSink
from harness.events import CampaignFinished, Event, Note, encode_event
from harness.gc_pause import gc_paused
from harness.model import GenerationParams, ModelSpec
from harness.relation import Case, Relation, Verdict, build_relation, seed_deriver
from harness.runner import campaign_started
from harness.store.fresh_log import FreshLog
from harness.store.writer import EventWriter, PendingEvent
from relations.biaslens.import_events import EncodedRow, ImportEncoder
from relations.biaslens.relations import BiasLensAnswer
from relations.biaslens.released import (
    VARIANT_DIRS,
    AnswerFile,
    count_case_rows,
    find_answer_files,
    read_answer_rows,
    row_case_data,
)

RELATION = "biaslens.answer"
CAMPAIGN_SEED = 0
IMPORT_TOPIC = "biaslens.import"
FILE_TOPIC = "biaslens.import.file"


@dataclass
class ImportSummary:
    campaign: str
    files: int = 0
    answers: int = 0
    events: int = 0
    skipped_rows: int = 0
    models: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    # Partial files of killed imports into the same new log, found unlocked and removed.
    dead_partials_removed: list[Path] = field(default_factory=list)


def _folder_notes(src: Path) -> dict[str, Any]:
    roles = {}
    for path in sorted((src / "roles").glob("*.txt")):
        roles[path.stem.lower()] = len([r for r in path.read_text("utf-8").split(",") if r.strip()])
    questions = {}
    for variant_dir in VARIANT_DIRS:
        for path in sorted((src / "questions" / variant_dir).glob("*_questions.csv")):
            with path.open(newline="", encoding="utf-8", errors="ignore") as fh:
                questions[f"{variant_dir}/{path.stem}"] = (
                    sum(1 for row in csv.reader(fh) if row) - 1
                )
    return {"roles_per_attribute": roles, "questions_per_file": questions}


class _Importer:
    def __init__(self, store: EventWriter, campaign: str, batch_events: int, relation: Relation):
        if not isinstance(relation, BiasLensAnswer):
            raise TypeError(f"{RELATION} is not BiasLens's answer relation")
        self.store = store
        self.campaign = campaign
        self.batch_events = batch_events
        self.relation = relation
        self.encoder = ImportEncoder(relation, GenerationParams(), templates=store.splits_payloads)
        self.seed = seed_deriver(CAMPAIGN_SEED, RELATION)  # derive_seed(.., .., index)
        self.pending: list[EncodedRow] = []
        self.in_flight: list[asyncio.Task[list[int]]] = []
        self.events = 0

    async def add(self, rows: list[EncodedRow]) -> None:
        self.pending.extend(rows)
        if len(self.pending) >= self.batch_events:
            await self.flush(wait=False)

    async def flush(self, *, wait: bool) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            self.events += len(batch)
            # Build the next batch while the writer commits this one; at most three in flight.
            self.in_flight.append(asyncio.create_task(self.store.append_encoded(batch)))
        while self.in_flight and (wait or len(self.in_flight) > 2):
            await self.in_flight.pop(0)

    def case_events(
        self, f: AnswerFile, index: int, row_no: int, answer: str, data: dict[str, Any]
    ) -> tuple[Case, Verdict, list[EncodedRow]]:
        model = f"released:{f.model}"
        # Ids sort in the order they are written: the model first (a folder is read model by
        # model), then the run before a zero-padded row. The log's indexes on case_id then
        # grow at one point instead of splitting pages all over: with the model at the end
        # (".../02195@model"), each model's cases fell between the previous models' and the
        # writer's commits grew with every model (bench/RESULTS.md, 2026-11-27). The model is
        # written once: every byte of an id is stored in the table and in two indexes.
        case_id = f"{RELATION}/{model}/{f.variant}/{f.attribute}/r{f.run}/{row_no:05d}"
        case = Case(
            case_id=case_id,
            relation=RELATION,
            model=model,
            index=index,
            repeat=f.run - 1,
            seed=self.seed(index),  # what replay re-derives
            data=data,
        )
        # The recorded answer fixes the verdict: the relation's own decision (what its step
        # returns for this one-turn transcript), without building the transcript.
        verdict = self.relation.answer_verdict(data, answer)
        if verdict is None:
            raise AssertionError(f"{case_id}: a released answer must fix its verdict")
        return case, verdict, self.encoder.rows(self.campaign, case, answer, verdict)


@dataclass(frozen=True)
class ImportPlan:
    """The answer files an import reads, in case-index order, and how many cases they hold."""

    src: Path
    models: tuple[str, ...] | None
    files: tuple[AnswerFile, ...]
    planned: int


def plan_import(src: str | Path, models: list[str] | None = None) -> ImportPlan:
    """Find the answer files and count the rows that become cases (a cheap first pass: the
    count is in the campaign's first event, so an import killed while it appends to an
    existing log reads "unfinished, N of M")."""
    src = Path(src).resolve()
    wanted = tuple(sorted(models)) if models else None
    files = tuple(find_answer_files(src, list(wanted) if wanted else None))
    return ImportPlan(src, wanted, files, sum(count_case_rows(f.path) for f in files))


async def import_released(
    src: str | Path,
    db: str | Path,
    *,
    models: list[str] | None = None,
    campaign: str | None = None,
    batch_events: int = 5_000,
    plan: ImportPlan | None = None,
    progress: ProgressSink | None = None,
    compact: bool = False,
) -> ImportSummary:
    """Write one campaign holding every answer of ``src`` into the log ``db``.

    The folder is read one file at a time and written in batches of ``batch_events``, so
    memory stays bounded by the largest file whatever the folder's size; ``progress`` hears
    of every imported answer (`harness.progress.RichProgress`); ``compact``: a new log is
    written in format 2 (`harness.store.compact_schema`)."""
    started = time.monotonic()
    plan = plan or plan_import(src, models)
    src, wanted, files = plan.src, plan.models, plan.files
    progress = progress or NullProgress()
    model_names = sorted({f"released:{f.model}" for f in files})
    options = {"source": "released", "released_dir": str(src), "released_models": wanted}
    relation = build_relation(RELATION, options)
    config = CampaignConfig(
        name=f"biaslens-import:{src.name}",
        seed=CAMPAIGN_SEED,
        repeats=max(f.run for f in files),
        models=[ModelSpec(name=m) for m in model_names],
        relations=[RelationSpec(name=RELATION, options=options)],
    )
    campaign_id = (
        campaign or "biaslens-" + hashlib.sha1(f"{src}|{time.time_ns()}".encode()).hexdigest()[:8]
    )
    summary = ImportSummary(campaign=campaign_id, models=model_names, files=len(files))
    target = Path(db)
    write = functools.partial(
        _write_campaign,
        plan=plan,
        config=config,
        relation=relation,
        summary=summary,
        progress=progress,
        compact=compact,
        batch_events=batch_events,
    )
    if target.exists():
        # Another log: this campaign is appended among its others, each commit durable, so
        # a killed import leaves the log readable and its campaign "unfinished, N of M".
        await write(target, bulk=False)
    else:
        # A new log is built whole in a private file and published at the end
        # (`harness.store.fresh_log`): a killed import leaves no log under the name.
        with FreshLog.build(target) as fresh:
            summary.dead_partials_removed = fresh.dead_partials_removed
            await write(fresh.partial, bulk=True)
            fresh.publish()
    summary.elapsed_s = time.monotonic() - started
    return summary


async def _write_campaign(
    db: Path,
    *,
    bulk: bool,
    plan: ImportPlan,
    config: CampaignConfig,
    relation: Relation,
    summary: ImportSummary,
    progress: ProgressSink,
    compact: bool,
    batch_events: int,
) -> None:
    """Every answer of the plan's files as one campaign appended to ``db``; ``bulk``: a
    log built whole (`EventWriter.open`'s ``bulk``)."""
    src, files = plan.src, plan.files
    campaign_id, model_names = summary.campaign, summary.models
    async with await EventWriter.open(db, max_group=8, compact=compact, bulk=bulk) as store:
        head: list[Event] = [
            campaign_started(config, plan.planned),
            Note(
                topic=IMPORT_TOPIC,
                data={
                    "source": str(src),
                    # An import is not resumed (harness.campaign_status): it is run again.
                    "command": f"harness import biaslens {src} --db NEW.db",
                    "models": model_names,
                    "prompt": "the bare question: the released files do not record the "
                    "answer-format instruction appended by the authors",
                    **_folder_notes(src),
                },
            ),
        ]
        await store.append([PendingEvent(campaign_id, "", n, ev) for n, ev in enumerate(head, 1)])
        tail: list[Event] = []
        importer = _Importer(store, campaign_id, batch_events, relation)
        offset = 0  # case index of the file's first row: rows of every file, skipped included
        with gc_paused():
            for f in files:
                rows, lossy = read_answer_rows(f.path)
                skipped = 0
                for row_no, row in enumerate(rows):
                    data = row_case_data(f, row_no, row)
                    if data is None:
                        skipped += 1
                        continue
                    answer = row.get("Answer", "")
                    case, verdict, events = importer.case_events(
                        f, offset + row_no, row_no, answer, data
                    )
                    await importer.add(events)
                    progress.case_closed(case, verdict)
                    summary.answers += 1
                offset += len(rows)
                summary.skipped_rows += skipped
                tail.append(
                    Note(
                        topic=FILE_TOPIC,
                        data={
                            "model": f"released:{f.model}",
                            "variant": f.variant,
                            "attribute": f.attribute,
                            "run": f.run,
                            "rows": len(rows),
                            "skipped_rows": skipped,
                            "lossy_utf8": lossy,
                            "path": str(f.path.relative_to(src)),
                            "sha256": hashlib.sha256(f.path.read_bytes()).hexdigest(),
                        },
                    )
                )
                del rows  # the next file replaces this one: one file's rows at a time
        tail.append(
            CampaignFinished(status="completed", reason="imported", cases_closed=summary.answers)
        )
        # The last answers and the campaign's end commit together, as one batch.
        for n, ev in enumerate(tail, len(head) + 1):
            kind, version, payload = encode_event(ev)
            importer.pending.append((campaign_id, "", n, kind, version, None, None, payload))
        await importer.flush(wait=True)
        summary.events = importer.events + len(head)
    # Planner statistics: without them SQLite joins the `verdicts` view through the
    # (campaign, kind) index, which is quadratic on a 100k-case log.
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA analysis_limit=1000")  # sampled statistics: enough, and fast
        conn.execute("ANALYZE")
        conn.commit()
