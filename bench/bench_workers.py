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

    .venv/bin/python bench/bench_workers.py --unconfined [--cases 6000] [--in-flight 256]
        [--latency 0.2] [--modes sqlite,1,2]

With ``--quota Q`` (the default, 0.125 of a core) each ``harness worker`` runs alone in its
own CPU cgroup limited to Q of a core (cgroup v2 ``cpu.max`` when the machine's cgroup v2
tree has the cpu controller and is writable, else cgroup v1 ``cpu.cfs_quota_us``; the run
says which, and is skipped with the reason when neither can be written: it needs root),
while PostgreSQL (durable: ``fsync`` and ``full_page_writes`` on) and the fake vendor run
outside any quota. For N = 1, 2, 4, 8 (``--modes``) workers it prints the steady calls/s,
the efficiency against N times the one worker's calls/s, the share of its quota each worker
used (a worker that did not get its quota on a loaded machine shows it here), and the
commit lock (``pg_locks`` sampled every 0.1 s over the steady window: the samples in which
a writer held it, and those in which another backend waited for it):

    .venv/bin/python bench/bench_workers.py [--quota 0.125] [--modes 1,2,4,8]
        [--cases-per-worker 400] [--in-flight 64] [--latency 0.2]

The machine is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.running.campaign import load_campaign  # noqa: E402
from harness.running.plan import Plan  # noqa: E402
from harness.running.worker import start_campaign  # noqa: E402
from harness.store.open import open_reader  # noqa: E402
from harness.store.postgres_schema import COMMIT_LOCK  # noqa: E402
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


CGROUP_V2 = Path("/sys/fs/cgroup")
CGROUP_V2_HYBRID = Path("/sys/fs/cgroup/unified")
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


@dataclass
class CpuCgroup:
    """One worker's CPU cgroup: ``quota`` of a core, on cgroup ``version`` 1 or 2."""

    path: Path
    version: int

    @classmethod
    def make(cls, name: str, quota: float) -> CpuCgroup:
        root, version = cgroup_root()
        path = root / name
        path.mkdir()
        limit = max(1000, round(quota * PERIOD_US))
        if version == 2:
            (path / "cpu.max").write_text(f"{limit} {PERIOD_US}")
        else:
            (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(limit))
        return cls(path, version)

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def throttled(self) -> tuple[int, int]:
        """(periods, periods throttled) so far."""
        stat = dict(
            line.split() for line in (self.path / "cpu.stat").read_text().splitlines() if line
        )
        return int(stat.get("nr_periods", 0)), int(stat.get("nr_throttled", 0))

    def remove(self) -> None:
        for _ in range(50):  # the last process leaves the cgroup a moment after it exits
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def cgroup_root() -> tuple[Path, int]:
    """Where a writable CPU cgroup can be made, and the cgroup version; SystemExit with
    the reason when nowhere."""
    why = []
    for root in (CGROUP_V2, CGROUP_V2_HYBRID):
        controllers = root / "cgroup.controllers"
        if not controllers.exists():
            continue
        if "cpu" not in controllers.read_text().split():
            why.append(f"cgroup v2 at {root} has no cpu controller (cgroup v1 holds it)")
            continue
        try:
            (root / "cgroup.subtree_control").write_text("+cpu")
        except OSError as exc:
            why.append(f"cgroup v2 at {root} is not writable ({exc.strerror})")
            continue
        return root, 2
    if (CGROUP_V1_CPU / "cpu.cfs_quota_us").exists():
        if os.access(CGROUP_V1_CPU, os.W_OK):
            return CGROUP_V1_CPU, 1
        why.append(f"cgroup v1 {CGROUP_V1_CPU} is not writable (run as root)")
    raise SystemExit("skipped: no writable CPU cgroup: " + "; ".join(why or ["none mounted"]))


def commits_between(url: str, start: float, end: float) -> int:
    """Transactions that committed events stamped from ``start`` to ``end``: the distinct
    inserting transaction ids (``xmin``) of those rows. One transaction holds a group of
    batches, so batch numbers would overcount the commits."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(DISTINCT xmin::text) FROM events WHERE ts >= %s AND ts <= %s",
            (start, end),
        ).fetchone()
    return int(row[0]) if row else 0


def proc_cpu_s(pid: int) -> float:
    fields = _stat(pid)
    return sum(int(f) for f in fields[11:13]) / TICK if fields is not None else 0.0


def _between(samples: list[tuple[float, float]], t: float) -> float:
    """The sampled value at time ``t``, interpolated."""
    for (t0, a), (t1, b) in itertools.pairwise(samples):
        if t0 <= t <= t1:
            return a + (b - a) * (t - t0) / max(t1 - t0, 1e-9)
    return samples[0][1] if t < samples[0][0] else samples[-1][1]


def lock_waits(url: str, stop: threading.Event, samples: list[tuple[float, int, int]]) -> None:
    """Sample the commit lock every 0.1 s until ``stop``: (time, backends waiting, held)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        while not stop.wait(0.1):
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE NOT granted), count(*) FILTER (WHERE granted)"
                " FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s",
                (COMMIT_LOCK >> 32, COMMIT_LOCK & 0xFFFF_FFFF),
            ).fetchone()
            samples.append((time.time(), int(row[0]), int(row[1])) if row else (0.0, 0, 0))


def commit_counts(url: str) -> tuple[int, int]:
    """(transactions committed in the database of ``url``, WAL flushes of the server) so far:
    every autocommit statement is a transaction, and every transaction that wrote waits for
    a WAL flush (``fsync`` on), unless a concurrent one's flush covered it."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),"
            " (SELECT wal_sync FROM pg_stat_wal)"
        ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def run_quota(args: argparse.Namespace, server: object, url: str) -> None:
    """Each worker in its own CPU cgroup at ``args.quota`` of a core; N = ``args.modes``."""
    import asyncio

    _, version = cgroup_root()
    where = "cpu.max" if version == 2 else "cpu.cfs_quota_us"
    # Durable commits, as in production: every commit waits for its WAL flush.
    for setting in ("fsync", "full_page_writes", "synchronous_commit"):
        server.admin(f"ALTER SYSTEM SET {setting} = on")  # type: ignore[attr-defined]
    # PostgreSQL's own group commit (a server setting, superuser only: the harness never
    # needs it): a committing backend waits this long for others to share its WAL flush.
    delay = f"ALTER SYSTEM SET commit_delay = {args.commit_delay}"
    server.admin(delay)  # type: ignore[attr-defined]
    server.admin("SELECT pg_reload_conf()")  # type: ignore[attr-defined]
    print(f"commit_delay {args.commit_delay} us; each worker in its own cgroup "
          f"v{version} ({where}) at {args.quota:g} of a core; PostgreSQL (fsync on)"
          f" and the fake vendor ({args.latency:g} s) outside; "
          f"{args.in_flight} in flight a worker; {len(os.sched_getaffinity(0))} cores; "
          f"load average before {os.getloadavg()[0]:.1f}")  # fmt: skip
    tmp = Path(tempfile.mkdtemp())
    one = one_ms = 0.0
    for mode in args.modes.split(","):
        n = int(mode)
        toml = tmp / f"{n}.toml"
        toml.write_text(
            CAMPAIGN.format(in_flight=args.in_flight, url=url, cases=args.cases_per_worker * n)
        )
        config = load_campaign(toml)
        db = server.url(server.create_database())  # type: ignore[attr-defined]
        campaign = asyncio.run(start_campaign(config, db, Plan(config)))
        groups = [CpuCgroup.make(f"bench-worker-{os.getpid()}-{n}-{i}", args.quota)
                  for i in range(n)]  # fmt: skip
        argv = [sys.executable, "-c", "from harness.cli import main; main()", "worker", db,
                "--campaign", campaign]  # fmt: skip
        stop, waits = threading.Event(), list[tuple[float, int, int]]()
        sampler = threading.Thread(target=lock_waits, args=(db, stop, waits), daemon=True)
        sampler.start()
        load0 = os.getloadavg()[0]
        xacts0, flushes0 = commit_counts(db)
        procs: list[subprocess.Popen[bytes]] = []
        cpu: list[tuple[float, float]] = []  # (time, CPU seconds of all the workers)
        try:
            for group in groups:
                procs.append(
                    subprocess.Popen(
                        argv,
                        stdout=subprocess.DEVNULL,
                        stderr=(tmp / f"worker-{n}-{len(procs)}.err").open("wb"),
                        # Joined before exec: the worker's start-up runs under its quota too.
                        preexec_fn=lambda p=group.procs: p.write_text(str(os.getpid())),
                    )
                )
            last = [0.0] * n
            while any(p.poll() is None for p in procs):
                last = [proc_cpu_s(p.pid) or x for p, x in zip(procs, last, strict=True)]
                cpu.append((time.time(), sum(last)))
                time.sleep(0.2)
            throttled = [g.throttled() for g in groups]
            if any(p.returncode for p in procs):
                errors = [(tmp / f"worker-{n}-{i}.err").read_text()[-2000:]
                          for i, p in enumerate(procs) if p.returncode]  # fmt: skip
                raise SystemExit(f"a worker failed: {[p.returncode for p in procs]}\n"
                                 + "\n".join(errors))  # fmt: skip
        finally:
            stop.set()
            sampler.join()
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            for group in groups:
                group.remove()
        # Each worker's last line says how many case claims it sent (granted or refused).
        claims = sum(
            int(m.group(1))
            for i in range(n)
            for m in re.finditer(
                r"(\d+) case claims sent", (tmp / f"worker-{n}-{i}.err").read_text()
            )
        )
        time.sleep(1.0)  # backends report their counts within a second of their last commit
        xacts1, flushes1 = commit_counts(db)
        calls, start, end, steady = steady_window(db)
        rate = steady / max(end - start, 1e-9)
        one = one or rate / n
        # CPU over the steady window only (start-up and the tail left out, as for calls/s).
        worker_s = _between(cpu, end) - _between(cpu, start)
        used = worker_s / (n * args.quota * (end - start))
        ms_call = 1000 * worker_s / steady
        one_ms = one_ms or ms_call
        share = sum(t for _, t in throttled) / max(1, sum(p for p, _ in throttled))
        steady_waits = [(w, h) for t, w, h in waits if start <= t <= end]
        waiting = sum(1 for w, _ in steady_waits if w)
        held = sum(1 for _, h in steady_waits if h)
        most = max((w for w, _ in steady_waits), default=0)
        # The lock's mean hold a commit, estimated: the share of samples it was seen held,
        # times the window, over the commits in the window.
        commits = commits_between(db, start, end)
        all_commits = commits_between(db, 0.0, float("inf"))
        hold_ms = 1000 * held / max(1, len(steady_waits)) * (end - start) / max(1, commits)
        print(f"N={n}: {calls} calls, steady {rate:.0f} calls/s, efficiency "
              f"{rate / (n * one):.0%} of {n} x {one:.0f}; quota used {used:.0%} "
              f"(throttled in {share:.0%} of periods); CPU ms/call {ms_call:.2f} "
              f"(N = 1 needs {one_ms / ms_call:.0%} of it: the efficiency per CPU used); "
              f"commit lock held in {held} and waited for in {waiting} of "
              f"{len(steady_waits)} samples (most waiting {most}; {commits} commits, held about "
              f"{hold_ms:.1f} ms a commit); over the whole run "
              f"{(xacts1 - xacts0) / max(1, calls):.2f} transactions and "
              f"{(flushes1 - flushes0) / max(1, calls):.2f} WAL flushes a call, "
              f"{all_commits / max(1, calls):.2f} commits of events a call; "
              f"{claims} case claims sent for {calls} calls; "
              f"load average {load0:.1f} -> "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=6000, help="--unconfined: cases a run")
    parser.add_argument("--in-flight", type=int, default=0, help="default 64 a worker, "
                        "256 in all with --unconfined")  # fmt: skip
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--modes", default="", help="worker counts (default 1,2,4,8); with "
                        "--unconfined: sqlite and/or worker counts (sqlite,1,2)")  # fmt: skip
    parser.add_argument("--quota", type=float, default=0.125, help="of a core, per worker")
    parser.add_argument("--cases-per-worker", type=int, default=400)
    parser.add_argument("--commit-delay", type=int, default=0, help="the server's "
                        "commit_delay (us), to measure PostgreSQL's group commit")  # fmt: skip
    parser.add_argument("--unconfined", action="store_true", help="no quotas (the old mode)")
    args = parser.parse_args()
    args.in_flight = args.in_flight or (256 if args.unconfined else 64)
    args.modes = args.modes or ("sqlite,1,2" if args.unconfined else "1,2,4,8")
    if not args.unconfined:
        cgroup_root()  # skipped with the reason before any server starts
    vendor = subprocess.Popen(
        [sys.executable, "-c",
         VENDOR.format(path=str(ROOT / "tests" / "core" / "models" / "vendor"),
                       latency=args.latency)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    server, why = start_server()
    if server is None:
        print(f"no PostgreSQL server: {why}")
        return 1
    try:
        assert vendor.stdout is not None
        url = f"http://127.0.0.1:{vendor.stdout.readline().strip()}/v1"
        if not args.unconfined:
            run_quota(args, server, url)
            return 0
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
