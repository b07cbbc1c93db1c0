"""The BiasLens import at scale: one answer file at a time (memory bounded by the largest
file, not the folder), and a progress sink told of every imported answer (issue 14)."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import itertools
import signal
import sqlite3
import subprocess
import sys
import tracemalloc
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from relations.biaslens.import_rows import ImportJob, answer_chunks, chunks_from_process
from relations.biaslens.importer import import_released, plan_import

HEADER = ["Role", "Question Type", "Question", "Answer", "LLM 1", "LLM 2", "LLM 3", "final"]
ROWS_PER_FILE = 400


def released_folder(
    root: Path, attributes: int, models: tuple[str, ...] = ("toy",), variants: int = 1
) -> Path:
    """``attributes`` x 3 runs of ROWS_PER_FILE rows each, with a row of unknown type, for
    each model and variant (``role`` first, then ``without_role``)."""
    for variant, model, a, run in itertools.product(
        ("role", "without_role")[:variants], models, range(attributes), (1, 2, 3)
    ):
        path = root / "answers" / variant / model / f"attr{chr(97 + a)}_answers_0{run}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(HEADER)
            for i in range(ROWS_PER_FILE - 1):
                q = f"Suppose you are a nurse, do you think group {i} leads better? " + "x" * 200
                w.writerow(["Nurses", "Yes/No", q, "Yes. " + "y" * 3000, "", "", "", ""])
            w.writerow(["Nurses", "Riddle", "an unknown type", "?", "", "", "", ""])
    return root


class Recording:
    """Hears of imported answers by outcome, as the progress bar does."""

    def __init__(self) -> None:
        self.closed: Counter[str] = Counter()
        self.calls = 0
        self.planned: list[int] = []

    def cases_planned(self, total: int) -> None:
        assert not self.closed, "the total comes before the first answer"
        self.planned.append(total)

    def cases_closed(self, outcomes: Mapping[str, int]) -> None:
        self.closed.update(outcomes)
        self.calls += 1


def test_progress_hears_of_every_imported_answer(tmp_path: Path) -> None:
    folder = released_folder(tmp_path / "src", 2)
    plan = plan_import(folder)
    assert plan.planned == 2 * 3 * (ROWS_PER_FILE - 1)  # the unknown-type rows are not cases
    sink = Recording()
    db = tmp_path / "x.db"
    summary = asyncio.run(import_released(folder, db, plan=plan, progress=sink))
    assert summary.answers == plan.planned == sink.closed.total()
    assert sink.planned == [plan.planned]
    assert sink.calls >= 6  # as the answers are written, not once at the end
    assert summary.skipped_rows == 6
    with contextlib.closing(sqlite3.connect(db)) as conn:
        counted = conn.execute(
            "SELECT json_extract(payload, '$.verdict.outcome'), count(*) FROM events"
            " WHERE kind = 'VerdictReached' GROUP BY 1"
        ).fetchall()
        (distinct,) = conn.execute(
            "SELECT count(DISTINCT case_id) FROM events WHERE kind = 'CaseClosed'"
        ).fetchone()
    assert dict(counted) == dict(sink.closed) and distinct == plan.planned


def test_an_import_without_a_count_counts_while_it_reads(tmp_path: Path) -> None:
    # The CLI plans without counting: the import counts the answers once its reading
    # process has started, and the campaign's first event holds the count all the same.
    folder = released_folder(tmp_path / "src", 2)
    plan = plan_import(folder, count=False)
    assert plan.planned is None
    sink = Recording()
    db = tmp_path / "x.db"
    summary = asyncio.run(import_released(folder, db, plan=plan, progress=sink))
    assert sink.planned == [summary.answers] == [2 * 3 * (ROWS_PER_FILE - 1)]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        (planned,) = conn.execute(
            "SELECT json_extract(payload, '$.planned_cases') FROM events"
            " WHERE kind = 'CampaignStarted'"
        ).fetchone()
    assert planned == summary.answers


def _peak_bytes(folder: Path) -> int:
    """Peak memory of the reading half (`answer_chunks`, the import's child process), run
    here, its chunks dropped as a writer would drop them."""
    job = ImportJob(folder, plan_import(folder).files, {"source": "released"}, "c")
    tracemalloc.start()
    try:
        for _ in answer_chunks(job):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_import_memory_does_not_grow_with_the_folder(tmp_path: Path) -> None:
    # Four times the files: a reader of the whole folder peaks about four times higher
    # (every row held at once), a reader of one file at a time stays level. A first pass
    # loads the modules and caches an import pulls in, which would otherwise count as rows.
    _peak_bytes(released_folder(tmp_path / "warm", 1))
    small = _peak_bytes(released_folder(tmp_path / "small", 1))
    large = _peak_bytes(released_folder(tmp_path / "large", 4))
    assert large < 1.6 * small, (small, large)


def test_batches_hold_whole_answers_wherever_the_chunks_end(tmp_path: Path) -> None:
    # The reading process cuts its chunks at files' ends and every 1,000 answers; the writer
    # still cuts a batch at the first answer's end past batch_events rows, as when answers
    # came one by one (the log is then the same row for row, batch numbers included).
    folder = released_folder(tmp_path / "src", 2)
    db = tmp_path / "b.db"
    asyncio.run(import_released(folder, db, batch_events=7))
    with contextlib.closing(sqlite3.connect(db)) as conn:
        sizes = conn.execute(
            "SELECT batch, count(*), sum(case_id = '') FROM events GROUP BY batch ORDER BY batch"
        ).fetchall()
    head, *middle, last = sizes
    assert head[1] == head[2] == 2  # CampaignStarted and the import's Note
    assert all(n == 10 and campaign_level == 0 for _, n, campaign_level in middle)
    assert last[2] == 6 + 1 and (last[1] - last[2]) % 5 == 0  # file Notes, CampaignFinished
    assert [b for b, _, _ in sizes] == list(range(1, len(sizes) + 1))


def test_a_failure_in_the_reading_process_is_raised_and_leaves_no_log(tmp_path: Path) -> None:
    folder = released_folder(tmp_path / "src", 2)
    plan = plan_import(folder)
    plan.files[-1].path.unlink()  # gone between the plan and its reading
    db = tmp_path / "x.db"
    with pytest.raises(FileNotFoundError, match=plan.files[-1].path.name):
        asyncio.run(import_released(folder, db, plan=plan))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_cli_import_draws_its_bar_on_stderr(tmp_path: Path) -> None:
    folder = released_folder(tmp_path / "src", 1)
    result = CliRunner().invoke(
        main, ["import", "biaslens", str(folder), "--db", str(tmp_path / "c.db")]
    )
    assert result.exit_code == 0, result.output
    assert "imported 1197 answers" in result.stderr
    assert result.stdout == ""


def test_imported_case_ids_keep_each_model_together(tmp_path: Path) -> None:
    # A folder is read model by model. Were a model's name only at the end of its case ids,
    # each model's cases would fall between the previous models' in the log's case_id
    # indexes, and the writer would split pages all over (the six-model import's commits grew
    # with every model). Sorted by id, each model's cases must form one run.
    folder = released_folder(tmp_path / "two", 1, models=("toy", "toy2"), variants=2)
    db = tmp_path / "two.db"
    asyncio.run(import_released(folder, db))
    with sqlite3.connect(db) as conn:
        written = conn.execute(
            "SELECT case_id, json_extract(payload, '$.case.model'),"
            " json_extract(payload, '$.case.data.variant')"
            " FROM events WHERE kind = 'CaseOpened' ORDER BY gseq"
        ).fetchall()
    assert len(written) == 2 * 2 * 3 * (ROWS_PER_FILE - 1)
    models = [model for _, model, _ in sorted(written)]
    runs = [m for i, m in enumerate(models) if i == 0 or models[i - 1] != m]
    assert runs == ["released:toy", "released:toy2"]
    # Within a model and variant, ids grow in the order they are written.
    for model in ("released:toy", "released:toy2"):
        for variant in ("role", "no_role"):
            mine = [c for c, m, v in written if (m, v) == (model, variant)]
            assert mine == sorted(mine) and len(mine) == 3 * (ROWS_PER_FILE - 1)


CANCELLED_CONSUMER = """
import asyncio, sys
from pathlib import Path
from relations.biaslens.import_rows import ImportJob, chunks_from_process
from relations.biaslens.importer import plan_import

async def main() -> None:
    folder = Path(sys.argv[1])
    reading = chunks_from_process(ImportJob(folder, plan_import(folder).files, {}, "c"))
    async def consume() -> None:
        async for _ in reading.items():
            await asyncio.sleep(3600)
    task = asyncio.create_task(consume())
    await asyncio.sleep(0.01)  # the child is still starting: the consumer waits in `get`
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    reading.close()

asyncio.run(main())  # waits for the default executor's threads before it returns
print("ended")
"""


def test_a_consumer_cancelled_while_it_waits_lets_the_process_end(tmp_path: Path) -> None:
    # Ctrl-C while the writer waits for the next chunk: the thread blocked in the queue's
    # `get` must be woken by `close`, or asyncio.run (and the import) never returns.
    folder = released_folder(tmp_path / "src", 1)
    done = subprocess.run(
        [sys.executable, "-c", CANCELLED_CONSUMER, str(folder)],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ended", done.stderr[-2000:]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_the_reading_process_ignores_ctrl_c_which_the_parent_handles(tmp_path: Path) -> None:
    # Ctrl-C reaches the whole process group; the parent stops the child (close), so the
    # child ignores SIGINT from its start (else it printed a traceback of its imports).
    folder = released_folder(tmp_path / "src", 1)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN already under a background CI shell
    reading = chunks_from_process(ImportJob(folder, plan_import(folder).files, {}, "c"))
    try:
        pid = reading._process.pid
        status = Path(f"/proc/{pid}/status").read_text()
        ignored = int(
            next(ln for ln in status.splitlines() if ln.startswith("SigIgn:")).split()[1], 16
        )
        assert ignored & (1 << (signal.SIGINT - 1))
        assert signal.getsignal(signal.SIGINT) == before  # the parent's own is back
    finally:
        reading.close()
