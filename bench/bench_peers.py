"""Peers side by side: the harness, inspect_ai and promptfoo against one fake server.

    python bench/bench_peers.py                  # 256 in flight, 200 ms, ~5,000 requests each
    python bench/bench_peers.py --requests 1000  # quicker
    python bench/bench_peers.py --fresh          # install the peers into a new temp dir

The fake OpenAI-compatible server of ``bench_http.py`` (its own process, pinned to the last
core) answers every chat completion after ``--latency`` seconds and counts the TCP
connections it accepts. Each client runs as its own command line, pinned to the first core
with every process it starts, against a fresh server:

- ``harness``: ``harness run`` of a one-turn ``biaslens.answer`` campaign on
  ``openai-compat`` (``max_in_flight`` = in flight, ``max_attempts = 1``), with its event log;
- ``inspect_ai``: ``inspect eval bench/peers/inspect_task.py`` (``generate()`` and an
  ``includes()`` scorer) on ``openai-api/bench/bench``, ``--max-connections`` = in flight,
  ``--max-retries 0``, ``--display plain``, its default log (samples included);
- ``promptfoo``: ``promptfoo eval -c bench/peers/promptfooconfig.yaml`` on
  ``openai:chat:bench``, ``-j`` = in flight, ``--no-cache``, ``--no-table``, its default
  result store written, one ``icontains`` assertion.

The peers send the requests the harness sent (read back with ``harness export``), one
single-turn sample or test each; none caches, none retries. inspect_ai and promptfoo are
installed outside the project (``uv venv`` + ``uv pip install inspect-ai openai``, and
``npm install promptfoo``) into ``--env-dir`` (default: a cache directory, reused between
runs); a peer whose install fails is skipped with the reason.

The server is polled every 50 ms. The steady rate and CPU are measured between the moments
the server has seen 10 % and 90 % of the requests (start-up, imports and the tail excluded);
CPU is user + system time of the client's whole process tree on the first core. The
end-to-end figures include start-up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS = BENCH / "peers"
sys.path.insert(0, str(BENCH))

import bench_http  # noqa: E402  (the fake server and the harness campaign live there)

CLIENTS = ("harness", "inspect_ai", "promptfoo")
TARGETS = {"inspect_ai": 8.0, "promptfoo": 3.0}  # harness requests/s >= this many times


# --- pure arithmetic (tests/project/test_bench_peers.py) ----------------------------------------


@dataclass(frozen=True)
class Sample:
    """One poll of the server: when, requests it had received, client tree CPU seconds."""

    t: float
    requests: int
    cpu_s: float


@dataclass(frozen=True)
class Window:
    requests: int
    seconds: float
    cpu_s: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def cpu_ms_per_request(self) -> float:
        return self.cpu_s * 1000 / self.requests


def steady_window(
    samples: Sequence[Sample], total: int, lo: float = 0.1, hi: float = 0.9
) -> Window:
    """The part of a run between the first polls at which the server had received ``lo``
    and ``hi`` of ``total`` requests: the steady state, without start-up or tail."""
    first = next((s for s in samples if s.requests >= lo * total), None)
    last = next((s for s in samples if s.requests >= hi * total), None)
    if first is None or last is None or last.requests <= first.requests or last.t <= first.t:
        raise ValueError(f"the server saw too few requests to measure ({samples[-1:]} of {total})")
    return Window(last.requests - first.requests, last.t - first.t, last.cpu_s - first.cpu_s)


def ratio_line(peer: str, harness_rate: float, peer_rate: float, target: float) -> tuple[bool, str]:
    """The harness against one peer: met or not, and the line that says so."""
    ratio = harness_rate / peer_rate
    ok = ratio >= target
    verdict = "ok" if ok else "MISSED"
    return ok, f"harness/{peer} requests/s: {ratio:.2f}x (target >= {target:g}x) [{verdict}]"


# --- throwaway environments -------------------------------------------------------------


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def install_inspect(env_dir: Path) -> tuple[list[str] | None, str]:
    """``inspect`` in its own venv: the command, or None and why not."""
    venv = env_dir / "inspect"
    exe = venv / "bin" / "inspect"
    if not exe.exists():
        if shutil.which("uv") is None:
            return None, "uv not found on PATH"
        env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        env.pop("VIRTUAL_ENV", None)
        for cmd in (
            ["uv", "venv", "-q", "--python", sys.executable, str(venv)],
            ["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
             "inspect-ai", "openai"],
        ):  # fmt: skip
            out = _run(cmd, env=env)
            if out.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                return None, f"`{' '.join(cmd[:3])}` failed: {out.stderr.strip()[-300:]}"
    py = venv / "bin" / "python"
    out = _run([str(py), "-c", "import inspect_ai, openai; print(inspect_ai.__version__)"])
    if out.returncode != 0:
        return None, f"inspect_ai does not import: {out.stderr.strip()[-300:]}"
    return [str(exe)], f"inspect_ai {out.stdout.strip()} ({venv})"


def install_promptfoo(env_dir: Path) -> tuple[list[str] | None, str]:
    """``promptfoo`` in its own npm prefix: the command, or None and why not."""
    prefix = env_dir / "promptfoo"
    exe = prefix / "node_modules" / ".bin" / "promptfoo"
    if not exe.exists():
        if shutil.which("npm") is None:
            return None, "npm not found on PATH"
        prefix.mkdir(parents=True, exist_ok=True)
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), "promptfoo"]
        out = _run(cmd)
        if out.returncode != 0 or not exe.exists():
            shutil.rmtree(prefix, ignore_errors=True)
            return None, f"`npm install promptfoo` failed: {out.stderr.strip()[-300:]}"
    out = _run([str(exe), "--version"], env=_promptfoo_env(env_dir, ""))
    if out.returncode != 0:
        return None, f"promptfoo does not start: {out.stderr.strip()[-300:]}"
    node = _run(["node", "--version"]).stdout.strip()
    return [str(exe)], f"promptfoo {out.stdout.strip()} on node {node} ({prefix})"


def _promptfoo_env(env_dir: Path, base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PROMPTFOO_CONFIG_DIR": str(env_dir / "promptfoo-home"),  # its store, not ~/.promptfoo
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "OPENAI_API_KEY": "not-needed",
        "OPENAI_BASE_URL": base_url,
    }


# --- one measured client ----------------------------------------------------------------


def tree_cpu(pid: int) -> float:
    """User + system seconds of a process and every descendant alive or reaped by it."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            c = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += c.user + c.system + c.children_user + c.children_system
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Server:
    """bench_http's fake server in its own process, with one kept-alive polling connection."""

    def __init__(self, latency: float, core: int | None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, bench_http.__file__, "--serve", f"--latency={latency}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        if core is not None:
            os.sched_setaffinity(self.proc.pid, {core})
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, int]:
        self.conn.request("GET", "/stats")
        data: dict[str, int] = json.loads(self.conn.getresponse().read())
        return data

    def close(self) -> None:
        self.conn.close()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def measure(
    name: str, cmd: list[str], env: dict[str, str], cwd: Path, server: Server, total: int,
    core: int | None, log: Path,
) -> dict[str, Any]:  # fmt: skip
    """Run one client command to its end while polling the server every 50 ms."""
    cpu_before = _children_cpu()
    t_start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # Set before exec, so that every process the client starts inherits the core.
            preexec_fn=(lambda: os.sched_setaffinity(0, {core})) if core is not None else None,
        )
        samples: list[Sample] = []
        while proc.poll() is None:
            cpu = tree_cpu(proc.pid)
            samples.append(Sample(time.perf_counter(), server.stats()["requests"], cpu))
            time.sleep(0.05)
    elapsed = time.perf_counter() - t_start
    cpu_total = _children_cpu() - cpu_before
    stats = server.stats()
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip()[-800:]
        raise RuntimeError(f"{name} exited with {proc.returncode}; its output ends:\n{tail}")
    window = steady_window(samples, total)
    return {
        "name": name,
        "window": window,
        "elapsed_s": elapsed,
        "cpu_total_s": cpu_total,
        "requests": stats["requests"],
        "accepts": stats["accepts"] - 1,  # the polling connection is ours
        "peak_open": stats["peak_open"] - 1,
    }


# --- the three clients ------------------------------------------------------------------


def harness_toml(base_url: str, in_flight: int, repeats: int) -> str:
    """bench_http's one-turn campaign as a campaign file for ``harness run``."""
    return f"""name = "bench-peers"
seed = 1
repeats = {repeats}

[limits]
max_attempts = 1

[[models]]
name = "openai-compat:bench"
max_in_flight = {in_flight}
options = {{ base_url = "{base_url}" }}

[[relations]]
name = "biaslens.answer"
options = {{ types = ["Yes/No", "Choice"], role = "both" }}
"""


def harness_command(work: Path, base_url: str, in_flight: int, requests: int) -> list[str]:
    repeats = bench_http.harness_campaign(0, in_flight, requests)["repeats"]
    campaign = work / "campaign.toml"
    campaign.write_text(harness_toml(base_url, in_flight, repeats))
    db = work / "harness.db"
    db.unlink(missing_ok=True)
    harness = str(Path(sys.executable).parent / "harness")
    return [harness, "run", str(campaign), "--db", str(db), "--no-report"]


def write_peer_inputs(work: Path) -> int:
    """The harness's requests, read back from its log, as inspect and promptfoo datasets."""
    harness = str(Path(sys.executable).parent / "harness")
    out = _run([harness, "export", str(work / "harness.db")], check=True)
    n = 0
    with (
        (work / "inspect.jsonl").open("w") as inspect,
        (work / "promptfoo.jsonl").open("w") as promptfoo,
    ):
        for line in out.stdout.splitlines():
            case = json.loads(line)
            (turn,) = case["turns"]  # one-turn cases only
            inspect.write(json.dumps({"id": n, "messages": turn["messages"]}) + "\n")
            promptfoo.write(json.dumps({"vars": {"messages": turn["messages"]}}) + "\n")
            n += 1
    return n


def inspect_command(exe: list[str], work: Path, in_flight: int) -> list[str]:
    return [
        *exe, "eval", "inspect_task.py", "-T", f"dataset={work / 'inspect.jsonl'}",
        "--model", "openai-api/bench/bench", "--max-connections", str(in_flight),
        "--max-retries", "0", "--display", "plain", "--log-dir", str(work / "inspect-logs"),
    ]  # fmt: skip


def promptfoo_command(exe: list[str], work: Path, in_flight: int) -> list[str]:
    return [
        *exe, "eval", "-c", str(PEERS / "promptfooconfig.yaml"),
        "-t", str(work / "promptfoo.jsonl"), "-j", str(in_flight),
        "--no-cache", "--no-table", "--no-share",
    ]  # fmt: skip


# --- main -------------------------------------------------------------------------------


def report_line(r: dict[str, Any], limit: float | None, in_flight: int) -> str:
    w: Window = r["window"]
    share = f" {w.rate / limit:5.1%} of the limit;" if limit else ""
    return (
        f"{r['name']:10} {w.rate:7,.0f} req/s;{share} CPU {w.cpu_ms_per_request:5.2f} ms/request"
        f" | end to end {r['requests'] / r['elapsed_s']:5,.0f} req/s, {r['elapsed_s']:5.1f} s,"
        f" CPU {r['cpu_total_s'] * 1000 / r['requests']:5.2f} ms/request"
        f" | server saw {r['requests']:,} requests on {r['accepts']:,} TCP connections"
        f" (in flight {in_flight}, peak open {r['peak_open']:,})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.2, help="server latency, seconds")
    parser.add_argument("--requests", type=int, default=5_120, help="about this many each")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--rounds", type=int, default=1, help="take turns this often; best kept")
    parser.add_argument("--env-dir", type=Path, default=None, help="where the peers install")
    parser.add_argument("--fresh", action="store_true", help="install into a new temp dir")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and clients")
    parser.add_argument("--keep", type=Path, default=None, help="keep logs and inputs here")
    args = parser.parse_args()
    clients = args.clients.split(",")
    if unknown := set(clients) - set(CLIENTS):
        parser.error(f"--clients: unknown {sorted(unknown)}; choose from {', '.join(CLIENTS)}")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    env_dir = args.env_dir or (
        Path(tempfile.mkdtemp(prefix="bench-peers-env-"))
        if args.fresh
        else cache / "bias-harness-bench-peers"
    )
    env_dir.mkdir(parents=True, exist_ok=True)
    cores = sorted(os.sched_getaffinity(0))
    pin = not args.no_pin and len(cores) > 1
    server_core, client_core = (cores[-1], cores[0]) if pin else (None, None)
    if server_core is not None:
        os.sched_setaffinity(0, {server_core})  # this poller stays off the clients' core

    print(f"# peers benchmark, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit {_commit()}")
    print(f"# python {platform.python_version()}, {os.cpu_count()} cpus; {bench_http.uptime()}")
    print(
        f"# in_flight={args.in_flight} latency={args.latency * 1000:.0f}ms "
        f"~{args.requests} requests each; "
        + ("server pinned to the last core, clients to the first" if pin else "no pinning")
    )
    commands: dict[str, list[str]] = {}
    if "inspect_ai" in clients:
        exe, said = install_inspect(env_dir)
        print(f"# {'' if exe else 'SKIPPED: '}{said}")
        if exe:
            commands["inspect_ai"] = exe
    if "promptfoo" in clients:
        exe, said = install_promptfoo(env_dir)
        print(f"# {'' if exe else 'SKIPPED: '}{said}")
        if exe:
            commands["promptfoo"] = exe

    limit = args.in_flight / args.latency if args.latency else None
    best: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        total = 0  # requests the peers send: the harness's, once its log is read
        harness_cases = _harness_cases(args.in_flight, args.requests)
        for round_no in range(1, args.rounds + 1):
            # The harness always runs (first): the peers send the requests it sent.
            for name in ["harness", *(c for c in CLIENTS[1:] if c in commands)]:
                server = Server(args.latency, server_core)
                try:
                    if name == "harness":
                        cmd = harness_command(work, server.base_url, args.in_flight, args.requests)
                        env, cwd, expected = dict(os.environ), ROOT, harness_cases
                    elif name == "inspect_ai":
                        cmd = inspect_command(commands[name], work, args.in_flight)
                        env = {
                            **os.environ,
                            "BENCH_API_KEY": "not-needed",
                            "BENCH_BASE_URL": server.base_url,
                        }
                        cwd, expected = PEERS, total  # inspect wants a task path under its cwd
                    else:
                        cmd = promptfoo_command(commands[name], work, args.in_flight)
                        env, cwd = _promptfoo_env(env_dir, server.base_url), work
                        expected = total
                    log = work / f"{name}.log"
                    try:
                        r = measure(name, cmd, env, cwd, server, expected, client_core, log)
                    except (RuntimeError, ValueError) as exc:
                        print(f"round {round_no} {name}: FAILED: {exc}")
                        continue
                finally:
                    server.close()
                if name == "harness" and not total:
                    total = write_peer_inputs(work)
                print(f"round {round_no} " + report_line(r, limit, args.in_flight), flush=True)
                if name not in best or r["window"].rate > best[name]["window"].rate:
                    best[name] = r
    print(f"# at the end: {bench_http.uptime()}")
    fails: list[str] = []
    if "harness" in best:
        h = best["harness"]["window"]
        for peer, target in TARGETS.items():
            if peer in best:
                p = best[peer]["window"]
                ok, line = ratio_line(peer, h.rate, p.rate, target)
                cpu = p.cpu_ms_per_request / h.cpu_ms_per_request
                print(f"{line}; CPU per request {cpu:.2f}x the harness's")
                fails += [] if ok else [f"harness/{peer}"]
            elif peer in clients:
                fails.append(f"{peer} not measured")
    print("result: all targets met" if not fails else f"result: MISSED {', '.join(fails)}")


def _harness_cases(in_flight: int, requests: int) -> int:
    """One-turn cases, so requests, of bench_http's campaign for about ``requests``."""
    from harness.running.campaign import parse_campaign
    from harness.running.plan import Plan

    config = bench_http.harness_campaign(0, in_flight, requests)
    return int(Plan(parse_campaign(config, source="bench")).total_cases)


def _commit() -> str:
    out = _run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    return out.stdout.strip() or "unknown"


if __name__ == "__main__":
    main()
