"""The release gate (``harness check --fail-on regression``) on pure noise and on an injected
regression: its false-alarm rate, and its power against the planned power.

Two parts, each over independent trials, each trial a whole gate decision (the comparison's
tables, the report's correction, the rule: `harness.reporting.compare.compare_tables`,
`harness.reporting.report.apply_fdr`, `harness.reporting.gate.evaluate`, the code
``harness check`` runs):

- **sim**: a campaign on the simulated model per trial (its own campaign seed: no case and
  no answer shared between trials) with two models, ``sim:base`` and ``sim:new``. Noise:
  both have the same options (two independent draws of one model). Regression: ``sim:new``
  names every unplanted term ten times as often (MetaQuerier ``background`` 0.002 -> 0.02).
  Relations MetaQuerier MR2 and Meta-Fair MR8, so the gate checks two relation families
  and their groups (and refusal/INVALID families when any occur).
- **planned**: paired outcomes drawn directly (n cases, a discordant pair "new only" with
  probability p10 and "base only" with p01), so that the planned power is known exactly:
  `harness.reporting.excess.paired_power(p10, p01, n)` (exact McNemar at alpha 0.05, the
  gate's test on one relation's "(all)" row). Noise: p10 = p01.

Prints the share of trials the gate failed, with the 95 % Wilson interval.

    python bench/gate_alarms.py --trials 200 --planned-trials 2000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.reporting.compare import CaseTally, Side, compare_tables, read_sides
from harness.reporting.excess import paired_power
from harness.reporting.gate import Rule, evaluate
from harness.reporting.report import apply_fdr
from harness.reporting.stats import wilson_interval
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader

REGRESSION = Rule("regression")
FLAGGED = Rule("flagged")
REGRESSED = {"background": 0.02}


def gate(
    logs: Sequence[tuple[str, list[Side]]], pairs: Sequence[tuple[str, str]]
) -> tuple[bool, bool]:
    """(the regression rule fails, the flagged rule fails) for one comparison."""
    tables = apply_fdr(compare_tables(logs, pairs=pairs))
    regression = any(c.failed for c in evaluate(tables, [REGRESSION]))
    flagged = any(c.failed for c in evaluate(tables, [FLAGGED]))
    return regression, flagged


def sim_trial(tmp: Path, seed: int, regressed: bool, mr2: int, mr8: int) -> tuple[bool, bool]:
    """One campaign of two sim models, compared by the gate."""
    new_options: dict[str, Any] = dict(REGRESSED) if regressed else {}
    spec = {
        "name": f"gate-{seed}",
        "seed": seed,
        "models": [
            {"name": "sim:base", "max_in_flight": 32},
            {"name": "sim:new", "max_in_flight": 32, "options": new_options},
        ],
        "relations": [
            {"name": "metaquerier.mr2", "cases": mr2},
            {"name": "metafair.mr8", "cases": mr8},
        ],
    }
    db = tmp / f"gate-{seed}.db"
    summary = asyncio.run(run_campaign(parse_campaign(spec, source="bench"), db))
    assert summary.status == "completed", summary
    with EventReader(db) as log:
        sides = read_sides(log, log.campaign_id())
    db.unlink()
    for extra in ("-wal", "-shm"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    return gate([("log", sides)], [("sim:base", "sim:new")])


def planned_trial(rng: random.Random, n: int, p10: float, p01: float) -> bool:
    """One comparison of n drawn pairs (p11 = 0.05 of them violated on both sides)."""
    base: dict[Any, CaseTally] = {}
    new: dict[Any, CaseTally] = {}
    for i in range(n):
        u = rng.random()
        a, b = (
            (0, 1)
            if u < p10
            else (1, 0)
            if u < p10 + p01
            else (1, 1)
            if u < p10 + p01 + 0.05
            else (0, 0)
        )
        key = ("planned.relation", i, i, "")
        base[key] = CaseTally("planned.relation", None, {"VIOLATED" if a else "HELD": 1})
        new[key] = CaseTally("planned.relation", None, {"VIOLATED" if b else "HELD": 1})
    logs = [("log", [Side("base", "base", base), Side("new", "new", new)])]
    return gate(logs, [("base", "new")])[0]


def share(k: int, n: int) -> str:
    low, high = wilson_interval(k, n)
    return f"{k:4d}/{n:<4d} {k / n:6.1%} [{low:5.1%}, {high:5.1%}]"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="sim campaigns on noise")
    parser.add_argument(
        "--regressed-trials", type=int, default=None, help="sim campaigns with the regression"
    )
    parser.add_argument("--mr2", type=int, default=200, help="MR2 cases per model")
    parser.add_argument("--mr8", type=int, default=100, help="MR8 cases per model")
    parser.add_argument(
        "--first-trial", type=int, default=0, help="index of the first sim trial (its seed)"
    )
    parser.add_argument("--planned-trials", type=int, default=2000)
    parser.add_argument("--n", type=int, default=200, help="pairs per planned trial")
    parser.add_argument("--p01", type=float, default=0.03)
    parser.add_argument("--power", type=float, default=0.8, help="the planned power to inject")
    args = parser.parse_args(argv)
    started = time.time()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs, load "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; Python {platform.python_version()}"
    )
    # The planned regression: the smallest p10 (steps of 0.0025) whose exact power is the
    # one asked for.
    p10 = args.p01
    while paired_power(p10, args.p01, args.n) < args.power:
        p10 += 0.0025
    planned = paired_power(p10, args.p01, args.n)
    rng = random.Random(20261128)
    if args.planned_trials <= 0:
        args.planned_trials = 0
    noise = sum(planned_trial(rng, args.n, args.p01, args.p01) for _ in range(args.planned_trials))
    hits = sum(planned_trial(rng, args.n, p10, args.p01) for _ in range(args.planned_trials))
    if args.planned_trials:
        print_planned(args, p10, planned, noise, hits)
    sys.stdout.flush()
    with tempfile.TemporaryDirectory() as tmp:
        run_sim_arms(args, Path(tmp))
    print(
        f"# {time.time() - started:.0f} s; load at end "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )


def print_planned(
    args: argparse.Namespace, p10: float, planned: float, noise: int, hits: int
) -> None:
    """The planned part's two lines."""
    print(
        f"planned  noise  p10 = p01 = {args.p01:.4f}, n {args.n}: gate failed "
        f"{share(noise, args.planned_trials)}"
    )
    print(
        f"planned  regr.  p10 {p10:.4f} p01 {args.p01:.4f}, n {args.n}: gate failed "
        f"{share(hits, args.planned_trials)}; planned power {planned:.3f}"
    )


def run_sim_arms(args: argparse.Namespace, tmp: Path) -> None:
    """The sim part: noise trials, then regression trials, each a campaign of its own."""
    for regressed in (False, True):
        trials = args.regressed_trials if regressed else args.trials
        trials = args.trials if trials is None else trials
        if trials <= 0:
            continue
        failed = flagged = 0
        for i in range(args.first_trial, args.first_trial + trials):
            seed = (2_000_000 if regressed else 1_000_000) + i
            r, f = sim_trial(tmp, seed, regressed, args.mr2, args.mr8)
            failed += r
            flagged += f
        arm = "regr. " if regressed else "noise "
        print(
            f"sim      {arm} MR2 {args.mr2} + MR8 {args.mr8} cases, trials {args.first_trial}-"
            f"{args.first_trial + trials - 1}: regression rule failed {share(failed, trials)}; "
            f"flagged rule (either direction) {share(flagged, trials)}"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
