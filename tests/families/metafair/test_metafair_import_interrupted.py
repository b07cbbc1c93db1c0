"""An interrupted `harness import metafair` leaves no file under the log's name (a 0-byte or
empty log would block the re-import), and the re-import then succeeds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.store.writer import EventWriter
from relations.metafair.importing.importer import import_pairs
from tests.families.metafair.test_metafair_import import pair_rows, write_csv


def test_an_interrupted_import_leaves_no_file_and_imports_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = write_csv(tmp_path / "pairs.csv", pair_rows(40))
    db = tmp_path / "pairs.db"
    append = EventWriter.append

    async def interrupted(self: EventWriter, events: object) -> list[int]:
        raise KeyboardInterrupt  # Ctrl-C, or SIGTERM (the CLI turns it into the same)

    monkeypatch.setattr(EventWriter, "append", interrupted)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(import_pairs(src, db, model="llama3"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.csv"]  # no log, no partial
    monkeypatch.setattr(EventWriter, "append", append)
    summary = asyncio.run(import_pairs(src, db, model="llama3"))
    assert summary.cases == 40 and db.exists()
