"""Stopping decided cell by cell (`harness.reporting.cell_stopping`), proved on the default
sim plan over independent campaigns (fresh seeds).

    python bench/bench_cell_stopping.py --seeds 6 --null 20

Each campaign is run once on the fixed plan; the stopped campaign is then read from it
exactly: a ``sim:`` answer depends only on its request (seeded by it), so a relation that
stops after its first n cases (in its own order: index, then repeat) has drawn exactly the
fixed campaign's first n cases of it. At each look (a fifth of every relation's planned
cases) the report is built on the cases drawn so far (the log with the later cases of each
relation left out), every test row is read as significant / futile / open, and a relation
whose families have no open cell stops there. The stopped campaign's report is the report
of what it drew. Printed: calls (AskSent) fixed and stopped; the fixed plan's flagged
findings about a planted truth (a planted MetaQuerier term, its group, or a planted
Meta-Fair attribute) and how many the stopped report still flags; on null campaigns (no
planted association, no tailoring, explicit terms named
as often as any other) the share of campaigns and of (campaign, family) with
any flag, with Wilson 95 % intervals, for the fixed plan and for stopping.
"""

from __future__ import annotations

import argparse
import json
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

from statsmodels.stats.proportion import proportion_confint  # noqa: E402

import harness  # noqa: E402
from harness.reporting.cell_stopping import cells_of_report, look_levels, take_look  # noqa: E402

ALPHA = 0.05
# No planted association or tailoring, and every term (an explicit one too) named at the
# same rate whichever gender is asked: nothing for any test to find.
NULL_OPTIONS = {"associations": {}, "tailoring": {}, "explicit_gender": 0.05, "background": 0.05}
CASE_IDS = "SELECT DISTINCT case_id FROM events WHERE case_id != ''"
CALLS = "SELECT count(*) FROM events WHERE kind = 'AskSent'"


def planted_names() -> tuple[set[str], set[str]]:
    from relations.metafair.sim_truth import DEFAULT_TAILORING
    from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS

    return set(DEFAULT_ASSOCIATIONS), set(DEFAULT_TAILORING)


def is_planted(row: dict[str, Any]) -> bool:
    """A flagged finding about a planted truth: a planted term (towards its planted
    gender), the group of the planted terms, a planted Meta-Fair attribute, or the excess
    of a relation whose cases carry one."""
    terms, attributes = planted_names()
    subject = str(row["subject"])
    if subject.startswith("term "):
        return subject[5:].split(" (")[0] in terms
    if subject.startswith("group "):
        name = subject[6:]
        return name == "profession" or name in attributes
    return subject == "(all)"


def flags(report: dict[str, Any]) -> set[str]:
    return {
        f"{r['source_table']}: {r['subject']} -> {r['towards']}"
        for r in report["findings"]["rows"]
        if r["kind"] == "flagged"
    }


def planted_flags(report: dict[str, Any]) -> set[str]:
    return {
        f"{r['source_table']}: {r['subject']} -> {r['towards']}"
        for r in report["findings"]["rows"]
        if r["kind"] == "flagged" and is_planted(r)
    }


def flagged_families(report: dict[str, Any]) -> set[str]:
    return {str(r["family"]) for r in report["findings"]["rows"] if r["kind"] == "flagged"}


def place(case_id: str, repeats: int) -> tuple[str, int] | None:
    relation, _, rest = case_id.partition("/")
    index, _, rest = rest.partition("/r")
    repeat = rest.partition("@")[0]
    if not (index.isdigit() and repeat.isdigit()):
        return None
    return relation, int(index) * repeats + int(repeat)


def prefix_log(full: Path, out: Path, cut: dict[str, int], repeats: int) -> int:
    """``out``: ``full`` with each relation's cases from position ``cut[relation]`` on left
    out (as if never drawn); its calls."""
    for stale in (out, out.with_name(out.name + "-wal"), out.with_name(out.name + "-shm")):
        stale.unlink(missing_ok=True)
    # The backup API copies what the log's write-ahead file holds too.
    with sqlite3.connect(full) as source, sqlite3.connect(out) as copy:
        source.backup(copy)
    with sqlite3.connect(out) as conn:
        ids = [r[0] for r in conn.execute(CASE_IDS)]
        gone = []
        for case_id in ids:
            at = place(case_id, repeats)
            if at is not None and at[1] >= cut.get(at[0], 1 << 60):
                gone.append((case_id,))
        conn.executemany("DELETE FROM events WHERE case_id = ?", gone)
        for table in ("summary_cases", "case_digests"):
            conn.executemany(f"DELETE FROM {table} WHERE case_id = ?", gone)
        conn.execute("DELETE FROM summary_marks")
        calls = conn.execute(CALLS).fetchone()[0]
    return int(calls)


def report_of(db: Path) -> dict[str, Any]:
    return dict(json.loads(harness.report_text(db)))


def one_campaign(
    seed: int, null: bool, work: Path, looks: int, futility: str = "alpha"
) -> dict[str, Any]:
    text = resources.files("harness.running.campaigns").joinpath("sim.toml").read_text("utf-8")
    config: dict[str, Any] = tomllib.loads(text)
    config["seed"] = seed
    if null:
        config["models"][0]["options"] = NULL_OPTIONS
    repeats = int(config["repeats"])
    full = work / f"full-{seed}-{null}.db"
    harness.run(config, full)
    with sqlite3.connect(full) as conn:
        fixed_calls = conn.execute(CALLS).fetchone()[0]
        ids = [r[0] for r in conn.execute(CASE_IDS)]
    sizes: dict[str, int] = {}
    for case_id in ids:
        at = place(case_id, repeats)
        if at is not None:
            sizes[at[0]] = max(sizes.get(at[0], 0), at[1] + 1)
    relations = sorted(sizes)
    fractions = [(j + 1) / looks for j in range(looks)]
    levels = look_levels(fractions, ALPHA)
    stopped: dict[str, int] = {}
    trail = []
    part = work / f"part-{seed}-{null}.db"
    for t, level in zip(fractions[:-1], levels[:-1], strict=True):
        drawing = [r for r in relations if r not in stopped]
        if not drawing:
            break
        cut = {r: stopped.get(r, -(-int(sizes[r] * t * 1000) // 1000)) for r in relations}
        prefix_log(full, part, cut, repeats)
        look = take_look(
            cells_of_report(report_of(part)), drawing, relations, t, level, ALPHA, futility
        )
        for r in look.stops:
            stopped[r] = cut[r]
            trail.append(f"{r}@{cut[r]}/{sizes[r]}")
    fixed_report = report_of(full)
    cut = {r: stopped.get(r, sizes[r]) for r in relations}
    stop_calls = prefix_log(full, part, cut, repeats)
    stop_report = report_of(part)
    part.unlink()
    full.unlink()
    return {
        "seed": seed,
        "fixed_calls": int(fixed_calls),
        "stop_calls": stop_calls,
        "stops": trail,
        "fixed_flags": flags(fixed_report),
        "stop_flags": flags(stop_report),
        "fixed_planted": planted_flags(fixed_report),
        "stop_planted": planted_flags(stop_report),
        "fixed_families": flagged_families(fixed_report),
        "stop_families": flagged_families(stop_report),
        "families": {c.family for c in cells_of_report(fixed_report)},
    }


def wilson(k: int, n: int) -> str:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return f"{k}/{n} = {k / n:.1%} [{low:.1%}, {high:.1%}]"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=6, help="planted default-plan campaigns")
    parser.add_argument("--null", type=int, default=20, help="null default-plan campaigns")
    parser.add_argument("--first-seed", type=int, default=700)
    parser.add_argument("--looks", type=int, default=4)
    parser.add_argument("--futility", choices=["alpha", "family"], default="alpha")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fixed = stop = kept = planted = lost_other = 0
        for s in range(args.seeds):
            r = one_campaign(args.first_seed + s, False, work, args.looks, args.futility)
            fixed += r["fixed_calls"]
            stop += r["stop_calls"]
            planted += len(r["fixed_planted"])
            kept += len(r["fixed_planted"] & r["stop_planted"])
            lost_other += len((r["fixed_flags"] - r["fixed_planted"]) - r["stop_flags"])
            print(
                f"seed {r['seed']}: calls fixed {r['fixed_calls']}, stopping {r['stop_calls']}; "
                f"stops {r['stops']}; planted flags fixed {len(r['fixed_planted'])}, kept "
                f"{len(r['fixed_planted'] & r['stop_planted'])}; lost "
                f"{sorted(r['fixed_planted'] - r['stop_planted'])}; other flags fixed "
                f"{len(r['fixed_flags'] - r['fixed_planted'])}, stopping "
                f"{len(r['stop_flags'] - r['stop_planted'])}",
                flush=True,
            )
        if args.seeds:
            print(
                f"planted default plan, {args.seeds} seeds: calls {stop} with stopping vs "
                f"{fixed} fixed: {1 - stop / fixed:.1%} saved; the fixed plan's planted flags "
                f"kept {kept}/{planted}; other fixed flags lost {lost_other}",
                flush=True,
            )
        if args.null:
            n_fixed = n_stop = f_fixed = f_stop = fams = 0
            null_fixed_calls = null_stop_calls = 0
            for s in range(args.null):
                r = one_campaign(args.first_seed + 1000 + s, True, work, args.looks, args.futility)
                n_fixed += bool(r["fixed_flags"])
                n_stop += bool(r["stop_flags"])
                f_fixed += len(r["fixed_families"])
                f_stop += len(r["stop_families"])
                fams += len(r["families"])
                null_fixed_calls += r["fixed_calls"]
                null_stop_calls += r["stop_calls"]
                print(
                    f"null seed {r['seed']}: calls {r['fixed_calls']} -> {r['stop_calls']}; "
                    f"stops {r['stops']}; flags fixed {sorted(r['fixed_flags'])}, stopping "
                    f"{sorted(r['stop_flags'])}",
                    flush=True,
                )
            print(
                f"null default plan, {args.null} campaigns: any flag: fixed "
                f"{wilson(n_fixed, args.null)}, stopping {wilson(n_stop, args.null)}; "
                f"(campaign, family) with a flag: fixed {wilson(f_fixed, fams)}, stopping "
                f"{wilson(f_stop, fams)}; calls {null_stop_calls} vs {null_fixed_calls} "
                f"({1 - null_stop_calls / null_fixed_calls:.1%} saved)",
                flush=True,
            )
    print(f"elapsed {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
