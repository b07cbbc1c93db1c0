"""replay --verify on two processes (harness/verifying/_replay_parallel.py) gives the serial result,
difference for difference, whichever half a difference is in, and raises what the serial
loop raises when a case cannot be read."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

import harness.verifying._replay_parallel as parallel
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import VerifyResult, verify_log


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = parse_campaign(
        {
            "name": "parallel",
            "seed": 4,
            "models": [{"name": "sim:planted", "max_in_flight": 8}],
            "relations": [
                {"name": "metaquerier.mr1", "cases": 20},
                {"name": "metaquerier.mr2", "cases": 20},
            ],
        }
    )
    db = tmp_path_factory.mktemp("parallel") / "parallel.db"
    asyncio.run(run_campaign(config, db))
    return db


def _key(r: VerifyResult) -> tuple[object, ...]:
    return (r.campaign, r.cases, r.asks, r.verdicts, r.open_cases, r.differences)


def _both(db: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[VerifyResult, VerifyResult]:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CASES", 10**9)
    serial = verify_log(db)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CASES", 1)
    return serial, verify_log(db)


def _halves(db: Path) -> tuple[str, str, str]:
    """(the split point, the first case id, the last case id)."""
    with EventReader(db) as reader:
        campaign = reader.latest_campaign()
        boundary = parallel.split_point(db, reader.connection, campaign)
        ids = sorted(reader.case_ids(campaign))
    assert boundary is not None and ids[0] < boundary <= ids[-1]
    return boundary, ids[0], ids[-1]


def _edited_copy(log: Path, db: Path, sql: str, case_ids: list[str]) -> Path:
    """A copy of ``log`` at ``db`` with ``sql`` run once per case id (its one parameter)."""
    db.write_bytes(log.read_bytes())
    with sqlite3.connect(db) as conn:
        conn.executemany(sql, [(case_id,) for case_id in case_ids])
    conn.close()
    return db


def test_two_processes_give_the_serial_result(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CASES", 1)
    _halves(log)
    serial, split = _both(log, monkeypatch)
    assert split.differences == [] and split.cases == 40
    assert _key(split) == _key(serial)


def test_differences_in_both_halves_are_all_listed_in_order(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CASES", 1)
    _, first, last = _halves(log)
    db = _edited_copy(
        log,
        tmp_path / "tampered.db",
        'UPDATE events SET payload = replace(payload, \'"reason":"\','
        " '\"reason\":\"tampered ') WHERE case_id = ? AND kind = 'VerdictReached'",
        [first, last],
    )
    serial, split = _both(db, monkeypatch)
    assert [m.case_id for m in split.differences] == [first, last]
    assert _key(split) == _key(serial)


def test_an_unreadable_case_in_the_childs_half_raises_as_the_serial_loop_does(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CASES", 1)
    _, _, last = _halves(log)
    db = _edited_copy(
        log,
        tmp_path / "broken.db",
        # Not JSON: damage to read, not a case to compare (a deleted event is a difference).
        "UPDATE events SET payload = 'not json' WHERE case_id = ? AND kind = 'CaseOpened'",
        [last],
    )
    # ... its digest chain gone too (else the chain reports the edit, as a difference).
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM case_digests WHERE case_id = ?", (last,))
    conn.close()
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CASES", 10**9)
    with pytest.raises(Exception) as serial:
        verify_log(db)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CASES", 1)
    with pytest.raises(type(serial.value)) as split:
        verify_log(db)
    assert str(split.value) == str(serial.value)


def test_the_middle_case_is_read_along_a_covering_index_without_a_sort(log: Path) -> None:
    # Found before the fork, so its time is wall time of every parallel replay.
    with EventReader(log) as reader:
        plan = " ".join(
            str(row[-1])
            for row in reader.connection.execute(
                "EXPLAIN QUERY PLAN " + parallel.MIDDLE_CASE_SQL, ("c", 1)
            )
        )
    assert "COVERING INDEX" in plan and "TEMP B-TREE" not in plan
