"""Stopping when decided, proved in simulation over independent campaigns (fresh seeds).

    python bench/bench_stopping.py                          # 10 default-plan pairs, 200+60
    python bench/bench_stopping.py --plans 4 --null 60 --planted 30

Three measures, each over independent sim campaigns:

- calls saved on the default sim plan (the embedded ``sim`` campaign, seed varied): the
  same campaign run fixed and with ``[stopping]`` (a look every 50 cases, alpha 0.05,
  smallest effect 0.1, the 10 points issue 29 plants); calls are the AskSent events of each log.
- the null false-positive rate: a fair but random model (BiasLens, the test and its control
  answered at the same rate; ``bench/control_coverage.py``'s null truth): the share of
  campaigns where the sequence decides an effect, with its Clopper-Pearson 95 % interval.
- the planted effect found: the same relation with a 10-point excess planted
  (``control_coverage``'s planted truth): the share of campaigns whose sequence decides an
  effect, beside the share the fixed plan flags (exact McNemar p < 0.05 on every case),
  and the calls each spent.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from control_coverage import one_campaign, relation_spec, sim_options  # noqa: E402
from scipy.stats import binomtest  # noqa: E402

import harness  # noqa: E402

STOPPING: dict[str, Any] = {"look_every": 50, "alpha": 0.05, "smallest_effect": 0.1}


def calls_of(db: Path) -> tuple[int, int, list[str]]:
    """(calls, cases closed, decisions) of the log's campaign."""
    with sqlite3.connect(db) as conn:
        calls = conn.execute("SELECT count(*) FROM events WHERE kind = 'AskSent'").fetchone()[0]
        closed = conn.execute("SELECT count(*) FROM events WHERE kind = 'CaseClosed'").fetchone()[0]
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'StoppingLook'").fetchall()
    import json

    looks = [json.loads(r[0]) for r in rows]
    decided = [
        f"{x['relation']}:{x['decision']}@{x['cases']}"
        for x in looks
        if x["decision"] != "continue"
    ]
    return calls, closed, decided


def flagged(db: Path) -> set[str]:
    """The report's flagged findings (which table, subject and direction)."""
    import json

    rows = json.loads(harness.report_text(db))["findings"]["rows"]
    return {
        f"{r['source_table']}: {r['subject']} -> {r['towards']}"
        for r in rows
        if r["kind"] == "flagged"
    }


def default_plan(seed: int, stopping: bool, work: Path) -> tuple[int, int, list[str], set[str]]:
    text = resources.files("harness.running.campaigns").joinpath("sim.toml").read_text("utf-8")
    config: dict[str, Any] = tomllib.loads(text)
    config["seed"] = seed
    if stopping:
        config["stopping"] = STOPPING
    db = work / f"plan-{seed}-{stopping}.db"
    harness.run(config, db)
    calls, closed, decided = calls_of(db)
    flags = flagged(db)
    db.unlink()
    return calls, closed, decided, flags


def sequential(relation: str, planted: bool, seed: int, work: Path) -> tuple[bool, int]:
    """(an effect decided?, calls) of one campaign with stopping."""
    spec, repeats = relation_spec(relation)
    db = work / f"seq-{relation}-{planted}-{seed}.db"
    config = {
        "name": "stopping-bench",
        "seed": seed,
        "repeats": repeats,
        "defaults": {"temperature": 0.7},
        "models": [
            {"name": "sim:fair", "max_in_flight": 64, "options": sim_options(relation, planted)}
        ],
        "relations": [spec],
        "stopping": {**STOPPING, "look_every": 20},
    }
    harness.run(config, db)
    calls, _, decided = calls_of(db)
    db.unlink()
    return any(":effect@" in d for d in decided), calls


def fixed_calls(relation: str, planted: bool, seed: int, work: Path) -> int:
    spec, repeats = relation_spec(relation)
    db = work / f"fixed-{relation}-{planted}-{seed}.db"
    config = {
        "name": "stopping-bench",
        "seed": seed,
        "repeats": repeats,
        "defaults": {"temperature": 0.7},
        "models": [
            {"name": "sim:fair", "max_in_flight": 64, "options": sim_options(relation, planted)}
        ],
        "relations": [spec],
    }
    harness.run(config, db)
    calls, _, _ = calls_of(db)
    db.unlink()
    return calls


def cp(k: int, n: int) -> str:
    ci = binomtest(k, n).proportion_ci(method="exact")
    return f"{k}/{n} = {k / n:.1%} [{ci.low:.1%}, {ci.high:.1%}]"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plans", type=int, default=10, help="default-plan campaign pairs")
    parser.add_argument("--null", type=int, default=200, help="null campaigns")
    parser.add_argument("--planted", type=int, default=60, help="planted campaigns")
    parser.add_argument("--first-seed", type=int, default=100, help="of the default plans")
    parser.add_argument("--relation", default="biaslens.answer")
    parser.add_argument("--smallest-effect", type=float, default=0.1)
    parser.add_argument(
        "--method",
        default="confidence-sequence",
        choices=["confidence-sequence", "group-sequential"],
    )
    args = parser.parse_args()
    STOPPING["smallest_effect"] = args.smallest_effect
    STOPPING["method"] = args.method
    print(f"stopping: {STOPPING}", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fixed_total = stop_total = kept = lost = new = 0
        for s in range(args.plans):
            fixed, _, _, fixed_flags = default_plan(args.first_seed + s, False, work)
            stop, closed, decided, stop_flags = default_plan(args.first_seed + s, True, work)
            fixed_total += fixed
            stop_total += stop
            kept += len(fixed_flags & stop_flags)
            lost += len(fixed_flags - stop_flags)
            new += len(stop_flags - fixed_flags)
            print(
                f"default plan seed {args.first_seed + s}: fixed {fixed} calls, stopping {stop} "
                f"({closed} cases); {decided}; findings flagged: fixed {len(fixed_flags)}, "
                f"stopping {len(stop_flags)}, both {len(fixed_flags & stop_flags)}",
                flush=True,
            )
        if args.plans:
            saved = 1 - stop_total / fixed_total
            print(
                f"default sim plan: {stop_total} calls with stopping vs {fixed_total} fixed "
                f"over {args.plans} seeds: {saved:.1%} saved; the fixed plan's flagged "
                f"findings kept {kept}, lost {lost}; new with stopping {new}",
                flush=True,
            )
        r = args.relation
        if args.null:
            null = [sequential(r, False, 1000 + s, work) for s in range(args.null)]
            k = sum(found for found, _ in null)
            print(f"{r} null: an effect decided in {cp(k, len(null))} of campaigns", flush=True)
        if not args.planted:
            return
        planted = [sequential(r, True, 5000 + s, work) for s in range(args.planted)]
        fixed_runs = [one_campaign(r, True, 5000 + s, work) for s in range(args.planted)]
        seq_found = sum(found for found, _ in planted)
        fixed_found = sum(x["p"] is not None and x["p"] < 0.05 for x in fixed_runs)
        seq_calls = sum(c for _, c in planted)
        few = min(5, args.planted)
        per_fixed = sum(fixed_calls(r, True, 5000 + s, work) for s in range(few)) / few
        print(
            f"{r} planted 10 points: found by stopping in {cp(seq_found, len(planted))}, by "
            f"the fixed plan in {cp(fixed_found, len(fixed_runs))}; calls a campaign "
            f"{seq_calls / len(planted):.0f} with stopping vs {per_fixed:.0f} fixed"
        )
    print(f"elapsed {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
