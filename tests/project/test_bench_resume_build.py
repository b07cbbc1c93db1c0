"""bench/bench_resume.py builds its logs straight through sqlite3, with the engine's own rules
(asks, requests, parameters and seeds): a log it builds must be one `replay --verify` finds
nothing to report on, or its replay figures measure the exact path on differences, not the
quick path on a clean log. The builder broke once unnoticed when the engine's seeding moved."""

from __future__ import annotations

from pathlib import Path

from fixtures.bench_scripts import load_bench_script

from harness.verifying.replay import verify_log


def test_a_built_replay_log_verifies_without_a_difference(tmp_path: Path) -> None:
    bench_resume = load_bench_script("bench_resume")
    db = tmp_path / "replay.db"
    closed = 60
    bench_resume.build(db, closed * bench_resume.EVENTS_PER_CASE, base_cases=closed)
    result = verify_log(db)
    assert result.differences == []
    assert result.cases == closed + bench_resume.OPEN_CASES
    assert result.verdicts == closed
    assert result.asks == 2 * closed + bench_resume.OPEN_CASES  # two turns a closed case
