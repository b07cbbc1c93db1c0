"""BiasLens released answers: import plus released-mode report, timed (issue 14).

    python bench/bench_biaslens_import.py [--scale one|six] [--src DIR] [--keep]

``one``: the shared data's GPT-4o-mini answers (``../shared/data/biaslens``, 98,592 answers).
``six`` (SYNTHETIC): the full six-model release is not in the shared data, so its size is
imitated: the GPT-4o-mini files are copied under six model names (``synthetic1`` ...) and both
variants (``role`` and ``without_role``), 12 copies = 1,183,104 answers, the size of the
authors' release. The texts repeat, so this measures time and memory scaling, not the answers.

Each step runs as its own process (``harness import biaslens``, ``harness report --mode
released``), as a user runs it; its wall time, CPU seconds (user + sys, the steadier figure
on a loaded machine) and peak RSS come from ``resource.getrusage(RUSAGE_CHILDREN)``. The date,
``uptime`` and the commit are printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "biaslens"
SIX_MODELS = [f"synthetic{i}" for i in range(1, 7)]


def synthesize_six(src: Path, out: Path) -> Path:
    """A SYNTHETIC six-model folder: src's role/gpt4omini files under six names, both variants."""
    base = src / "answers" / "role" / "gpt4omini"
    for variant in ("role", "without_role"):
        for model in SIX_MODELS:
            target = out / "answers" / variant / model
            target.mkdir(parents=True, exist_ok=True)
            for path in sorted(base.glob("*_answers_*.csv")):
                os.link(path, target / path.name) if _same_fs(path, target) else shutil.copy(
                    path, target / path.name
                )
    for extra in ("roles", "questions"):
        if (src / extra).is_dir():
            shutil.copytree(src / extra, out / extra)
    return out


def _same_fs(a: Path, b: Path) -> bool:
    return a.stat().st_dev == b.stat().st_dev


def csv_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in (folder / "answers").rglob("*.csv"))


def timed(cmd: list[str]) -> dict[str, float]:
    """Run ``cmd`` alone; its wall, CPU and peak RSS, from its own rusage (``os.wait4``)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()  # the progress bar and the summary line (not a TTY: no redraws)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", choices=("one", "six"), default="one")
    ap.add_argument("--src", type=Path, default=SHARED)
    ap.add_argument("--keep", action="store_true", help="keep the log and synthetic folder")
    ap.add_argument(
        "--no-precompile",
        action="store_true",
        help="leave the project's bytecode as it is (a first run, or PYTHONDONTWRITEBYTECODE)",
    )
    args = ap.parse_args()
    if not (args.src / "answers").is_dir():
        sys.exit(f"no BiasLens answers under {args.src} (the shared data is absent)")
    work = Path(tempfile.mkdtemp(prefix="bench-biaslens-"))
    src = synthesize_six(args.src, work / "six") if args.scale == "six" else args.src
    db = work / "import.db"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    print(f"date {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, commit {commit}")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    label = (
        "SYNTHETIC six-model (12 copies of GPT-4o-mini)" if args.scale == "six" else "GPT-4o-mini"
    )
    print(f"data: {label}, {csv_bytes(src) / 1e6:.1f} MB of CSV in {src}")
    if not args.no_precompile:
        # A user's second run: Python caches the project's bytecode after the first, unless
        # PYTHONDONTWRITEBYTECODE is set (as on the machine these figures come from), which
        # makes every process compile ~50 modules again (about half a second each).
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "harness", "relations"], cwd=ROOT, check=True
        )
    print(f"bytecode: {'as found' if args.no_precompile else 'precompiled (compileall)'}")
    harness = [str(Path(sys.executable).parent / "harness")]
    imp = timed([*harness, "import", "biaslens", str(src), "--db", str(db)])
    size = db.stat().st_size
    print(
        f"import:  wall {imp['wall']:.1f} s, CPU {imp['cpu']:.1f} s,"
        f" peak RSS {imp['rss_mb']:.0f} MB,"
        f" log {size / 1e6:.0f} MB = {size / csv_bytes(src):.1f}x the CSV"
    )
    rep = timed([*harness, "report", str(db), "--mode", "released", "--out", str(work / "r.txt")])
    print(
        f"report:  wall {rep['wall']:.1f} s, CPU {rep['cpu']:.1f} s, peak RSS "
        f"{rep['rss_mb']:.0f} MB"
    )
    print(f"total:   wall {imp['wall'] + rep['wall']:.1f} s, CPU {imp['cpu'] + rep['cpu']:.1f} s")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
