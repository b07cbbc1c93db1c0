"""A report's memory does not grow with the log (invariant 6): the released BiasLens report of
four times the answers peaks about as high as the report of one time the answers."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

from harness.plugins.assembly import build_report
from harness.store.reader import EventReader
from relations.biaslens.importer import import_released
from tests.families.biaslens.test_biaslens_import_stream import released_folder


def _imported(root: Path, attributes: int) -> Path:
    db = root / "log.db"
    asyncio.run(import_released(released_folder(root / "src", attributes), db))
    return db


def _report_peak(db: Path) -> int:
    tracemalloc.start()
    try:
        with EventReader(db) as log:
            build_report(log, mode="released")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_released_report_memory_does_not_grow_with_the_answers(tmp_path: Path) -> None:
    # One attribute (1,197 answers of 3 kB) against four: a report holding every answer or
    # every verdict peaks about four times higher; one tallying a (model, attribute) group
    # at a time and counting verdicts in one streamed pass stays level. The answers are
    # read alike in both modes (no row of the disagreement or INVALID listings, whose
    # rows are the report's output and grow with it by design). A first report loads the
    # modules and caches a report pulls in, which would otherwise count as rows.
    small = _imported(tmp_path / "small", 1)
    large = _imported(tmp_path / "large", 4)
    _report_peak(small)
    small_peak = _report_peak(small)
    large_peak = _report_peak(large)
    assert large_peak < 1.6 * small_peak, (small_peak, large_peak)
