"""The most any valid group-sequential stopping rule could save on the default sim plan
while keeping its planted findings: an oracle bound over independent campaigns (fresh
seeds).

    python bench/bench_stopping_oracle.py --seeds 6
    python bench/bench_stopping_oracle.py --seeds 4 --cases 1200   # a larger MetaQuerier plan

Each campaign is run once on the fixed plan and the report is built on the first j/G of
every relation's cases (j = 1..G; read exactly from the fixed log, as
`bench_cell_stopping.py` does: a ``sim:`` answer depends only on its request). The findings
the oracle must keep are the fixed plan's flagged rows about a planted truth that are
significant at the design's last look (a row flagged at 0.05 but above the last look's
level is lost by any valid design of those looks; counted apart). For each design (four
or eight equal looks; O'Brien-Fleming-type or Pocock-type spending) and each group of
relations that share findings (MetaQuerier MR1 and MR2 feed one attribution family;
Meta-Fair MR8), the oracle stops the group at the earliest look at which every finding of
the group is significant at that look's level (corrected p within its family at most the
look's nominal level): the bound of any rule that knew which cells are planted and never
waited on the others. Printed: calls the oracle spends against the fixed plan, with no
finding lost, with at most one in ten lost (looks chosen across groups for the fewest
calls), and "stays": stopping only where every later look would keep them too; and each
kept MetaQuerier finding's corrected p at every look.
"""

from __future__ import annotations

import argparse
import json
import math
import re
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cell_stopping import CASE_IDS, is_planted, place, prefix_log, report_of  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

import harness  # noqa: E402
from harness.reporting.cell_stopping import (  # noqa: E402
    Cell,
    cells_of_report,
    cheapest_stops,
    earliest_look,
    look_levels,
    lost_at,
    take_look,
)

ALPHA = 0.05
DESIGNS = {
    "OBF 4": ("obf", 4),
    "Pocock 4": ("pocock", 4),
    "OBF 8": ("obf", 8),
    "Pocock 8": ("pocock", 8),
    # Not valid designs: every look read at 0.05. What no valid design can beat.
    "0.05 at each of 4 (not valid)": ("none", 4),
    "0.05 at each of 8 (not valid)": ("none", 8),
}
GROUPS = {"MetaQuerier": "metaquerier.", "Meta-Fair MR8": "metafair."}
NULL_OPTIONS = {"associations": {}, "tailoring": {}, "explicit_gender": 0.05, "background": 0.05}
RULES = ("alpha", "family", "predictive")


def key(row: dict[str, Any]) -> str:
    # The family too: MR1's and MR2's top violating terms share a table and subjects.
    return stable(f"{row['family']} | {row['source_table']}: {row['subject']} -> {row['towards']}")


def stable(name: str) -> str:
    """A key without the counts some rows' direction carries ("male 16 of 27"), which
    change from look to look."""
    return re.sub(r" \d+ of \d+$", "", name)


def restable(r: dict[str, Any]) -> dict[str, Any]:
    """A campaign read from a --dump, its keys made `stable`."""
    r["ps"] = [{stable(k): p for k, p in ps.items()} for ps in r["ps"]]
    r["planted"] = {g: sorted({stable(k) for k in ks}) for g, ks in r["planted"].items()}
    return r


def finding_ps(report: dict[str, Any]) -> dict[str, float | None]:
    """Each findings row's corrected p-value, by key."""
    out: dict[str, float | None] = {}
    for row in report["findings"]["rows"]:
        if row.get("source_table") and row.get("adjusted_p") is not None:
            out[key(row)] = float(row["adjusted_p"])
    return out


def calls_by_position(db: Path, repeats: int) -> dict[str, list[int]]:
    """Each relation's calls (AskSent) by its cases' positions, cumulated."""
    per: dict[str, dict[int, int]] = {}
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT case_id, count(*) FROM events WHERE kind = 'AskSent' GROUP BY case_id"
        ).fetchall()
    for case_id, n in rows:
        at = place(case_id, repeats)
        if at is not None:
            per.setdefault(at[0], {})[at[1]] = int(n)
    out = {}
    for relation, by in per.items():
        total, cum = 0, []
        for i in range(max(by) + 1):
            total += by.get(i, 0)
            cum.append(total)
        out[relation] = cum
    return out


def flagged(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (str(r["family"]), key(r)) for r in report["findings"]["rows"] if r["kind"] == "flagged"
    ]


def one_campaign(
    seed: int, work: Path, grid: int, cases: int | None, null: bool = False
) -> dict[str, Any]:
    text = resources.files("harness.running.campaigns").joinpath("sim.toml").read_text("utf-8")
    config: dict[str, Any] = tomllib.loads(text)
    config["seed"] = seed
    if null:
        config["models"][0]["options"] = NULL_OPTIONS
    if cases:
        for relation in config["relations"]:
            if relation["name"].startswith("metaquerier."):
                relation["cases"] = cases
    repeats = int(config["repeats"])
    full = work / f"full-{seed}.db"
    harness.run(config, full)
    with sqlite3.connect(full) as conn:
        ids = [r[0] for r in conn.execute(CASE_IDS)]
    sizes: dict[str, int] = {}
    for case_id in ids:
        at = place(case_id, repeats)
        if at is not None:
            sizes[at[0]] = max(sizes.get(at[0], 0), at[1] + 1)
    cum = calls_by_position(full, repeats)
    part = work / f"part-{seed}.db"
    ps: list[dict[str, float | None]] = []
    cells: list[list[tuple[str, str, str, float | None, float | None]]] = []
    flags: list[list[tuple[str, str]]] = []
    calls: dict[str, list[int]] = {g: [] for g in GROUPS}
    for j in range(1, grid + 1):
        cut = {r: math.ceil(sizes[r] * j / grid) for r in sizes}
        if j < grid:
            prefix_log(full, part, cut, repeats)
            report = report_of(part)
        else:
            report = fixed = report_of(full)
        ps.append(finding_ps(report))
        cells.append(
            [(c.family, c.table, c.subject, c.p, c.p_fdr) for c in cells_of_report(report)]
        )
        flags.append(flagged(report))
        for g, prefix in GROUPS.items():
            calls[g].append(sum(cum[r][cut[r] - 1] for r in sizes if r.startswith(prefix)))
    part.unlink(missing_ok=True)
    full.unlink()
    planted = {
        g: sorted(
            key(r)
            for r in fixed["findings"]["rows"]
            if r["kind"] == "flagged" and is_planted(r) and str(r["family"]).startswith(prefix)
        )
        for g, prefix in GROUPS.items()
    }
    return {
        "seed": seed,
        "ps": ps,
        "calls": calls,
        "planted": planted,
        "cells": cells,
        "flags": flags,
        "relations": sorted(sizes),
    }


def oracle(results: list[dict[str, Any]], spending: str, looks: int, grid: int) -> dict[str, Any]:
    """The oracle's calls over the campaigns for one design."""
    step = grid // looks
    fractions = [(j + 1) / looks for j in range(looks)]
    levels = [ALPHA] * looks if spending == "none" else look_levels(fractions, ALPHA, spending)
    fixed = exact = tenth = stays = 0.0
    kept = lost_final = total = 0
    stop_looks: dict[str, list[int]] = {g: [] for g in GROUPS}
    alone: dict[str, list[int]] = {}
    apart = 0.0
    # Of each group's keepable findings, how many are significant at each look.
    shown = {g: [0] * looks for g in GROUPS}
    keepable = dict.fromkeys(GROUPS, 0)
    for r in results:
        ps = [r["ps"][step * (j + 1) - 1] for j in range(looks)]
        groups = []
        gone = 0
        for g in GROUPS:
            calls = [r["calls"][g][step * (j + 1) - 1] for j in range(looks)]
            findings = r["planted"][g]
            final = lost_at([ps[-1]], findings, [levels[-1]])[0]
            keep = [f for f in findings if (p := ps[-1].get(f)) is not None and p <= levels[-1]]
            lost = lost_at(ps, keep, levels)
            keepable[g] += len(keep)
            shown[g] = [a + len(keep) - b for a, b in zip(shown[g], lost, strict=True)]
            total += len(findings)
            lost_final += final
            gone += final
            kept += len(keep)
            fixed += calls[-1]
            j = earliest_look(lost)
            stop_looks[g].append(j + 1)
            if g == "MetaQuerier":
                # MR1's and MR2's own families read only their own cases: could either
                # stop alone (the attribution family aside)? Optimistic bound: each stops
                # at its own families' look, its calls half the group's (equal plans,
                # three calls a case each).
                for own in ("metaquerier.mr1", "metaquerier.mr2"):
                    mine = [f for f in keep if f.partition(" | ")[0].partition(" (")[0] == own]
                    k = earliest_look(lost_at(ps, mine, levels))
                    alone.setdefault(own, []).append(k + 1)
                    apart += calls[k] / 2
            else:
                apart += calls[j]
            exact += calls[j]
            stays += calls[earliest_look(lost, stay=True)]
            groups.append((calls, lost))
        # One in ten of the fixed plan's planted flags, those the last look loses included.
        allowed = max(0, sum(len(r["planted"][g]) for g in GROUPS) // 10 - gone)
        tenth += cheapest_stops(groups, allowed)[1]
    return {
        "levels": levels,
        "fixed": fixed,
        "exact": exact,
        "stays": stays,
        "tenth": tenth,
        "kept": kept,
        "total": total,
        "lost_final": lost_final,
        "stop_looks": stop_looks,
        "alone": alone,
        "apart": apart,
        "shown": {g: f"{'/'.join(map(str, shown[g]))} of {keepable[g]}" for g in GROUPS},
    }


def group_of(name: str) -> str:
    return next(g for g, prefix in GROUPS.items() if name.startswith(prefix))


def by_rule(r: dict[str, Any], spending: str, looks: int, grid: int, rule: str) -> dict[str, Any]:
    """One campaign stopped by the cell rule (`take_look`, futility ``rule``) at the looks
    of a design: a group stops when every relation of it may stop at the same look. Its
    calls; the fixed plan's planted flags still significant at the stop look's level; the
    stopped reports' flags (at 0.05, as the report reads them) and families."""
    step = grid // looks
    fractions = [(j + 1) / looks for j in range(looks)]
    levels = look_levels(fractions, ALPHA, spending)
    relations = r["relations"]
    stop = {g: looks - 1 for g in GROUPS}
    for j in range(looks - 1):
        drawing = [x for x in relations if stop[group_of(x)] == looks - 1]
        if not drawing:
            break
        cells = [Cell(*c) for c in r["cells"][step * (j + 1) - 1]]
        look = take_look(cells, drawing, relations, fractions[j], levels[j], ALPHA, rule)
        for g in GROUPS:
            mine = [x for x in drawing if group_of(x) == g]
            if mine and stop[g] == looks - 1 and all(x in look.stops for x in mine):
                stop[g] = j
    calls = kept = 0
    flags: set[tuple[str, str]] = set()
    families: set[str] = set()
    for g in GROUPS:
        at = step * (stop[g] + 1) - 1
        calls += r["calls"][g][at]
        ps = r["ps"][at]
        kept += sum(
            1 for f in r["planted"][g] if (p := ps.get(f)) is not None and p <= levels[stop[g]]
        )
        flags |= {(fam, k) for fam, k in r["flags"][at] if group_of(fam) == g}
        families |= {c[0] for c in r["cells"][at] if group_of(c[0]) == g}
    return {
        "calls": calls,
        "fixed": sum(r["calls"][g][-1] for g in GROUPS),
        "kept": kept,
        "planted": sum(map(len, r["planted"].values())),
        "flag_families": {fam for fam, _ in flags},
        "families": families,
        "stops": {g: stop[g] + 1 for g in GROUPS},
    }


def wilson(k: int, n: int) -> str:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return f"{k}/{n} = {k / max(n, 1):.1%} [{low:.1%}, {high:.1%}]"


def print_rules(results: list[dict[str, Any]], grid: int, null: bool) -> None:
    for name, (spending, looks) in DESIGNS.items():
        if grid % looks or spending == "none":
            continue
        for rule in RULES:
            runs = [by_rule(r, spending, looks, grid, rule) for r in results]
            calls, fixed = sum(x["calls"] for x in runs), sum(x["fixed"] for x in runs)
            line = f"{name}, futility {rule}: saves {1 - calls / fixed:.1%} ({calls}/{fixed})"
            if null:
                fams = sum(len(x["families"]) for x in runs)
                hit = sum(len(x["flag_families"]) for x in runs)
                line += f"; (campaign, family) flagged {wilson(hit, fams)}"
            else:
                kept, planted = sum(x["kept"] for x in runs), sum(x["planted"] for x in runs)
                line += f"; planted flags kept at the stop look's level {kept}/{planted}"
            line += f"; stop looks {[x['stops'] for x in runs]}"
            print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=3100)
    parser.add_argument("--grid", type=int, default=8, help="reports at j/grid of the plan")
    parser.add_argument("--cases", type=int, default=0, help="MetaQuerier cases (0: the plan's)")
    parser.add_argument("--dump", type=Path, help="write the per-look p-values here (JSON)")
    parser.add_argument("--load", type=Path, help="read campaigns from a --dump instead")
    parser.add_argument("--null", action="store_true", help="null campaigns: the rules only")
    args = parser.parse_args()
    started = time.monotonic()
    results = [restable(r) for r in json.loads(args.load.read_text())] if args.load else []
    with tempfile.TemporaryDirectory() as tmp:
        for s in range(0 if args.load else args.seeds):
            seed = args.first_seed + s
            r = one_campaign(seed, Path(tmp), args.grid, args.cases or None, args.null)
            results.append(r)
            print(
                f"seed {r['seed']}: planted flags {sum(map(len, r['planted'].values()))}",
                flush=True,
            )
            for f in r["planted"]["MetaQuerier"]:
                trail = " ".join("-" if (p := ps.get(f)) is None else f"{p:.2g}" for ps in r["ps"])
                print(f"    {f}: {trail}", flush=True)
            if args.dump:
                args.dump.write_text(json.dumps(results))
    if args.null:
        print_rules(results, args.grid, True)
        print(f"elapsed {time.monotonic() - started:.0f}s")
        return
    print(
        f"{len(results)} campaigns, MetaQuerier cases {args.cases or 'as planned'}; "
        f"fixed calls {sum(r['calls'][g][-1] for r in results for g in GROUPS)}"
    )
    for name, (spending, looks) in DESIGNS.items():
        if args.grid % looks:
            continue
        o = oracle(results, spending, looks, args.grid)
        levels = ", ".join(f"{x:.2g}" for x in o["levels"])
        print(
            f"{name} (levels {levels}): keepable {o['kept']}/{o['total']} planted flags "
            f"({o['lost_final']} above the last level); oracle saves "
            f"{1 - o['exact'] / o['fixed']:.1%} keeping all, {1 - o['stays'] / o['fixed']:.1%} "
            f"if they must stay significant, {1 - o['tenth'] / o['fixed']:.1%} losing <= 1 in 10; "
            f"stop looks {o['stop_looks']} (on their own families alone {o['alone']}, "
            f"which would save at most {1 - o['apart'] / o['fixed']:.1%}); "
            f"significant by look {o['shown']}",
            flush=True,
        )
    print_rules(results, args.grid, False)
    print(f"elapsed {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
