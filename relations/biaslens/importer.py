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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.family_api import (
    CampaignConfig,
    CampaignFinished,
    EncodedEvent,
    Event,
    EventWriter,
    FreshLog,
    ModelSpec,
    Note,
    PendingEvent,
    ProcessItems,
    RelationSpec,
    campaign_started,
    encode_event,
)
from relations.biaslens.import_events import ROWS_PER_ANSWER
from relations.biaslens.import_rows import (
    CAMPAIGN_SEED,
    RELATION,
    Chunk,
    FileRead,
    ImportJob,
    chunks_from_process,
)
from relations.biaslens.released import (
    VARIANT_DIRS,
    AnswerFile,
    count_case_rows,
    find_answer_files,
)

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


class ImportProgress(Protocol):
    """Hears how many answers an import plans, then of imported answers counted by outcome
    (`harness.cli.progress.RichProgress`)."""

    def cases_planned(self, total: int) -> None: ...

    def cases_closed(self, outcomes: Mapping[str, int]) -> None: ...


class _Unheard:
    def cases_planned(self, total: int) -> None:
        pass

    def cases_closed(self, outcomes: Mapping[str, int]) -> None:
        pass


class _Batches:
    """The writing half's batches: rows gathered to ``batch_events`` and appended while the
    next batch fills, at most three in flight."""

    def __init__(self, store: EventWriter, batch_events: int) -> None:
        self.store = store
        self.batch_events = batch_events
        self.pending: list[EncodedEvent] = []
        self.in_flight: list[asyncio.Task[list[int]]] = []
        self.events = 0

    async def add(self, rows: list[EncodedEvent]) -> None:
        self.pending.extend(rows)
        # A batch ends at the first answer's end at or past ``batch_events`` rows, wherever
        # the reading half cut its chunks: the same batches as rows added answer by answer.
        cut = -(-self.batch_events // ROWS_PER_ANSWER) * ROWS_PER_ANSWER
        while len(self.pending) >= cut:
            batch, self.pending = self.pending[:cut], self.pending[cut:]
            await self._append(batch)

    async def flush(self, *, wait: bool) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            await self._append(batch)
        while self.in_flight and wait:
            await self.in_flight.pop(0)

    async def _append(self, batch: list[EncodedEvent]) -> None:
        self.events += len(batch)
        self.in_flight.append(asyncio.create_task(self.store.append_many(batch)))
        while len(self.in_flight) > 2:
            await self.in_flight.pop(0)


@dataclass(frozen=True)
class ImportPlan:
    """The answer files an import reads, in case-index order, and how many cases they hold
    (None: not counted yet; the import counts them while its reading process starts)."""

    src: Path
    models: tuple[str, ...] | None
    files: tuple[AnswerFile, ...]
    planned: int | None


def plan_import(
    src: str | Path, models: list[str] | None = None, *, count: bool = True
) -> ImportPlan:
    """Find the answer files and (``count``) count the rows that become cases: a cheap
    first pass whose count is in the campaign's first event, so an import killed while it
    appends to an existing log reads "unfinished, N of M"."""
    src = Path(src).resolve()
    wanted = tuple(sorted(models)) if models else None
    files = tuple(find_answer_files(src, list(wanted) if wanted else None))
    return ImportPlan(src, wanted, files, count_planned(files) if count else None)


def count_planned(files: tuple[AnswerFile, ...]) -> int:
    """How many rows of ``files`` become cases (`count_case_rows`)."""
    return sum(count_case_rows(f.path) for f in files)


async def import_released(
    src: str | Path,
    db: str | Path,
    *,
    models: list[str] | None = None,
    campaign: str | None = None,
    batch_events: int = 5_000,
    plan: ImportPlan | None = None,
    progress: ImportProgress | None = None,
    compact: bool = False,
) -> ImportSummary:
    """Write one campaign holding every answer of ``src`` into the log ``db``.

    A child process reads the folder one file at a time and encodes the rows
    (`relations.biaslens.import_rows`) while this one writes them in batches of
    ``batch_events``, so memory stays bounded by the largest file whatever the folder's
    size; ``progress`` hears of every imported answer (`harness.cli.progress.RichProgress`);
    ``compact``: a new log is written in format 2 (`harness copy --compact`'s)."""
    started = time.monotonic()
    plan = plan or plan_import(src, models, count=False)
    src, wanted, files = plan.src, plan.models, plan.files
    model_names = sorted({f"released:{f.model}" for f in files})
    options = {"source": "released", "released_dir": str(src), "released_models": wanted}
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
        job=ImportJob(src, files, options, campaign_id),
        summary=summary,
        progress=progress or _Unheard(),
        compact=compact,
        batch_events=batch_events,
    )
    await _write_log(target, write, summary)
    summary.elapsed_s = time.monotonic() - started
    return summary


async def _write_log(target: Path, write: functools.partial[Any], summary: ImportSummary) -> None:
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


async def _write_campaign(
    db: Path,
    *,
    bulk: bool,
    plan: ImportPlan,
    config: CampaignConfig,
    job: ImportJob,
    summary: ImportSummary,
    progress: ImportProgress,
    compact: bool,
    batch_events: int,
) -> None:
    """Every answer of the plan's files as one campaign appended to ``db``; ``bulk``: a
    log built whole (`EventWriter.open`'s ``bulk``)."""
    async with await EventWriter.open(db, max_group=8, compact=compact, bulk=bulk) as store:
        reading = chunks_from_process(job)
        try:
            await _write_answers(store, reading, plan, config, summary, progress, batch_events)
        finally:
            reading.close()
    # Planner statistics: without them SQLite joins the `verdicts` view through the
    # (campaign, kind) index, which is quadratic on a 100k-case log.
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA analysis_limit=1000")  # sampled statistics: enough, and fast
        conn.execute("ANALYZE")
        conn.commit()


async def _write_answers(
    store: EventWriter,
    reading: ProcessItems[Chunk | FileRead],
    plan: ImportPlan,
    config: CampaignConfig,
    summary: ImportSummary,
    progress: ImportProgress,
    batch_events: int,
) -> None:
    """The campaign's events, its answers as the reading process hands them over. The plan
    is counted here if it was not, while the reading process starts and reads ahead."""
    campaign_id = summary.campaign
    planned = plan.planned if plan.planned is not None else count_planned(plan.files)
    progress.cases_planned(planned)
    head: list[Event] = [
        campaign_started(config, planned),
        Note(
            topic=IMPORT_TOPIC,
            data={
                "source": str(plan.src),
                # An import is not resumed (harness.reporting.campaign_status): it is run again.
                "command": f"harness import biaslens {plan.src} --db NEW.db",
                "models": summary.models,
                "prompt": "the bare question: the released files do not record the "
                "answer-format instruction appended by the authors",
                **_folder_notes(plan.src),
            },
        ),
    ]
    await store.append([PendingEvent(campaign_id, "", n, ev) for n, ev in enumerate(head, 1)])
    tail: list[Event] = []
    batches = _Batches(store, batch_events)
    async for item in reading.items():
        if isinstance(item, FileRead):
            summary.skipped_rows += item.skipped
            tail.append(Note(topic=FILE_TOPIC, data=item.note))
            continue
        await batches.add(item.rows)
        progress.cases_closed(item.outcomes)
        summary.answers += item.outcomes.total()
    tail.append(
        CampaignFinished(status="completed", reason="imported", cases_closed=summary.answers)
    )
    # The last answers and the campaign's end commit together, as one batch.
    for n, ev in enumerate(tail, len(head) + 1):
        kind, version, payload = encode_event(ev)
        batches.pending.append((campaign_id, "", n, kind, version, None, None, payload))
    await batches.flush(wait=True)
    summary.events = batches.events + len(head)
