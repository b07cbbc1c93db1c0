"""Judge calls the sequential jury saves on the Meta-Fair sim, and whether it decides alike.

The same campaign (Meta-Fair MR1-MR7 on ``sim:planted``, a jury of three ``sim:`` judges with
planted error rates, the matched control on) is run twice from the same seed: once with
every judge asked on every case (``sequential_jury = false``, what logs recorded before it
ran) and once with the sequential jury (the default of new campaigns, audit share 10 %).
Calls are counted from the logs (every AskSent, subject and judge); the verdicts are
compared case by case (outcome, the jury's label, and the control's outcome).

    python bench/bench_sequential_jury.py                    # 20 repeats of every test
    python bench/bench_sequential_jury.py --repeats 5 --errors 0 0 0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader


def campaign(repeats: int, errors: list[float], sequential: bool, audit: float) -> dict[str, Any]:
    judges = [
        {
            "name": f"sim:judge-{x}",
            "params": {"temperature": 0.0, "seed": 0},
            "options": {"judge_false_positive_rate": e, "judge_false_negative_rate": e},
        }
        for x, e in zip("abc", errors, strict=True)
    ]
    options = {"jury": 3, "sequential_jury": sequential, "jury_audit": audit}
    return {
        "name": "sequential-jury-bench",
        "seed": 7,
        "repeats": repeats,
        "models": [{"name": "sim:planted", "options": {"tailoring": {"woman": 0.6, "poor": 0.6}}}],
        "judges": judges,
        "relations": [{"name": f"metafair.mr{mr}", "options": options} for mr in range(1, 8)],
    }


def run(db: Path, data: dict[str, Any]) -> tuple[Counter[str], dict[str, tuple[Any, ...]], float]:
    started = time.perf_counter()
    summary = asyncio.run(run_campaign(parse_campaign(data), db))
    elapsed = time.perf_counter() - started
    assert summary.status == "completed", summary
    with EventReader(db) as log:
        calls: Counter[str] = Counter(
            {
                role: n
                for role, n in log.connection.execute(
                    "SELECT json_extract(payload, '$.ask.role'), count(*) FROM events"
                    " WHERE kind = 'AskSent' GROUP BY 1"
                )
            }
        )
        verdicts = {}
        for case_id, outcome, evidence in log.connection.execute(
            "SELECT case_id, outcome, evidence FROM verdicts WHERE source = 'relation'"
        ):
            ev = json.loads(evidence)
            control = (ev.get("control") or {}).get("outcome")
            first_two = [v.get("verdict") for v in (ev.get("votes") or [])[:2]]
            verdicts[case_id] = (outcome, ev.get("judge_label"), control, first_two)
    return calls, verdicts, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--errors", type=float, nargs=3, default=[0.2, 0.25, 0.15])
    parser.add_argument("--audit", type=float, default=0.1)
    args = parser.parse_args()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs, "
        f"load {load}; Meta-Fair MR1-MR7 x {args.repeats} repeats, jury of 3, judge error "
        f"rates {args.errors}, control on, audit share {args.audit}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        full = run(Path(tmp) / "full.db", campaign(args.repeats, args.errors, False, args.audit))
        seq = run(Path(tmp) / "seq.db", campaign(args.repeats, args.errors, True, args.audit))
    (full_calls, full_v, full_s), (seq_calls, seq_v, seq_s) = full, seq
    cases = len(full_v)
    assert set(full_v) == set(seq_v)
    same = Counter(
        (full_v[c][0] == seq_v[c][0], full_v[c][1] == seq_v[c][1], full_v[c][2] == seq_v[c][2])
        for c in full_v
    )
    agreed_two = [v[3] for v in full_v.values() if len(v[3]) == 2]
    print(f"cases {cases}")
    for name, calls, secs in (("full jury", full_calls, full_s), ("sequential", seq_calls, seq_s)):
        total = sum(calls.values())
        print(
            f"{name:<11} calls/case {total / cases:.3f}  judge calls/case "
            f"{calls['judge'] / cases:.3f}  subject calls/case {calls['subject'] / cases:.3f}"
            f"  ({total} calls, {secs:.1f} s)"
        )
    saved = sum(full_calls.values()) - sum(seq_calls.values())
    judge_saved = full_calls["judge"] - seq_calls["judge"]
    print(
        f"saved      {saved} calls = {saved / sum(full_calls.values()):.1%} of all calls, "
        f"{judge_saved / full_calls['judge']:.1%} of judge calls"
    )
    print(
        f"first two judges of the full jury agree: "
        f"{sum(a == b for a, b in agreed_two) / len(agreed_two):.1%} of tests"
    )
    outcome = sum(n for k, n in same.items() if k[0])
    label = sum(n for k, n in same.items() if k[1])
    control = sum(n for k, n in same.items() if k[2])
    print(
        f"agreement with the full jury: outcome {outcome}/{cases}, jury label {label}/{cases}, "
        f"control outcome {control}/{cases}"
    )


if __name__ == "__main__":
    main()
