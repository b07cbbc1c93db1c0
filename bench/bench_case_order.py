"""The plan's walk in each case order (issue 31, item 5).

    python bench/bench_case_order.py [--cases 1000000] [--relations 2]

A resume walks every case of the plan before the first open one, its id checked against the
closed set and skipped before ``make_case`` (`harness.running.plan.Plan.cases_for`). This
times that walk over a plan of ``--cases`` cases split over ``--relations`` (at most 2)
MetaQuerier relations, every case skipped (the worst case: a resume of a finished
campaign), in file order and in the interleaved order, and the first 100,000 cases
generated (a fresh run's walk): CPU seconds, and the peak memory over the first 50,000
cases of each walk.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.running.campaign import parse_campaign  # noqa: E402
from harness.running.plan import Plan  # noqa: E402

RELATIONS = ("metaquerier.mr1", "metaquerier.mr2")


def plan_of(order: str, cases: int, relations: int) -> Plan:
    sizes = [cases // relations + (1 if i < cases % relations else 0) for i in range(relations)]
    specs = [{"name": RELATIONS[i], "cases": n} for i, n in enumerate(sizes)]
    return Plan(
        parse_campaign(
            {
                "name": "b",
                "seed": 1,
                "models": [{"name": "sim:m"}],
                "relations": specs,
                "order": order,
            },
            source="bench",
        )
    )


def walk(plan: Plan, *, skip_all: bool, limit: int | None) -> tuple[float, int, int]:
    """CPU seconds of the walk (the machine may be shared: wall time is not the walk's), the
    cases walked, and the peak memory of a second walk under tracemalloc (which slows it)."""
    cases = plan.cases_for("sim:m", skip=(lambda _: True) if skip_all else None)
    started = time.process_time()
    n = sum(1 for _ in itertools.islice(cases, limit))
    elapsed = time.process_time() - started
    tracemalloc.start()
    cases = plan.cases_for("sim:m", skip=(lambda _: True) if skip_all else None)
    for _ in itertools.islice(cases, min(n, 50_000)):
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, n, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--relations", type=int, default=2)
    args = parser.parse_args()
    for order in ("file", "interleaved"):
        plan = plan_of(order, args.cases, args.relations)
        skipped, _, peak_skip = walk(plan, skip_all=True, limit=None)
        fresh, n, peak_fresh = walk(plan, skip_all=False, limit=100_000)
        print(
            f"{order:<12} skip all {plan.total_cases:,}: {skipped:6.2f} s "
            f"({skipped / plan.total_cases * 1e6:.2f} us a case, peak {peak_skip / 1e6:.2f} MB); "
            f"first {n:,} generated: {fresh:6.2f} s (peak {peak_fresh / 1e6:.2f} MB)"
        )


if __name__ == "__main__":
    main()
