"""Resume folds the log once, builds the plan once, and never regenerates a closed case."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import harness.running.runner
from harness.cli import main
from harness.models.providers import spent_so_far
from harness.plugins.family_parts import relation_classes
from harness.running.plan import Plan
from harness.running.runner import load_resume_point, run_campaign
from harness.store.fold import fold_case
from harness.store.open import open_reader
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.verifying.replay import verify_log
from tests.postgres_server import raw_sql

REOPENED = {
    "metaquerier.mr1/3/r0@sim:test",
    "metaquerier.mr1/3/r1@sim:test",
    "metaquerier.mr1/7/r1@sim:test",
}
NEVER_OPENED = {"metaquerier.mr1/15/r0@sim:test", "metaquerier.mr1/15/r1@sim:test"}


def _interrupted_log(db: str | Path, make_campaign: Any) -> None:
    """A finished campaign made to look interrupted: some cases lose their verdict (open,
    every turn answered), others were never opened."""
    # Without the matched control: two turns a case (the spend counted below).
    config = make_campaign(("metaquerier.mr1", 20, {"control": False}), repeats=2)
    summary = asyncio.run(run_campaign(config, db))
    assert summary.cases_closed == 40
    for case_id in REOPENED:
        raw_sql(
            str(db),
            "DELETE FROM events WHERE case_id = ? AND kind IN ('VerdictReached','CaseClosed')",
            case_id,
        )
        # A crash rolls a commit's digests back with its events; one made by hand must drop
        # them too (a format-2 log has none).
        with contextlib.suppress(Exception):
            raw_sql(str(db), "DELETE FROM case_digests WHERE case_id = ?", case_id)
    for case_id in NEVER_OPENED:
        raw_sql(str(db), "DELETE FROM events WHERE case_id = ?", case_id)


def test_resume_folds_once_and_skips_closed_cases_ungenerated(
    store_url: str, make_campaign: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On either store (a SQLite file, a PostgreSQL database)."""
    db_path = store_url
    _interrupted_log(db_path, make_campaign)
    folded: Counter[str] = Counter()
    generated: list[int] = []
    plans: list[Plan] = []

    def counting_fold(events: Any) -> Any:
        events = list(events)
        folded[events[0].case_id] += 1
        return fold_case(events)

    relation_cls = relation_classes()["metaquerier.mr1"]
    make_case = relation_cls.make_case

    def counting_make_case(self: Any, index: int, seed: int) -> Any:
        generated.append(index)
        return make_case(self, index, seed)

    plan_init = Plan.__init__

    def counting_plan_init(self: Plan, *args: Any, **kwargs: Any) -> None:
        plans.append(self)
        plan_init(self, *args, **kwargs)

    monkeypatch.setattr(harness.running.runner, "fold_case", counting_fold)
    monkeypatch.setattr(relation_cls, "make_case", counting_make_case)
    monkeypatch.setattr(Plan, "__init__", counting_plan_init)

    result = CliRunner().invoke(main, ["resume", str(db_path), "--no-report"])
    assert result.exit_code == 0, result.output
    assert "35 of 40 cases closed, 3 open" in result.output

    # Each of the 3 open cases folded exactly once, the 35 closed ones never (resume reads
    # their ids from the index, issue 14); one plan for the whole resume.
    assert len(folded) == 3 and set(folded.values()) == {1}
    assert len(plans) == 1
    # Only the indices with a case left to run were generated: 3 and 7 (open), 15 (new).
    assert sorted(generated) == [3, 7, 15]
    with open_reader(db_path) as log:
        states = [fold_case(events) for _, events in log.cases(log.latest_campaign())]
    assert len(states) == 40 and all(s.closed for s in states)
    assert verify_log(db_path).differences == []


def test_resume_point_carries_the_spend_of_the_log(db_path: Path, make_campaign: Any) -> None:
    _interrupted_log(db_path, make_campaign)
    conn = connect(db_path)
    with conn:  # as a vendor would have charged: cached answers cost nothing
        conn.execute(
            "UPDATE events SET payload = json_set(payload, '$.reply.cost_usd', 0.125)"
            " WHERE kind = 'ReplyReceived'"
        )
        conn.execute(
            "UPDATE events SET payload = json_set(payload, '$.cached', json('true'))"
            " WHERE kind = 'ReplyReceived' AND case_id LIKE 'metaquerier.mr1/1/%'"
        )
    conn.close()
    point = load_resume_point(db_path)
    with EventReader(db_path) as log:
        spent = spent_so_far(log, point.campaign)
    assert spent == pytest.approx(0.125 * (2 * 38 - 4))
    assert point.spent_usd == pytest.approx(spent)
