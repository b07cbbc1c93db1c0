"""BADF's null control over independent simulated campaigns: on an unbiased sim, how often
the excess interval covers 0 and how often the control flags anything (false flags); on the
planted sim, how often the kept associations are above the floor (power). Wilson intervals.

    python bench/badf_control.py                        # 20 null and 20 planted campaigns
    python bench/badf_control.py --null 30 --planted 0 --shuffles 39

Every campaign is its own: examples/badf_sim.toml with a fresh seed, its own log, its own
stories and extraction (no resampling of one pool). Null: the sim writer and extractor
plant nothing (``badf_null``), so every identity's lists come from one law. Planted: the
example as shipped (women + "caring" in healthcare, men + "competitive" in sports,
Buddhists + "calm" in healthcare, "female" for women). Each log is analysed by
``harness badf analyze``'s stage 3-4 with the control (``--shuffles``), and the control's
claims are read as the report's ``badf_control`` table makes them
(`relations.badf.control.control_rows`: Holm over the arms, gated by the (all) row):

- covered: the (all) row's 95 % excess interval holds 0 (nominal >= 95 % under the null);
- flagged: any row above its floor (under the null: a false flag);
- on the planted sim, also how many planted associations the analysis kept (before the
  exclusivity filter, as the control counts them).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from badf_evidence import is_true, planted_cells  # noqa: E402

from harness.reporting.stats import wilson_interval  # noqa: E402
from harness.running.campaign import load_campaign  # noqa: E402
from harness.running.runner import run_campaign  # noqa: E402
from relations.badf.analysis import AnalysisSettings  # noqa: E402
from relations.badf.analyze import analyse_log  # noqa: E402
from relations.badf.control import ALL_ARMS, control_rows  # noqa: E402

EXAMPLE = ROOT / "examples" / "badf_sim.toml"


def campaign(seed: int, workdir: Path, null: bool, shuffles: int) -> dict[str, Any]:
    config = load_campaign(EXAMPLE)
    update: dict[str, Any] = {"seed": seed}
    if null:
        update["models"] = [
            m.model_copy(update={"options": {**m.options, "badf_null": True}})
            for m in config.models
        ]
        update["judges"] = [
            j.model_copy(update={"options": {**j.options, "badf_null": True}})
            for j in config.judges
        ]
    config = config.model_copy(update=update)
    db = workdir / f"{'null' if null else 'planted'}{seed}.db"
    summary = asyncio.run(run_campaign(config, db))
    assert summary.status == "completed", summary
    settings = AnalysisSettings(control_permutations=shuffles)
    analysis = analyse_log(db, settings)[2]
    assert analysis.control is not None
    per_arm: dict[str, int] = {}
    for c in analysis.candidates:
        per_arm[c.arm] = per_arm.get(c.arm, 0) + 1
    rows = control_rows(per_arm, analysis.control, settings.alpha)
    overall = next(r for r in rows if r.arm == ALL_ARMS)
    planted = set() if null else planted_cells(config.relations[0].options)
    found = {p for p in planted if any(is_true(c, {p}) for c in analysis.candidates)}
    db.unlink()
    return {
        "kept": len(analysis.candidates),
        "floor_mean": overall.excess.control_mean,
        "low": overall.excess.excess_low,
        "high": overall.excess.excess_high,
        "p": overall.excess.p,
        "covered": overall.excess.excess_low <= 0 <= overall.excess.excess_high,
        "flagged": any(r.above_floor for r in rows),
        "planted": len(planted),
        "found": len(found),
    }


def share(k: int, n: int) -> str:
    low, high = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.3f} [{low:.3f}, {high:.3f}]" if n else "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--null", type=int, default=20)
    parser.add_argument("--planted", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=1001)
    parser.add_argument("--shuffles", type=int, default=39)
    args = parser.parse_args()
    started = time.time()
    results: dict[str, list[dict[str, Any]]] = {"null": [], "planted": []}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, count in (("null", args.null), ("planted", args.planted)):
            for i in range(count):
                seed = args.first_seed + i + (0 if kind == "null" else 10_000)
                r = campaign(seed, Path(tmp), kind == "null", args.shuffles)
                results[kind].append(r)
                print(
                    f"{kind} seed {seed}: kept {r['kept']}, floor mean {r['floor_mean']:.2f}, "
                    f"excess interval [{r['low']:+d}, {r['high']:+d}], p {r['p']:.3f}, "
                    f"above floor {'yes' if r['flagged'] else 'no'}"
                    + (f", planted kept {r['found']}/{r['planted']}" if kind == "planted" else ""),
                    flush=True,
                )
    null, planted = results["null"], results["planted"]
    print(
        f"\n{EXAMPLE.name}, {args.shuffles} shuffles, {time.time() - started:.0f} s; "
        "shares with 95 % Wilson intervals"
    )
    if null:
        covered = sum(r["covered"] for r in null)
        false = sum(r["flagged"] for r in null)
        print(f"null: excess interval covers 0 in {share(covered, len(null))}")
        print(f"null: any row above its floor (false flag) in {share(false, len(null))}")
        print(f"null: associations kept {sum(r['kept'] for r in null)} over {len(null)} campaigns")
    if planted:
        above = sum(r["flagged"] for r in planted)
        print(f"planted: above the floor in {share(above, len(planted))}")
        found = sum(r["found"] for r in planted)
        total = sum(r["planted"] for r in planted)
        print(f"planted: planted associations kept {share(found, total)}")
        every = sum(r["found"] == r["planted"] for r in planted)
        print(f"planted: every planted association kept in {share(every, len(planted))}")


if __name__ == "__main__":
    main()
