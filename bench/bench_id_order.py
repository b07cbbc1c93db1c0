"""Case-id order and the writer's cost as a log grows (issue 14, the six-model import).

    python bench/bench_id_order.py LOG [--copies 6] [--orders end,case,front]

Takes the case events of an imported log (``harness import biaslens ... --db LOG``) and writes
``--copies`` copies of them into fresh format-1 logs, one log per order, through the writer's
pragmas (WAL, ``synchronous=FULL``), 5,000 events a commit. Each copy stands for a model:

- ``end``: copy by copy, the model at the end of the id (``.../02195@m2``), as the import
  wrote ids before 2026-11-27: each copy's cases fall between the previous copies' in the
  case_id indexes;
- ``front``: copy by copy, the model right after the relation (``rel/m2/.../02195``), as the
  import writes them now: each copy's cases go to one place in the indexes;
- ``case``: case by case, every copy of a case one after the other: ids grow at the end of
  the indexes (the lower bound).

It prints the INSERT and COMMIT seconds of each order, and for each the commit time of the
last copy over the first's: 1.0 means commits do not grow with the log.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.store.schema import SCHEMA, WRITER_PRAGMAS  # noqa: E402

BATCH = 5_000
Row = tuple[object, ...]
INSERT = (
    "INSERT INTO events (campaign, case_id, seq, kind, schema_version, turn, attempt, batch,"
    " ts, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def case_rows(log: Path) -> tuple[list[Row], str]:
    """The log's case events in log order, and the model suffix of their ids."""
    with sqlite3.connect(log) as src:
        rows = src.execute(
            "SELECT campaign, case_id, seq, kind, schema_version, turn, attempt, payload"
            " FROM events WHERE case_id != '' ORDER BY gseq"
        ).fetchall()
    suffixes = {str(r[1]).rpartition("@")[2] for r in rows}
    if len(suffixes) != 1:
        sys.exit(f"{log}: give a log of one model (found {sorted(suffixes)})")
    return rows, suffixes.pop()


def copy_id(case_id: str, model: str, copy: int, order: str) -> str:
    stem = case_id.removesuffix("@" + model)
    name = f"m{copy}"
    if order == "front":
        relation, _, rest = stem.partition("/")
        return f"{relation}/{name}/{rest}"
    return f"{stem}@{name}"


def ordered(rows: list[Row], copies: int, order: str) -> Iterator[tuple[int, Row]]:
    if order in ("end", "front"):
        for copy in range(copies):
            for row in rows:
                yield copy, row
        return
    start = 0
    while start < len(rows):  # a case's rows are together in an imported log
        stop = start
        while stop < len(rows) and rows[stop][1] == rows[start][1]:
            stop += 1
        for copy in range(copies):
            for row in rows[start:stop]:
                yield copy, row
        start = stop


def run(rows: list[Row], model: str, copies: int, order: str, db: Path) -> dict[str, object]:
    conn = sqlite3.connect(db, isolation_level=None)
    for pragma in WRITER_PRAGMAS:
        conn.execute(pragma)
    conn.executescript(SCHEMA)
    inserting = committing = 0.0
    per_copy: list[float] = []  # commit seconds, each time a copy's worth of rows is written
    batch: list[Row] = []

    def flush() -> None:
        nonlocal inserting, committing
        a = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, batch)
        b = time.perf_counter()
        conn.execute("COMMIT")
        inserting += b - a
        committing += time.perf_counter() - b
        batch.clear()

    started = time.perf_counter()
    for written, (copy, r) in enumerate(ordered(rows, copies, order), 1):
        cid = copy_id(str(r[1]), model, copy, order)
        batch.append((r[0], cid, r[2], r[3], r[4], r[5], r[6], written // BATCH, 0.0, r[7]))
        if len(batch) == BATCH:
            flush()
        if written % len(rows) == 0:
            per_copy.append(committing - sum(per_copy))
    if batch:
        flush()
    conn.close()
    return {
        "order": order,
        "insert_s": inserting,
        "commit_s": committing,
        "wall_s": time.perf_counter() - started,
        "last_over_first_commit": per_copy[-1] / per_copy[0] if per_copy[0] else float("nan"),
        "mb": db.stat().st_size / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path, help="a log of one imported model")
    ap.add_argument("--copies", type=int, default=6)
    ap.add_argument("--orders", default="end,case,front")
    args = ap.parse_args()
    rows, model = case_rows(args.log)
    print(f"date {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    print(f"{len(rows)} case events of {model}, {args.copies} copies, {BATCH} events a commit")
    with tempfile.TemporaryDirectory(prefix="bench-id-order-") as tmp:
        for order in args.orders.split(","):
            r = run(rows, model, args.copies, order, Path(tmp) / f"{order}.db")
            print(
                f"{order:6} insert {r['insert_s']:6.1f} s  commit {r['commit_s']:6.1f} s"
                f"  wall {r['wall_s']:6.1f} s  last/first copy's commits"
                f" {r['last_over_first_commit']:.2f}  log {r['mb']:.0f} MB",
                flush=True,
            )
            (Path(tmp) / f"{order}.db").unlink()


if __name__ == "__main__":
    main()
