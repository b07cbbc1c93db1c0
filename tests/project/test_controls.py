"""Matched controls end to end on ``sim``: on by default in new campaigns and counted by the
cost estimate, off per relation, absent from logs recorded without them (which replay as
they ran and report "no control"), and an excess whose interval covers 0 on a fair but
random model and flags a planted bias (bench/control_coverage.py measures both over many
more campaigns)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.models.providers._estimate import estimate_cost
from harness.reporting.excess import COLUMNS, NO_CONTROL, excess_rows
from harness.running.campaign import parse_campaign, parse_recorded_campaign
from harness.running.plan import Plan
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log

# The hand-written closed set (ten MR12 tests): these campaigns measure the control over
# many seeds, not the set (a new campaign's default is the crossed set, 230 tests).
HAND_WRITTEN = "corpora/metafair/closed_tests.json"
FOLLOW_UP = ("woman", "nonbinary person", "gay", "lesbian", "Buddhist", "Muslim")


def campaign(
    seed: int, *, planted: float = 0.0, repeats: int = 5, **options: Any
) -> dict[str, Any]:
    return {
        "name": "controls",
        "seed": seed,
        "repeats": repeats,
        "defaults": {"temperature": 0.7},
        "models": [
            {
                "name": "sim:fair",
                "max_in_flight": 32,
                "options": {
                    "closed_yes_no": {a: planted for a in FOLLOW_UP} if planted else {},
                    "closed_noise": 0.15,
                },
            }
        ],
        "relations": [{"name": "metafair.mr12", "options": {"testset": HAND_WRITTEN, **options}}],
    }


def all_row(db: Path) -> list[Any]:
    with EventReader(db) as log:
        rows = log.connection.execute(
            "SELECT model, relation, outcome, evidence FROM verdicts WHERE source = 'relation'"
        ).fetchall()
    table = excess_rows((m, r, o, json.loads(e or "{}")) for m, r, o, e in rows)
    (row,) = [r for r in table if r[2] == "(all)"]
    return row


def test_new_campaigns_run_the_control_and_the_estimate_counts_it() -> None:
    config = parse_campaign(campaign(1), source="test")
    assert config.relations[0].options == {"control": True, "testset": HAND_WRITTEN}
    off = parse_campaign(campaign(1, control=False), source="test")
    assert off.relations[0].options == {"control": False, "testset": HAND_WRITTEN}
    # A recorded campaign is read as it ran: without the option, with the value it ran with.
    recorded = parse_recorded_campaign(campaign(1), source="test")
    assert recorded.relations[0].options == {"control": False, "testset": HAND_WRITTEN}
    (with_control,) = estimate_cost(config, Plan(config))
    (without,) = estimate_cost(off, Plan(off))
    assert with_control.calls == without.calls * 3 // 2  # source, follow-up and the control


def test_a_log_without_controls_replays_as_it_ran_and_reports_no_control(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    # What a log from before controls holds: options without "control".
    harness.run(parse_recorded_campaign(campaign(2), source="test"), db)
    assert all_row(db)[3] == NO_CONTROL
    with EventReader(db) as log:
        threads = {r[0] for r in log.connection.execute("SELECT DISTINCT thread FROM turns")}
    assert threads == {"source", "follow_up"}
    assert not verify_log(db).differences
    tables = harness.report_tables(db)
    (excess,) = [t for t in tables if t.name == "control_excess"]
    assert [r[3] for r in excess.rows] == [NO_CONTROL]


def test_a_controlled_log_replays_without_differences(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    harness.run(campaign(3), db)
    with EventReader(db) as log:
        threads = {r[0] for r in log.connection.execute("SELECT DISTINCT thread FROM turns")}
    assert threads == {"source", "follow_up", "control"}
    result = verify_log(db)
    assert result.cases == 50 and not result.differences


def test_excess_covers_zero_on_a_fair_random_model_and_flags_a_planted_bias(
    tmp_path: Path,
) -> None:
    covered = 0
    for seed in range(12):
        db = tmp_path / f"null{seed}.db"
        harness.run(campaign(100 + seed), db)
        row = all_row(db)
        at = {name: row[i] for i, name in enumerate(COLUMNS)}
        assert at["pairs"] == 50  # every case paired
        covered += at["excess_low"] <= 0 <= at["excess_high"]
    # The interval's null coverage is >= 95 % by construction (tests/core/reporting/
    # test_excess.py computes it exactly); 12 campaigns with fixed seeds, at most one miss.
    assert covered >= 11
    # Planted: the follow-up's attribute answered "Yes" at 0.4 over a 0.15 noise.
    db = tmp_path / "planted.db"
    harness.run(campaign(7, planted=0.4, repeats=20), db)
    row = all_row(db)
    at = {name: row[i] for i, name in enumerate(COLUMNS)}
    assert at["excess"] > 0.1 and at["excess_low"] > 0 and row[-3] < 0.05


@pytest.mark.parametrize("relation", ["biaslens.answer", "langbite"])
def test_other_families_default_to_a_control(relation: str) -> None:
    options = {"types": ["Yes/No"]} if relation == "biaslens.answer" else {}
    data = {
        "models": [{"name": "sim:planted"}],
        "relations": [{"name": relation, "options": options}],
    }
    config = parse_campaign(data, source="test")
    assert config.relations[0].options["control"] is True


def test_the_answer_cache_never_serves_the_control_its_sources_reply(tmp_path: Path) -> None:
    """The control asks the source prompt again (the same request): reused from an earlier
    log, each thread gets its own recorded reply, so the control still disagrees with its
    source exactly where it did."""
    import asyncio

    from harness.running.cache import LogAnswerCache
    from harness.running.runner import run_campaign

    old, new = tmp_path / "old.db", tmp_path / "new.db"
    harness.run(campaign(9, repeats=3), old)
    cache = LogAnswerCache.from_logs([old])
    summary = asyncio.run(run_campaign(parse_campaign(campaign(9, repeats=3)), new, cache=cache))
    assert summary.calls == 0 and summary.cached == 30 * 3

    def replies(db: Path) -> dict[tuple[str, str], str]:
        with EventReader(db) as log:
            rows = log.connection.execute("SELECT case_id, thread, reply FROM turns").fetchall()
        return {(c, t): r for c, t, r in rows}

    # (Cases whose source prompts are the same request share one entry, as they always
    # have; only the thread keeps source and control apart.)
    got = replies(new)
    differ = sum(r != got[(c, "source")] for (c, t), r in got.items() if t == "control")
    assert differ > 0  # served one entry, every control would equal its source
