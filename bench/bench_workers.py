"""Benchmark: calls per second through the official SDK over HTTP, one process vs two
workers sharing the campaign through PostgreSQL, against Little's law (in flight / latency).

A fake OpenAI-compatible vendor (tests/core/models/vendor/vendor_fakes.py) answers every request
after a fixed latency in its own process; the campaign's model is ``openai-compat`` (the openai
SDK). One process runs all calls in flight into SQLite; then two ``harness worker``
processes (``harness run --workers 2``) split the same number in flight and share a
throwaway PostgreSQL server (tests/postgres_server.py).

Throughput is read from the log over the steady part of each run: the replies between the
10th and the 90th percentile of reply times, so neither a process's start-up (imports, the
plan, connections) nor the tail of the last cases counts. Over the same window the CPU time
of every process involved is sampled from /proc (Linux): the harness processes, the fake
vendor and the PostgreSQL server (its backends included). CPU ms per call is the figure
that holds on a shared machine; with it, the CPU ceiling of the machine: cores x 1000 ms
over the CPU ms all of them need per call.

    .venv/bin/python bench/bench_workers.py [--cases 6000] [--in-flight 256] [--latency 0.2]
        [--modes sqlite,1,2]

The machine is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
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


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (which may hold spaces)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def cpu_s(root: int, tree: dict[int, list[int]]) -> float:
    """CPU seconds of ``root`` and its live descendants, with the children they reaped
    (PostgreSQL's postmaster reaps every backend that disconnects)."""
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        fields = _stat(pid)
        if fields is not None:  # utime, stime, cutime, cstime
            total += sum(int(f) for f in fields[11:15]) / TICK
        todo.extend(tree.get(pid, []))
    return total


@dataclass
class CpuSampler:
    """CPU seconds of the harness, the vendor and PostgreSQL, sampled every ``every_s``."""

    vendor: int
    postgres: int
    every_s: float = 0.2
    harness: int = 0
    samples: list[tuple[float, float, float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def sample(self) -> None:
        tree = _children()
        harness = cpu_s(self.harness, tree) if self.harness else 0.0
        self.samples.append(
            (time.time(), harness, cpu_s(self.vendor, tree), cpu_s(self.postgres, tree))
        )

    def run(self, argv: list[str]) -> None:
        """Run the harness command ``argv``, sampling until it exits."""
        self.samples.clear()
        self._stop.clear()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.harness = proc.pid
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            if proc.wait() != 0:
                raise SystemExit(f"harness {' '.join(argv[3:5])} failed ({proc.returncode})")
        finally:
            self._stop.set()
            thread.join()

    def between(self, start: float, end: float) -> tuple[float, float, float]:
        """CPU seconds (harness, vendor, PostgreSQL) spent from ``start`` to ``end``,
        interpolated between the samples around each."""

        def at(t: float) -> list[float]:
            points = self.samples
            for (t0, *a), (t1, *b) in itertools.pairwise(points):
                if t0 <= t <= t1:
                    w = (t - t0) / max(t1 - t0, 1e-9)
                    return [x + (y - x) * w for x, y in zip(a, b, strict=True)]
            return list(points[0][1:] if t < points[0][0] else points[-1][1:])

        a, b = at(start), at(end)
        return b[0] - a[0], b[1] - a[1], b[2] - a[2]


def steady_window(db: str) -> tuple[int, float, float, float]:
    """(replies, first, last reply time, replies between the 10th and 90th percentile)."""
    with open_reader(db) as log:
        times = [
            float(r[0])
            for r in log.connection.execute(
                "SELECT ts FROM events WHERE kind = 'ReplyReceived' ORDER BY ts"
            )
        ]
    lo, hi = len(times) // 10, len(times) * 9 // 10
    return len(times), times[lo], times[hi], float(hi - lo)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=6000)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--modes", default="sqlite,1,2", help="sqlite and/or worker counts")
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
        cores = len(os.sched_getaffinity(0))
        print(f"Little's law limit: {args.in_flight} in flight / {args.latency:g} s = "
              f"{limit:.0f} calls/s; {cores} cores; load average before "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
        sampler = CpuSampler(vendor.pid, postmaster)
        for mode in args.modes.split(","):
            postgres = mode != "sqlite"
            workers = int(mode) if postgres else 1
            toml = tmp / f"{mode}.toml"
            per = args.in_flight // workers
            toml.write_text(CAMPAIGN.format(in_flight=per, url=url, cases=args.cases))
            argv = [sys.executable, "-c", "from harness.cli import main; main()", "run",
                    str(toml), "--no-report", "--db"]  # fmt: skip
            if not postgres:
                db = str(tmp / "single.db")
                sampler.run([*argv, db])
                label = f"1 process, SQLite ({per} in flight)"
            else:
                db = server.url(server.create_database())
                sampler.run([*argv, db, "--workers", str(workers)])
                label = f"{workers} worker{'s' * (workers > 1)}, PostgreSQL ({per} in flight each)"
            calls, start, end, steady = steady_window(db)
            rate = steady / max(end - start, 1e-9)
            harness_s, vendor_s, postgres_s = sampler.between(start, end)
            per_call = [1000 * x / steady for x in (harness_s, vendor_s, postgres_s)]
            ceiling = cores * 1000 / sum(per_call)
            print(f"{label}: {calls} calls, steady {rate:.0f} calls/s = {rate / limit:.0%} of "
                  f"the limit; CPU ms/call harness {per_call[0]:.2f}, vendor {per_call[1]:.2f}, "
                  f"PostgreSQL {per_call[2]:.2f}: {cores} cores give at most {ceiling:.0f} "
                  f"calls/s = {ceiling / limit:.0%} of the limit (load average "
                  f"{os.getloadavg()[0]:.1f})")  # fmt: skip
    finally:
        vendor.kill()
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
