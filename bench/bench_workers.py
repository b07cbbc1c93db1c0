"""Benchmark: calls per second through the official SDK over HTTP, one process vs two
workers sharing the campaign through PostgreSQL, against Little's law (in flight / latency).

A fake OpenAI-compatible vendor (tests/vendor/vendor_fakes.py) answers every request after
a fixed latency in its own process; the campaign's model is ``openai-compat`` (the openai
SDK). One process runs all calls in flight into SQLite; then two ``harness worker``
processes (``harness run --workers 2``) split the same number in flight and share a
throwaway PostgreSQL server (tests/postgres_server.py). Throughput is read from the log:
replies over the span from the first reply to the last.

    .venv/bin/python bench/bench_workers.py [--cases 3000] [--in-flight 256] [--latency 0.2]

The machine is shared: print the load average beside the figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.store.open import open_reader  # noqa: E402
from tests.postgres_server import start_server  # noqa: E402

CAMPAIGN = """
name = "bench-workers"
seed = 1
[[models]]
name = "openai-compat:bench"
max_in_flight = {in_flight}
options = {{ base_url = "{url}", timeout = 60 }}
[[relations]]
name = "metaquerier.mr1"
cases = {cases}
"""

VENDOR = (
    "import sys, time; sys.path.insert(0, {path!r}); from vendor_fakes import FakeVendor\n"
    "v = FakeVendor(latency_s={latency}).start(); print(v.port, flush=True)\n"
    "while True: time.sleep(3600)\n"
)


def harness(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def throughput(db: str) -> tuple[int, float]:
    with open_reader(db) as log:
        n, first, last = log.connection.execute(
            "SELECT count(*), min(ts), max(ts) FROM events WHERE kind = 'ReplyReceived'"
        ).fetchone()
    return int(n), int(n) / max(last - first, 1e-9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    vendor = subprocess.Popen(
        [sys.executable, "-c",
         VENDOR.format(path=str(ROOT / "tests" / "vendor"), latency=args.latency)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    server, why = start_server()
    if server is None:
        print(f"no PostgreSQL server: {why}")
        return 1
    try:
        assert vendor.stdout is not None
        url = f"http://127.0.0.1:{vendor.stdout.readline().strip()}/v1"
        tmp = Path(tempfile.mkdtemp())
        limit = args.in_flight / args.latency
        print(f"Little's law limit: {args.in_flight} in flight / {args.latency:g} s = "
              f"{limit:.0f} calls/s; {os.cpu_count()} cores; load average before "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip
        rows = []
        modes = (("1 process, SQLite", 1, False), ("1 worker, PostgreSQL", 1, True),
                 ("2 workers, PostgreSQL", 2, True))  # fmt: skip
        for label, workers, postgres in modes:
            toml = tmp / f"w{workers}.toml"
            per = args.in_flight // workers
            toml.write_text(CAMPAIGN.format(in_flight=per, url=url, cases=args.cases))
            if not postgres:
                db = str(tmp / "single.db")
                harness("run", str(toml), "--db", db, "--no-report")
            else:
                db = server.url(server.create_database())
                harness("run", str(toml), "--db", db, "--workers", str(workers), "--no-report")
            calls, rate = throughput(db)
            rows.append((label, calls, rate))
            print(f"{label:<24} {calls:>6} calls {rate:>7.0f} calls/s = {rate / limit:.0%} "
                  f"of the limit (load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    finally:
        vendor.kill()
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
