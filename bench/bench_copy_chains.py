"""What carrying the digest chains costs `harness copy` (plain and --compact): each row's
chain re-derived and checked against the source's, then the chains written into the copy.

    python bench/bench_copy_chains.py --old OLD_CHECKOUT --events 140000 --pairs 3

Builds a log of ``--events`` events once (bench/bench_resume.py's log, then the chains the
writer records for it), and copies it in fresh processes, alternating the code of this
checkout (new) and of ``--old`` (another checkout, put first on the import path), so the
load of a shared machine falls on both alike; prints each process's CPU and wall seconds
and the ratio new/old pair by pair.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def add_chains(db: Path) -> None:
    """The chains the writer would have recorded for the log's events (the bench's log is
    written straight through sqlite3, without them)."""
    sys.path.insert(0, str(ROOT))
    from harness.store import case_digest

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(case_digest.SQLITE_SCHEMA)
    chains: dict[tuple[str, str], tuple[int, bytes]] = {}
    sql = (
        "SELECT campaign, case_id, seq, kind, schema_version, turn, attempt, payload"
        " FROM events ORDER BY gseq"
    )
    for campaign, case_id, seq, kind, version, turn, attempt, payload in conn.execute(sql):
        _, links = chains.get((campaign, case_id), (0, b""))
        previous = links[-case_digest.LINK_BYTES :] or case_digest.chain_start(campaign, case_id)
        digest = case_digest.row_digest(seq, kind, version, turn, attempt, payload)
        chains[(campaign, case_id)] = (seq, links + case_digest.link(previous, digest))
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO case_digests (campaign, case_id, seq, links) VALUES (?, ?, ?, ?)",
        [(c, case, seq, links) for (c, case), (seq, links) in chains.items()],
    )
    conn.execute("COMMIT")
    conn.close()


def child(source: Path, compact: bool) -> None:
    from harness.store.copy import copy_log

    with tempfile.TemporaryDirectory() as tmp:
        cpu, wall = time.process_time(), time.perf_counter()
        copied = copy_log(source, Path(tmp) / "copy.db", compact=compact)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        with sqlite3.connect(Path(tmp) / "copy.db") as conn:
            try:
                chains = conn.execute("SELECT count(*) FROM case_digests").fetchone()[0]
            except sqlite3.OperationalError:
                chains = 0
        conn.close()
    print(json.dumps({"cpu": cpu, "wall": wall, "events": copied, "chains": chains}))


def run(code: Path, source: Path, compact: bool) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(code))
    args = [sys.executable, __file__, "--child", str(source)] + (["--compact"] if compact else [])
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True, cwd=code)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, help="the checkout to compare with")
    parser.add_argument("--events", type=int, default=140_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--compact", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.compact)
        return
    assert args.old is not None, "--old: the checkout to compare with"
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source.db"
        sys.path.insert(0, str(ROOT / "bench"))
        from bench_resume import build

        build(source, args.events)
        add_chains(source)
        for compact in (False, True):
            figures: dict[str, list[dict[str, float]]] = {"new": [], "old": []}
            for _ in range(args.pairs):
                figures["new"].append(run(ROOT, source, compact))
                figures["old"].append(run(args.old.resolve(), source, compact))
            name = "copy --compact" if compact else "copy"
            for side in ("new", "old"):
                cpu = " ".join(f"{f['cpu']:.2f}" for f in figures[side])
                wall = " ".join(f"{f['wall']:.2f}" for f in figures[side])
                last = figures[side][-1]
                print(
                    f"{name:15} {side}: CPU {cpu} s, wall {wall} s"
                    f" ({last['events']:.0f} events, {last['chains']:.0f} chains in the copy)"
                )
            pairs = zip(figures["new"], figures["old"], strict=True)
            ratios = [n["cpu"] / o["cpu"] for n, o in pairs]
            print(
                f"{name:15} CPU new/old pair by pair "
                + " ".join(f"{r:.2f}" for r in ratios)
                + f" (median {statistics.median(ratios):.2f})"
            )


if __name__ == "__main__":
    main()
