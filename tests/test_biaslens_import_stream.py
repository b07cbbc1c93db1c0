"""The BiasLens import at scale: one answer file at a time (memory bounded by the largest
file, not the folder), and a progress sink told of every imported answer (issue 14)."""

from __future__ import annotations

import asyncio
import csv
import itertools
import sqlite3
import tracemalloc
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.relation import Case, Verdict
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
    def __init__(self) -> None:
        self.closed: list[str] = []

    def case_started(self, case: Case) -> None:
        pass

    def case_closed(self, case: Case, verdict: Verdict) -> None:
        self.closed.append(case.case_id)

    def call_ended(self, *args: object) -> None:
        pass

    def retry_scheduled(self, *args: object) -> None:
        pass


def test_progress_hears_of_every_imported_answer(tmp_path: Path) -> None:
    folder = released_folder(tmp_path / "src", 2)
    plan = plan_import(folder)
    assert plan.planned == 2 * 3 * (ROWS_PER_FILE - 1)  # the unknown-type rows are not cases
    sink = Recording()
    summary = asyncio.run(import_released(folder, tmp_path / "x.db", plan=plan, progress=sink))
    assert summary.answers == plan.planned == len(sink.closed) == len(set(sink.closed))
    assert summary.skipped_rows == 6


def _peak_bytes(folder: Path, db: Path) -> int:
    tracemalloc.start()
    try:
        asyncio.run(import_released(folder, db, batch_events=500))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_import_memory_does_not_grow_with_the_folder(tmp_path: Path) -> None:
    # Four times the files: a reader of the whole folder peaks about four times higher
    # (every row held at once), a reader of one file at a time stays level. A first import
    # loads the modules and caches an import pulls in, which would otherwise count as rows.
    asyncio.run(import_released(released_folder(tmp_path / "warm", 1), tmp_path / "warm.db"))
    small = _peak_bytes(released_folder(tmp_path / "small", 1), tmp_path / "small.db")
    large = _peak_bytes(released_folder(tmp_path / "large", 4), tmp_path / "large.db")
    assert large < 1.6 * small, (small, large)


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
