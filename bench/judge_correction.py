"""Coverage of the corrected rate's 95 % interval, by simulation.

A campaign of N judged cases whose true BIASED rate is pi is labelled by a simulated judge
of known sensitivity and specificity; a random sample of L cases gets a human label (the
truth). Each run corrects the judge-labelled rate with `corrected_rate` and records whether
its interval covers pi. The share of covering runs is printed with its 95 % Wilson
interval, per setting and interval method (delta: what the report uses; bootstrap over
both samples).

    python bench/judge_correction.py                 # 1,000 runs per setting
    python bench/judge_correction.py --runs 500 --methods delta
    python bench/judge_correction.py --independent-labels   # labels from a separate sample
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from harness.reporting.judge_stats import Confusion, corrected_rate
from harness.reporting.stats import wilson_interval


def simulate(
    pi: float,
    n: int,
    labels: int,
    se: float,
    sp: float,
    runs: int,
    seed: int,
    methods: tuple[str, ...],
    independent: bool = False,
) -> dict[str, int]:
    """Runs whose interval covers ``pi``, per method. ``independent``: the labelled cases
    are a separate sample of the same population, not cases of the campaign (the two
    samples then share no judge error, which is the harder case for coverage)."""
    rng = np.random.default_rng(seed)
    covered = dict.fromkeys(methods, 0)
    for run in range(runs):
        truth = rng.random(n) < pi
        said = np.where(truth, rng.random(n) < se, rng.random(n) < 1 - sp)
        k = int(said.sum())
        if independent:
            h = rng.random(labels) < pi
            s = np.where(h, rng.random(labels) < se, rng.random(labels) < 1 - sp)
        else:
            # L of the campaign's cases drawn at random, labelled truly.
            picked = rng.choice(n, size=labels, replace=False)
            h, s = truth[picked], said[picked]
        confusion = Confusion(
            int((h & s).sum()), int((h & ~s).sum()), int((~h & s).sum()), int((~h & ~s).sum())
        )
        for method in methods:
            fixed = corrected_rate(k, n, confusion, method=method, seed=run)  # type: ignore[arg-type]
            covered[method] += bool(fixed.low <= pi <= fixed.high)
    return covered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--se", type=float, default=0.8)
    parser.add_argument("--sp", type=float, default=0.9)
    parser.add_argument("--labels", type=int, default=200)
    parser.add_argument("--methods", default="delta,bootstrap")
    parser.add_argument("--rates", default="0.05,0.1,0.3,0.5,0.7")
    parser.add_argument("--campaigns", default="500,2000")
    parser.add_argument(
        "--independent-labels",
        action="store_true",
        help="label a separate sample instead of cases of the campaign",
    )
    args = parser.parse_args()
    methods = tuple(args.methods.split(","))
    print(
        f"judge Se {args.se} Sp {args.sp}, {args.labels} labels "
        f"({'a separate sample' if args.independent_labels else 'cases of the campaign'}), "
        f"{args.runs} runs a setting; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    started = time.perf_counter()
    for pi in map(float, args.rates.split(",")):
        for n in map(int, args.campaigns.split(",")):
            covered = simulate(
                pi, n, args.labels, args.se, args.sp, args.runs, 2026, methods,
                args.independent_labels,
            )  # fmt: skip
            cells = []
            for method in methods:
                low, high = wilson_interval(covered[method], args.runs)
                share = covered[method] / args.runs
                cells.append(f"{method} {share:.3f} ({low:.3f}-{high:.3f})")
            print(f"true rate {pi:<4} campaign {n:>5}: " + "; ".join(cells))
    print(
        f"{time.perf_counter() - started:.1f} s; load average {os.getloadavg()[0]:.2f} at the end"
    )


if __name__ == "__main__":
    main()
