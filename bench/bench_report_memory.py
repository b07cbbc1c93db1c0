"""Report memory benchmark: peak RSS and CPU of `harness report` (text, JSON, HTML) against
the number of cases in the log, and the ratio of the peak to the 500 MB limit (issue 36).

    python bench/bench_report_memory.py                     # 10,000 and 100,000 cases
    python bench/bench_report_memory.py --cases 10000       # one size
    python bench/bench_report_memory.py --logs DIR          # keep (and reuse) the logs in DIR
    python bench/bench_report_memory.py --keep DIR          # keep the reports (compare versions)
    python bench/bench_report_memory.py --cases 1000000 --replicate 10000   # fast large log

The log is a simulated MetaQuerier campaign (MR1 and MR2, half the plan each, zero latency)
written by `harness run`; a log made before is reused from --logs. With ``--replicate M`` a
log of N cases is instead made from a real M-case log (run as above, or reused): its events
are written again under new case ids (copy k: index + k * S, S one more than the largest
index; the CaseOpened event re-encoded with the new id and index, every other payload as
recorded) through the store's own writer, one transaction a copy, so the derived tables and
per-case digest chains are the store's own; the campaign's start and finish are written once,
with the planned and closed counts scaled to N. N must be a multiple of M. The report's
sections are those of a run N-case log; its counts are M's times N / M (the cases repeat).
`harness replay` re-plans each copy from its index and so reports its case data as differing
(every digest still checks); `harness copy` (which proves every chain) passes.

Each report runs as its own process: its peak RSS is sampled every 50 ms over the process
and any process it starts (the verdict count may run in a second process); the kernel's
peak of its largest single process (``wait4``: its own, never an earlier report's) is a
floor for both. Its CPU time is that of the process tree (``wait4``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MB = 500.0
FORMATS = ("text", "json", "html")


def campaign_toml(cases: int) -> str:
    half = max(1, cases // 2)
    return (
        'name = "bench-report"\nseed = 1\n'
        '[[models]]\nname = "sim:bench"\nmax_in_flight = 64\n'
        f'[[relations]]\nname = "metaquerier.mr1"\ncases = {half}\n'
        f'[[relations]]\nname = "metaquerier.mr2"\ncases = {max(1, cases - half)}\n'
    )


def harness_cmd(*args: str) -> list[str]:
    """The `harness` command of this interpreter's environment."""
    return [str(Path(sys.executable).with_name("harness")), *args]


def make_log(cases: int, logs: Path) -> tuple[Path, float]:
    """The log of an N-case sim campaign in ``logs`` (made unless there), and the seconds
    its making took (0 when reused)."""
    db = logs / f"report-{cases}.db"
    if db.exists():
        return db, 0.0
    config = logs / f"report-{cases}.toml"
    config.write_text(campaign_toml(cases))
    partial = logs / f"report-{cases}.partial.db"
    partial.unlink(missing_ok=True)
    t0 = time.perf_counter()
    subprocess.run(
        harness_cmd("run", str(config), "--db", str(partial), "--no-report"),
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    partial.rename(db)
    return db, time.perf_counter() - t0


def replicate_log(source: Path, cases: int, logs: Path) -> tuple[Path, float]:
    """A log of ``cases`` cases in ``logs`` made from the real log ``source`` (see the module's
    docstring), and the seconds its making took (0 when reused)."""
    import asyncio
    import sqlite3

    from harness.store.fresh_log import FreshLog
    from harness.store.writer import EventWriter
    from harness.vocabulary import events as ev

    db = logs / f"replicated-{cases}.db"
    if db.exists():
        return db, 0.0
    conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    columns = "campaign, case_id, seq, kind, schema_version, turn, attempt, payload"
    rows = conn.execute(f"SELECT {columns} FROM events ORDER BY gseq").fetchall()
    conn.close()
    opened = [r for r in rows if r[3] == "CaseOpened"]
    if not opened or cases % len(opened):
        raise SystemExit(
            f"--cases {cases} is not a multiple of the {len(opened)} cases of {source}"
        )
    copies = cases // len(opened)
    stride = 1 + max(ev.decode_event(r[3], r[4], r[7]).case.index for r in opened)  # type: ignore[union-attr]

    def reencoded(row: tuple[Any, ...], event: Any) -> tuple[Any, ...]:
        kind, version, payload = ev.encode_event(event)
        return (*row[:3], kind, version, *row[5:7], payload)

    def scaled(row: tuple[Any, ...]) -> tuple[Any, ...]:
        event = ev.decode_event(row[3], row[4], row[7])
        if isinstance(event, ev.CampaignStarted):
            # A relation over a test set plans its set's size (no "cases"): left as recorded.
            relations = [
                {**r, "cases": r["cases"] * copies} if r.get("cases") is not None else r
                for r in event.config["relations"]
            ]
            config = {**event.config, "relations": relations}
            planned = None if event.planned_cases is None else event.planned_cases * copies
            update = {"config": config, "planned_cases": planned}
            return reencoded(row, event.model_copy(update=update))
        if isinstance(event, ev.CampaignFinished):
            return reencoded(row, event.model_copy(update={"cases_closed": cases}))
        return row

    def copy_of(row: tuple[Any, ...], k: int, ids: dict[str, str]) -> tuple[Any, ...]:
        if row[3] == "CaseOpened":
            event = ev.decode_event(row[3], row[4], row[7])
            assert isinstance(event, ev.CaseOpened)
            relation, _, rest = event.case.case_id.split("/", 2)
            new_index = event.case.index + k * stride
            new_id = f"{relation}/{new_index}/{rest}"
            ids[row[1]] = new_id
            case = event.case.model_copy(update={"case_id": new_id, "index": new_index})
            return reencoded((row[0], new_id, *row[2:]), event.model_copy(update={"case": case}))
        return (row[0], ids[row[1]], *row[2:])

    head = [scaled(r) for r in rows if not r[1] and r[3] == "CampaignStarted"]
    tail = [scaled(r) for r in rows if not r[1] and r[3] != "CampaignStarted"]
    per_case = [r for r in rows if r[1]]

    async def write(path: Path) -> None:
        async with await EventWriter.open(path, bulk=True) as store:
            await store.append_many(head)
            for k in range(copies):
                ids: dict[str, str] = {}
                await store.append_many([copy_of(r, k, ids) for r in per_case])
            await store.append_many(tail)

    t0 = time.perf_counter()
    with FreshLog.build(db) as fresh:
        asyncio.run(write(fresh.partial))
        fresh.publish()
    return db, time.perf_counter() - t0


def tree_rss(proc: Any) -> tuple[int, int]:
    """(RSS of the process, RSS of it and its descendants), in bytes."""
    import psutil

    try:
        own = proc.memory_info().rss
    except psutil.Error:
        return 0, 0
    total = own
    try:
        children = proc.children(recursive=True)
    except psutil.Error:
        children = []
    for child in children:
        with contextlib.suppress(psutil.Error):
            total += child.memory_info().rss
    return own, total


def measure_report(db: Path, fmt: str, out_dir: Path) -> dict[str, Any]:
    """One `harness report` of ``db`` in ``fmt``: peak RSS (own, and with its children),
    CPU seconds and wall seconds."""
    import psutil

    out = out_dir / f"report.{fmt}"
    args = ["report", str(db), "--force"]
    if fmt == "html":
        args += ["--format", "json", "--out", str(out_dir / "with-html.json"), "--html", str(out)]
    else:
        args += ["--format", fmt, "--out", str(out)]
    t0 = time.perf_counter()
    popen = subprocess.Popen(harness_cmd(*args), cwd=ROOT, stdout=subprocess.DEVNULL)
    proc = psutil.Process(popen.pid)
    peak_own = peak_tree = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak_own, peak_tree
        while not stop.is_set():
            own, tree = tree_rss(proc)
            peak_own, peak_tree = max(peak_own, own), max(peak_tree, tree)
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    # This report's own usage (wait4): RUSAGE_CHILDREN's ru_maxrss is the largest of every
    # child this benchmark ever waited for, so a report measured after a larger one took
    # the larger one's peak as its own (the "text at 500 MB" of an earlier run).
    _, status, usage = os.wait4(popen.pid, 0)
    code = popen.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    sampler.join()
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"harness report --format {fmt} failed with exit code {code}")
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "format": fmt,
        "peak_rss_mb": peak_own / 2**20,
        "peak_tree_rss_mb": peak_tree / 2**20,
        # The largest RSS one process of this report reached (kB on Linux): the report
        # process or a process it started and waited for, whichever was larger.
        "ru_maxrss_mb": usage.ru_maxrss / 1024,
        "cpu_s": cpu,
        "wall_s": wall,
        "output_bytes": out.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, action="append", help="log sizes (repeatable)")
    parser.add_argument("--logs", type=Path, help="directory to keep and reuse the logs in")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--json", action="store_true", help="one JSON line per measurement")
    parser.add_argument(
        "--keep", type=Path, help="keep each report in this directory (to compare two versions)"
    )
    parser.add_argument(
        "--replicate",
        type=int,
        metavar="M",
        help="make each N-case log from a real M-case log's events (fast; see above)",
    )
    args = parser.parse_args()
    sizes = args.cases or [10_000, 100_000]
    formats = [f for f in args.formats.split(",") if f]
    print(f"# {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        out_dir = Path(tmp)
        print(f"{'cases':>9} {'format':>6} {'peak MB':>8} {'max1 MB':>8} {'tree MB':>8} "
              f"{'kB/case':>8} {'/500MB':>7} {'cpu s':>7} {'us/case':>8} "
              f"{'wall s':>7}")  # fmt: skip
        for cases in sizes:
            if args.replicate:
                source, _ = make_log(args.replicate, logs)
                db, made = replicate_log(source, cases, logs)
            else:
                db, made = make_log(cases, logs)
            if made:
                print(f"# log of {cases} cases made in {made:.1f} s "
                      f"({db.stat().st_size / 2**20:.0f} MB)")  # fmt: skip
            for fmt in formats:
                here = out_dir
                if args.keep is not None:
                    here = args.keep / str(cases)
                    here.mkdir(parents=True, exist_ok=True)
                r = measure_report(db, fmt, here)
                r["cases"] = cases
                peak = max(r["peak_tree_rss_mb"], r["ru_maxrss_mb"])
                if args.json:
                    print(json.dumps(r))
                print(
                    f"{cases:>9} {fmt:>6} {r['peak_rss_mb']:>8.1f} {r['ru_maxrss_mb']:>8.1f} "
                    f"{peak:>8.1f} {peak * 1024 / cases:>8.2f} {peak / LIMIT_MB:>7.2f} "
                    f"{r['cpu_s']:>7.1f} "
                    f"{r['cpu_s'] * 1e6 / cases:>8.0f} {r['wall_s']:>7.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
