"""The reading half of a BiasLens import: answer files in, stored rows out, in a second
process beside the writer.

An import has two halves: reading the CSV files and encoding each answer's five events
(`answer_chunks`), and writing them into the log. `chunks_from_process` runs `answer_chunks`
in a second process (`ProcessItems`) and hands its chunks to the writer in order, so the
two halves overlap. Every event is a function of the file, its row and the case index alone,
so the log is the same row for row, gseq and batch included (`bench/compare_import_logs.py`).
At most ``read_ahead`` chunks wait in the parent: memory stays bounded.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.family_api import (
    EncodedEvent,
    GenerationParams,
    ProcessItems,
    Verdict,
    build_relation,
    seed_deriver,
)
from relations.biaslens.import_events import ImportEncoder
from relations.biaslens.relations import BiasLensAnswer
from relations.biaslens.released import AnswerFile, answer_case_rows

RELATION = "biaslens.answer"
CAMPAIGN_SEED = 0


@dataclass(frozen=True)
class ImportJob:
    """What the reading half needs (picklable: it crosses to the child process)."""

    src: Path
    files: tuple[AnswerFile, ...]
    options: dict[str, Any]
    campaign: str
    chunk_answers: int = 1_000


@dataclass
class Chunk:
    """The rows of consecutive answers, and their outcomes (for the progress bar)."""

    rows: list[EncodedEvent] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class FileRead:
    """A file whose answers were all in the chunks before this: its Note's data."""

    note: dict[str, Any]
    skipped: int


def case_id_of(model: str, f: AnswerFile, row_no: int) -> str:
    # Ids sort in the order they are written: the model first (a folder is read model by
    # model), then the run before a zero-padded row. The log's indexes on case_id then
    # grow at one point instead of splitting pages all over: with the model at the end
    # (".../02195@model"), each model's cases fell between the previous models' and the
    # writer's commits grew with every model (bench/RESULTS.md, 2026-11-27). The model is
    # written once: every byte of an id is stored in the table and in two indexes.
    return f"{RELATION}/{model}/{f.variant}/{f.attribute}/r{f.run}/{row_no:05d}"


VERDICTS_KEPT = 16_384  # answers' verdicts kept at most (a group's runs: ~9,000 answers)


def verdict_key(data: dict[str, Any], answer: str) -> tuple[Any, ...]:
    """What `BiasLensAnswer.answer_verdict` reads of an answer's case data, and the answer:
    answers with the same key have the same verdict
    (tests/families/biaslens/test_biaslens_import_events.py holds the relation to it)."""
    judges = data.get("released_judges")
    return (
        data["type"],
        data["question"],
        data["attribute"],
        None if judges is None else tuple(judges),
        answer,
    )


def answer_chunks(job: ImportJob) -> Iterator[Chunk | FileRead]:
    """Every answer of ``job``'s files as rows, in chunks of ``chunk_answers`` answers, a
    `FileRead` after each file's last. One file's rows are held at a time."""
    relation = build_relation(RELATION, job.options)
    if not isinstance(relation, BiasLensAnswer):
        raise TypeError(f"{RELATION} is not BiasLens's answer relation")
    encoder = ImportEncoder(relation, GenerationParams())
    seed = seed_deriver(CAMPAIGN_SEED, RELATION)  # derive_seed(.., .., index)
    verdicts: dict[tuple[Any, ...], Verdict | None] = {}
    group: tuple[str, str, str] | None = None  # the files' (model, variant, attribute)
    chunk = Chunk()
    offset = 0  # case index of the file's first row: rows of every file, skipped included
    for f in job.files:
        if (f.model, f.variant, f.attribute) != group:
            # The key holds the attribute: an earlier group's answers never match again,
            # and dropping them keeps the memory one group's (its runs' files).
            group = (f.model, f.variant, f.attribute)
            verdicts.clear()
        count, rows, lossy = answer_case_rows(f)
        model = f"released:{f.model}"
        skipped = 0
        for row_no, data, answer in rows:
            if data is None:
                skipped += 1
                continue
            case_id = case_id_of(model, f, row_no)
            # The recorded answer fixes the verdict: the relation's own decision (what
            # its step returns for this one-turn transcript), without the transcript;
            # once per distinct answer to a question (a third of the answers repeat
            # one of an earlier run).
            key = verdict_key(data, answer)
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = relation.answer_verdict(data, answer)
                if len(verdicts) >= VERDICTS_KEPT:
                    verdicts.clear()
                verdicts[key] = verdict
            if verdict is None:
                raise AssertionError(f"{case_id}: a released answer must fix its verdict")
            # The Case's fields, encoded without building it (`ImportEncoder.answer_rows`).
            chunk.rows += encoder.answer_rows(
                job.campaign,
                case_id,
                model,
                offset + row_no,
                f.run - 1,
                seed(offset + row_no),  # what replay re-derives
                data,
                answer,
                verdict,
            )
            chunk.outcomes[verdict.outcome.value] += 1
            if len(chunk.rows) >= 5 * job.chunk_answers:
                yield chunk
                chunk = Chunk()
        offset += count
        if chunk.rows:
            yield chunk
            chunk = Chunk()
        yield FileRead(_file_note(job.src, f, count, skipped, lossy), skipped)
        del rows  # the next file replaces this one: one file's rows at a time


def _file_note(src: Path, f: AnswerFile, rows: int, skipped: int, lossy: bool) -> dict[str, Any]:
    return {
        "model": f"released:{f.model}",
        "variant": f.variant,
        "attribute": f.attribute,
        "run": f.run,
        "rows": rows,
        "skipped_rows": skipped,
        "lossy_utf8": lossy,
        "path": str(f.path.relative_to(src)),
        "sha256": hashlib.sha256(f.path.read_bytes()).hexdigest(),
    }


def chunks_from_process(job: ImportJob, read_ahead: int = 16) -> ProcessItems[Chunk | FileRead]:
    """`answer_chunks(job)` computed in a second process started here, its items read ahead:
    it keeps reading while this one does its own first work (counting the plan, writing
    the campaign's first events). Iterate with ``items()``; ``close()`` it always."""
    return ProcessItems("the import's reading process", answer_chunks, job, read_ahead=read_ahead)
