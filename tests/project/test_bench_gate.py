"""The trials of bench/gate_alarms.py: a sim trial with a planted regression fails the gate and
one without passes (these seeds), and drawn pairs follow the planned discordance rates.

The benchmark's figures (hundreds of trials) are in bench/RESULTS.md, not in the suite.
"""

from __future__ import annotations

import random
from pathlib import Path

from fixtures.bench_scripts import load_bench_script

gate_alarms = load_bench_script("gate_alarms")


def test_a_sim_trial_fails_the_gate_on_the_planted_regression_only(tmp_path: Path) -> None:
    assert gate_alarms.sim_trial(tmp_path, 1_000_000, False, 200, 60) == (False, False)
    assert gate_alarms.sim_trial(tmp_path, 2_000_000, True, 200, 60)[0] is True
    assert not list(tmp_path.iterdir())  # each trial's log is removed


def test_drawn_pairs_fail_the_gate_about_as_often_as_planned() -> None:
    rng = random.Random(5)
    # A rise far above the plan's detectable size fails (almost) always; none (almost) never.
    assert sum(gate_alarms.planned_trial(rng, 200, 0.25, 0.02) for _ in range(20)) >= 19
    assert sum(gate_alarms.planned_trial(rng, 200, 0.03, 0.03) for _ in range(20)) <= 2
