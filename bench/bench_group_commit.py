"""Benchmark: the ceiling of one PostgreSQL database's commit lock, with durable commits.

N writers (one `PgEventWriter` each, as N workers have) append one-event batches, each
writer waiting for its append before the next (the worst case: no group to gather), to a
throwaway server with ``fsync`` on (tests/postgres_server.py). Paired rounds alternate the two
ways a group commits (harness.store.postgres_writer):

- ``under lock``: the group's transaction commits durably, so the commit lock is held until
  its WAL flush (the writer before issue 36's group commit);
- ``flush after``: the group commits unflushed under the lock, then a durable transaction
  waits for the flush outside it, where the writers' flushes overlap (the default).

It prints commits/s for each round and the paired ratio (median and range). With
``--commit-delay US`` the server's ``commit_delay`` (PostgreSQL's own group commit, a
superuser setting) is set for the whole run, to compare.

    .venv/bin/python bench/bench_group_commit.py [--writers 8] [--appends 30] [--rounds 5]
        [--commit-delay 0]

The machine is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.store.open import open_writer  # noqa: E402
from harness.store.postgres_writer import PgEventWriter  # noqa: E402
from harness.store.writer import PendingEvent  # noqa: E402
from harness.vocabulary.events import Note  # noqa: E402
from tests.postgres_server import start_server  # noqa: E402


async def _appends(writer: PgEventWriter, tag: str, n: int) -> None:
    for i in range(n):
        await writer.append([PendingEvent("bench", f"{tag}-{i}", 1, Note(topic="t"))])


async def rounds(url: str, args: argparse.Namespace) -> dict[bool, list[float]]:
    writers = [await open_writer(url) for _ in range(args.writers)]
    rates: dict[bool, list[float]] = {False: [], True: []}
    try:
        assert all(isinstance(w, PgEventWriter) and w.flush_after_lock for w in writers)
        for r in range(args.rounds):
            for after in (False, True) if r % 2 == 0 else (True, False):
                for w in writers:
                    w.flush_after_lock = after  # type: ignore[attr-defined]
                started = time.perf_counter()
                await asyncio.gather(
                    *(_appends(w, f"{r}-{after}-{i}", args.appends) for i, w in enumerate(writers))  # type: ignore[arg-type]
                )
                rate = args.writers * args.appends / (time.perf_counter() - started)
                rates[after].append(rate)
                print(f"round {r + 1}: {'flush after' if after else 'under lock '} "
                      f"{rate:.0f} commits/s (load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    finally:
        for w in writers:
            await w.close()
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--appends", type=int, default=30, help="a writer, a round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--commit-delay", type=int, default=0, help="microseconds")
    args = parser.parse_args()
    server, why = start_server()
    if server is None:
        print(f"no PostgreSQL server: {why}")
        return 1
    try:
        for setting in ("fsync", "full_page_writes", "synchronous_commit"):
            server.admin(f"ALTER SYSTEM SET {setting} = on")
        server.admin(f"ALTER SYSTEM SET commit_delay = {args.commit_delay}")
        server.admin("SELECT pg_reload_conf()")
        print(f"{args.writers} writers, fsync on, commit_delay {args.commit_delay} us; "
              f"load average before {os.getloadavg()[0]:.1f}")  # fmt: skip
        rates = asyncio.run(rounds(server.url(server.create_database()), args))
        ratios = [a / u for a, u in zip(rates[True], rates[False], strict=True)]
        print(f"flush after / under lock, paired: median {statistics.median(ratios):.2f}x "
              f"(range {min(ratios):.2f}-{max(ratios):.2f}x); commits/s under lock median "
              f"{statistics.median(rates[False]):.0f}, flush after "
              f"{statistics.median(rates[True]):.0f}")  # fmt: skip
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
