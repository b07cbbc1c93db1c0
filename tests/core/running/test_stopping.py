"""Stopping when decided, in a run: the option, the looks in the log, the cases not drawn,
resume reading the decisions and replay recomputing them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness.reporting.campaign_status import campaign_status, stopping_lines
from harness.running.campaign import Stopping, parse_campaign
from harness.running.engine import Engine, NullProgress
from harness.running.plan import Plan
from harness.running.runner import resume_campaign, run_campaign
from harness.running.stopping import (
    StoppingMonitor,
    monitor_from_log,
    recomputed_looks,
    recorded_looks,
)
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.relation import Case, Verdict


def _data(stopping: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "stop",
        "seed": 3,
        "repeats": 2,
        "models": [{"name": "sim:planted", "max_in_flight": 8}],
        "relations": [{"name": "metaquerier.mr1", "cases": 120}],
    }
    if stopping is not None:
        data["stopping"] = stopping
    return data


def test_the_option_is_left_out_when_unset_and_checked_when_set() -> None:
    plain = parse_campaign(_data(None))
    assert "stopping" not in plain.resolved()
    with_stop = parse_campaign(_data({"look_every": 20}))
    assert with_stop.resolved()["stopping"]["look_every"] == 20
    assert with_stop.config_hash() != plain.config_hash()
    again = parse_campaign(with_stop.resolved(), recorded=True)
    assert again.stopping == with_stop.stopping
    for bad, field in (
        ({"look_every": 0}, "stopping.look_every"),
        ({"alpha": 0.5}, "stopping.alpha"),
        ({"smallest_effect": 0}, "stopping.smallest_effect"),
        ({"method": "peek"}, "stopping.method"),
        ({"every": 5}, "stopping.every"),
    ):
        with pytest.raises(ConfigError) as caught:
            parse_campaign(_data(bad))
        assert field in str(caught.value)


@pytest.mark.parametrize("method", ["confidence-sequence", "group-sequential"])
def test_looks_follow_the_case_order_not_the_closing_order(method: str) -> None:
    """Closing the same verdicts in another order takes the same looks."""
    config = parse_campaign(_data({"look_every": 10, "smallest_effect": 0.3, "method": method}))
    plan = Plan(config)
    closes = [
        (i, r, "VIOLATED" if (i * 7 + r) % 5 == 0 else "HELD") for i in range(120) for r in (0, 1)
    ]
    taken = []
    for order in (closes, list(reversed(closes)), closes[1::2] + closes[::2]):
        monitor = StoppingMonitor(config.stopping or Stopping(), plan)
        looks = []
        for i, r, outcome in order:
            looks += monitor.closed(
                "metaquerier.mr1", "sim:planted", i, r, outcome, {"control": {"outcome": "HELD"}}
            )
        taken.append(looks)
    assert taken[0] and taken[0] == taken[1] == taken[2]
    assert [x.cases for x in taken[0]] == [10 * (k + 1) for k in range(len(taken[0]))]


async def test_a_decided_relation_draws_no_more_cases(tmp_path: Path) -> None:
    config = parse_campaign(_data({"look_every": 20, "smallest_effect": 0.1}))
    db = tmp_path / "stop.db"
    summary = await run_campaign(config, db)
    assert summary.status == "completed"
    with EventReader(db) as log:
        campaign = log.latest_campaign()
        looks = recorded_looks(log, campaign)
        status = campaign_status(log, campaign)
        assert recomputed_looks(config.stopping or Stopping(), Plan(config), log, campaign) == []
        _, missing = monitor_from_log(config.stopping or Stopping(), Plan(config), log, campaign)
    assert missing == []
    decided = [x for x in looks if x.decision != "continue"]
    assert len(decided) == 1 and decided[0] == looks[-1] and decided[0].decision == "no_effect"
    # Every planned case closed or not drawn; none lost, none drawn past the decision.
    assert summary.not_drawn > 0
    assert summary.cases_closed + summary.not_drawn == 240
    assert status.status == "completed" and status.not_drawn == summary.not_drawn
    assert any("not drawn" in line for line in stopping_lines(status))
    # Resume reads the decision from the log: nothing more is opened.
    again = await resume_campaign(db)
    assert again.cases_closed == 0 and again.not_drawn == summary.not_drawn
    assert verify_log(db).differences == []
    # Replay sees an edited decision.
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE events SET payload = replace(payload, '\"no_effect\"', '\"effect\"') "
            "WHERE kind = 'StoppingLook'"
        )
    with EventReader(db) as log:
        found = recomputed_looks(config.stopping or Stopping(), Plan(config), log, campaign)
    assert len(found) == 1
    where, logged, now = found[0]
    assert logged.startswith("effect") and now.startswith("no_effect")
    verified = verify_log(db)
    assert [m.case_id for m in verified.differences] == [where]


class _StopAt(NullProgress):
    """Stops the engine (as Ctrl-C does) once ``at`` cases have closed."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.closed = 0
        self.engine: Engine | None = None

    def case_closed(self, case: Case, verdict: Verdict) -> None:
        self.closed += 1
        if self.closed == self.at and self.engine is not None:
            self.engine.request_stop("test stop")


def _looks(db: Path) -> list[tuple[str, int, int, str, float, float]]:
    with EventReader(db) as log:
        looks = recorded_looks(log, log.latest_campaign())
    return sorted((x.relation, x.look, x.cases, x.decision, x.low, x.high) for x in looks)


@pytest.mark.parametrize(("at", "method"), [(30, "confidence-sequence"), (70, "group-sequential")])
async def test_a_stopped_and_resumed_campaign_takes_the_same_looks(
    tmp_path: Path, at: int, method: str
) -> None:
    """Stopped mid-run (before or after a decision) and resumed, a campaign takes the same
    looks and decisions as one run without a stop, and closes the same number of cases."""
    data = _data({"look_every": 20, "smallest_effect": 0.1, "method": method})
    data["relations"].append({"name": "metaquerier.mr2", "cases": 60})
    config = parse_campaign(data)
    whole = tmp_path / "whole.db"
    await run_campaign(config, whole)
    cut = tmp_path / "cut.db"
    progress = _StopAt(at)
    original = Engine.run

    async def capture(self: Engine) -> Any:
        progress.engine = self
        return await original(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "run", capture)
        stopped = await run_campaign(config, cut, progress=progress)
    assert stopped.status == "stopped"
    resumed = await resume_campaign(cut)
    assert resumed.status == "completed"
    assert _looks(cut) == _looks(whole)
    assert any(x[3] != "continue" for x in _looks(whole))
    with EventReader(cut) as log:
        assert verify_log(cut).differences == []
        status = campaign_status(log, log.latest_campaign())
    assert status.status == "completed"
    assert status.closed + status.not_drawn == status.planned


async def test_a_campaign_that_stops_on_effects_only_draws_every_case(tmp_path: Path) -> None:
    """``stop_on = ["effect"]``: a relation read as no effect keeps drawing its cases (its
    looks go on and say so), so nothing is left undrawn."""
    config = parse_campaign(
        _data({"look_every": 20, "smallest_effect": 0.1, "stop_on": ["effect"]})
    )
    db = tmp_path / "effects.db"
    summary = await run_campaign(config, db)
    assert summary.status == "completed"
    assert summary.not_drawn == 0 and summary.cases_closed == 240
    looks = _looks(db)
    assert len(looks) == 12 and any(x[3] == "no_effect" for x in looks)
    with EventReader(db) as log:
        status = campaign_status(log, log.latest_campaign())
        assert verify_log(db).differences == []
    assert status.not_drawn == 0
    assert not any("its later cases not drawn" in line for line in stopping_lines(status))
    with pytest.raises(ConfigError) as caught:
        parse_campaign(_data({"stop_on": []}))
    assert "stopping.stop_on" in str(caught.value)
