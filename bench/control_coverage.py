"""Matched controls on the simulated model: how often the excess interval covers 0 when the
model is fair but random, and how often the excess is flagged when a 10-point bias is planted.

    python bench/control_coverage.py                     # 200 null and 100 planted campaigns
    python bench/control_coverage.py --null 40 --planted 20 --relations metafair.mr12

Every campaign is independent: its own seed, its own log, its own draws (no resampling of
one pool). Each runs one relation on one ``sim:`` model at temperature 0.7 with the control
on (the default of new campaigns), and reads the (all) row of the report's ``control_excess``
table (`harness.reporting.excess`):

- null: the model is fair but random (nothing planted, answers waver at a noise rate), so the
  test and its control violate at the same rate; "covered" = the excess's 95 % interval
  holds 0. Nominal: >= 95 % of campaigns.
- planted: the test is made 10 points more likely to be violated than its control
  (per relation below); "detected" = the excess's exact McNemar p < 0.05 (one test per
  campaign: the row a reader checks first; the report's correction over its other rows is
  the multiplicity machinery's business).

The planted 10 points, per relation:
- metafair.mr12 (Yes/No, the source asked again as control): noise p = 0.1 on every answer;
  the follow-up's attribute answered "Yes" with probability q = 0.1 / ((1 - p)(1 - 2p)),
  which raises P(R != R') by exactly 0.10 over the control's 2p(1 - p) (the source's
  attributes are left fair);
- biaslens.answer (Yes/No and Choice; the question without its role as control): biased
  answers at 0.20 without and with the role (null), 0.30 with the role (planted);
- langbite (one community asked for all as control): every answer biased with probability
  0.05 (noise); planted: the sim's planted communities (Muslim, women, Nigeria and their
  Spanish names) answered biased with probability 0.5. The unit is the template, and only
  some templates name a planted community, so this gives a mean excess per case of about
  10 points (the measured mean is printed).
Shares come with 95 % Wilson intervals.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
from harness.reporting.excess import COLUMNS, excess_rows, paired_power  # noqa: E402
from harness.reporting.stats import wilson_interval  # noqa: E402
from harness.store.reader import EventReader  # noqa: E402

NOISE_MF = 0.1
Q_MF = 0.1 / ((1 - NOISE_MF) * (1 - 2 * NOISE_MF))
MF_FOLLOW_UP = (
    "woman",
    "nonbinary person",
    "gay",
    "lesbian",
    "Buddhist",
    "Muslim",
    "low-income",
    "unemployed",
    "red-haired",
    "overweight",
)
LANGBITE_RATE = 0.5
LANGBITE_PLANTED = ("Muslim", "musulmana", "women", "las mujeres", "Nigeria")


def sim_options(relation: str, planted: bool) -> dict[str, Any]:
    if relation == "metafair.mr12":
        return {
            "closed_yes_no": {a: Q_MF for a in MF_FOLLOW_UP} if planted else {},
            "closed_noise": NOISE_MF,
        }
    if relation == "biaslens.answer":
        return {"biaslens_planted": {}, "biaslens_background": [0.3 if planted else 0.2, 0.2]}
    if relation == "langbite":
        return {
            "langbite_planted": {c: LANGBITE_RATE for c in LANGBITE_PLANTED} if planted else {},
            "langbite_noise": 0.05,
        }
    raise ValueError(relation)


def planted_discordance(relation: str) -> tuple[float, float] | None:
    """(test only, control only) probabilities of a pair under the planted truth, where they
    follow from it in closed form (None for LangBiTe, whose cases mix templates)."""
    if relation == "metafair.mr12":
        p, follow = NOISE_MF, Q_MF + (1 - Q_MF) * NOISE_MF
        # Test: R != R'; control: R != R''; R and R'' say Yes with p, R' with `follow`.
        test_only = p * (1 - follow) * p + (1 - p) * follow * (1 - p)
        control_only = p * follow * (1 - p) + (1 - p) * (1 - follow) * p
        return test_only, control_only
    if relation == "biaslens.answer":
        return 0.3 * 0.8, 0.7 * 0.2
    return None


def relation_spec(relation: str) -> tuple[dict[str, Any], int]:
    """The relation's entry and the repeats that give it about 200 pairs a campaign."""
    if relation == "metafair.mr12":
        return {"name": relation}, 20
    if relation == "biaslens.answer":
        return {"name": relation, "options": {"types": ["Yes/No", "Choice"]}}, 3
    if relation == "langbite":
        return {"name": relation, "options": {"reassess": False}}, 6
    raise ValueError(relation)


def one_campaign(relation: str, planted: bool, seed: int, work: Path) -> dict[str, Any]:
    spec, repeats = relation_spec(relation)
    db = work / f"{relation}-{planted}-{seed}.db"
    config = {
        "name": "control-coverage",
        "seed": seed,
        "repeats": repeats,
        "defaults": {"temperature": 0.7},
        "models": [
            {"name": "sim:fair", "max_in_flight": 64, "options": sim_options(relation, planted)}
        ],
        "relations": [spec],
    }
    harness.run(config, db)
    with EventReader(db) as log:
        campaign = log.campaign_id(None)
        rows = log.connection.execute(
            "SELECT model, relation, outcome, evidence FROM verdicts"
            " WHERE campaign = ? AND source = 'relation'",
            (campaign,),
        ).fetchall()
    import json

    table = excess_rows((m, r, o, json.loads(e or "{}")) for m, r, o, e in rows)
    db.unlink()
    (row,) = [r for r in table if r[2] == "(all)"]
    at = {name: row[i] for i, name in enumerate(COLUMNS)}
    pairs, excess, low, high, p = (
        at["pairs"],
        at["excess"],
        at["excess_low"],
        at["excess_high"],
        row[-3],
    )
    return {"pairs": pairs, "excess": excess, "low": low, "high": high, "p": p}


def share(k: int, n: int) -> str:
    low, high = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.3f} (95% Wilson {low:.3f}-{high:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--null", type=int, default=200, help="null campaigns per relation")
    parser.add_argument("--planted", type=int, default=100, help="planted campaigns per relation")
    parser.add_argument(
        "--relations",
        nargs="+",
        default=["metafair.mr12", "biaslens.answer", "langbite"],
    )
    args = parser.parse_args()
    print(
        f"# {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for relation in args.relations:
            start = time.perf_counter()
            null = [one_campaign(relation, False, 1000 + s, work) for s in range(max(1, args.null))]
            covered = sum(r["low"] <= 0 <= r["high"] for r in null)
            pairs = sorted(r["pairs"] for r in null)
            print(
                f"{relation}: null: excess interval covers 0 in {share(covered, len(null))}; "
                f"pairs per campaign median {pairs[len(pairs) // 2]}; mean excess "
                f"{sum(r['excess'] for r in null) / len(null):+.4f}"
            )
            planted = [
                one_campaign(relation, True, 5000 + s, work) for s in range(max(1, args.planted))
            ]
            detected = sum(r["p"] is not None and r["p"] < 0.05 for r in planted)
            rates = planted_discordance(relation)
            median = sorted(r["pairs"] for r in planted)[len(planted) // 2]
            if rates is not None:
                print(
                    f"{relation}: predicted power at {median} pairs (exact McNemar, "
                    f"harness.reporting.excess.paired_power): {paired_power(*rates, median):.3f}"
                )
            print(
                f"{relation}: planted: flagged (p < 0.05) in {share(detected, len(planted))}; "
                f"mean excess {sum(r['excess'] for r in planted) / len(planted):+.4f}; "
                f"{time.perf_counter() - start:.0f} s"
            )
    print(f"# load at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
