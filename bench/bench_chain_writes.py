"""What keeping the digest chains costs the SQLite writer a committed event: one statement a
event (`case_digest.write_params`, what the writer ran before, and what PostgreSQL's runs)
against one a case a commit (`case_digest.sqlite_write_params`, what it runs now).

    python bench/bench_chain_writes.py --rounds 5

The commits are those of the engine at 256 in flight: each case's batches (CaseOpened with
its first AskSent, a reply, the next AskSent, a reply, the verdict with CaseClosed) spread
over successive commits of about 420 events; the statements run on an in-memory database
with the writer's table and SQL function. The two ways alternate, round by round, in one
process; the CPU a committed event is printed for each, and the tables they leave are
checked equal.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.store import case_digest

Row = tuple[str, str, int, str, int, int | None, int | None, str]
BATCHES = ([1, 2], [3], [4], [5], [6, 7])  # a two-turn case's batches, by seq


def commits(cases: int, in_flight: int, per_commit: int, seed: int) -> list[list[Row]]:
    rng = random.Random(seed)
    reply = json.dumps({"kind": "ReplyReceived", "reply": {"text": "x" * 400, "usage": {}}})
    live: list[list[object]] = []
    started, out, current = 0, [], []
    while started < cases or live:
        while len(live) < in_flight and started < cases:
            live.append([f"case/{started}", 0])
            started += 1
        case = rng.choice(live)
        name, step = str(case[0]), int(case[1])  # type: ignore[call-overload]
        for seq in BATCHES[step]:
            turned = seq > 1
            current.append(("c", name, seq, "K", 1, 0 if turned else None, 1, reply))
        case[1] = step + 1
        if step + 1 == len(BATCHES):
            live.remove(case)
        if len(current) >= per_commit:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def write(groups: list[list[Row]], merged: bool) -> tuple[float, list[tuple[object, ...]]]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(case_digest.SQLITE_SCHEMA)
    conn.create_function("harness_chain", 2, case_digest.sqlite_chain, deterministic=True)
    params = case_digest.sqlite_write_params if merged else case_digest.write_params
    cpu = time.process_time()
    for rows in groups:
        conn.execute("BEGIN")
        starts, extends = params(rows)
        conn.executemany(case_digest.SQLITE_START, starts)
        conn.executemany(case_digest.SQLITE_EXTEND, extends)
        conn.execute("COMMIT")
    cpu = time.process_time() - cpu
    table = conn.execute("SELECT * FROM case_digests ORDER BY case_id").fetchall()
    conn.close()
    return cpu, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    groups = commits(args.cases, 256, 420, seed=1)
    events = sum(len(g) for g in groups)
    figures: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        tables = []
        for merged in (False, True):
            cpu, table = write(groups, merged)
            figures[merged].append(cpu / events * 1e6)
            tables.append(table)
        assert tables[0] == tables[1], "the two ways left different chains"
    for merged, name in ((False, "a statement an event"), (True, "a statement a case")):
        us = " ".join(f"{v:.2f}" for v in figures[merged])
        print(f"{name:22} {us} us CPU an event (median {statistics.median(figures[merged]):.2f})")
    ratios = [n / o for n, o in zip(figures[True], figures[False], strict=True)]
    print(f"ratio round by round {' '.join(f'{r:.2f}' for r in ratios)} ({events} events)")


if __name__ == "__main__":
    main()
