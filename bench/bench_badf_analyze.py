"""CPU of BADF's stage 3-4 analysis (`harness badf analyze` before its exclusivity judge) on
the simulated campaign, with and without the null control's shuffles.

    python bench/bench_badf_analyze.py                  # examples/badf_sim.toml, 3 rounds
    python bench/bench_badf_analyze.py --shuffles 39 --rounds 5

One campaign of examples/badf_sim.toml is run into a temporary log; then each round analyses
the log twice, each time in a fresh process as ``harness badf analyze`` would (its caches
empty): with ``control_permutations = 0`` and with ``--shuffles``, timing the child's CPU
(user + system, imports included). Prints the medians, the control's cost a shuffle, the
ratio, and a digest of what the analyses kept and of the control's floor: a change meant to
be faster only must print the same digest.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.running.campaign import load_campaign  # noqa: E402
from harness.running.runner import run_campaign  # noqa: E402
from relations.badf.analysis import Analysis, AnalysisSettings  # noqa: E402
from relations.badf.analyze import analyse_log  # noqa: E402

EXAMPLE = ROOT / "examples" / "badf_sim.toml"


def digest(analysis: Analysis) -> str:
    kept = [
        (c.arm, c.location_category, c.identity, c.concept, repr(c.p), repr(c.p_bh))
        for c in analysis.candidates
    ]
    floor = analysis.control.recorded() if analysis.control is not None else None
    blob = json.dumps([kept, analysis.tests, analysis.dropped, floor], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def analysed(db: Path, shuffles: int) -> None:
    """The child: one analysis; prints its digest and figures as JSON."""
    analysis = analyse_log(db, AnalysisSettings(control_permutations=shuffles))[2]
    figures = [analysis.lists, analysis.tests, len(analysis.candidates), digest(analysis)]
    print(json.dumps(figures))


def timed(db: Path, shuffles: int) -> tuple[float, list[object]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, __file__, "--one", str(db), "--shuffles", str(shuffles)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shuffles", type=int, default=39)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        analysed(args.one, args.shuffles)
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "badf.db"
        config = load_campaign(EXAMPLE).model_copy(update={"seed": args.seed})
        summary = asyncio.run(run_campaign(config, db))
        assert summary.status == "completed", summary
        timed(db, 0)  # the embedder's vectors into the log's cache: not timed
        plain, control = [], []
        for _ in range(args.rounds):
            seconds, without = timed(db, 0)
            plain.append(seconds)
            seconds, with_control = timed(db, args.shuffles)
            control.append(seconds)
    base, full = statistics.median(plain), statistics.median(control)
    lists, tests, kept, _ = without
    print(
        f"{EXAMPLE.name} seed {args.seed}: {lists} lists, {tests} tests, kept {kept}; "
        f"medians of {args.rounds} rounds, a fresh process each"
    )
    print(f"analyze without the control: {base:.2f} s CPU ({', '.join(f'{x:.2f}' for x in plain)})")
    print(
        f"analyze with {args.shuffles} shuffles: {full:.2f} s CPU "
        f"({', '.join(f'{x:.2f}' for x in control)}); {full / base:.1f}x; "
        f"{(full - base) / max(1, args.shuffles) * 1000:.0f} ms a shuffle"
    )
    print(f"digest without {without[3]}, with {with_control[3]}")


if __name__ == "__main__":
    main()
