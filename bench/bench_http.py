"""HTTP benchmark: the harness against the bare ``openai`` SDK over loopback, one process.

    python bench/bench_http.py                 # 256 in flight, 200 ms, ~5,000 requests each
    python bench/bench_http.py --quick         # fewer requests
    python bench/bench_http.py --rounds 9      # more rounds: a narrower range of the ratios
    python bench/bench_http.py --latency 0     # CPU-bound: what each client costs per request

A fake OpenAI-compatible server (raw asyncio, in its own process) answers every chat
completion after ``--latency`` seconds and counts the TCP connections it accepts. Four
clients run one after the other against a fresh server, each in its own process:

- ``raw``: a bare asyncio HTTP/1.1 loop, one keep-alive connection per worker: the ceiling
  this machine reaches (the limit by Little's law is in_flight / latency);
- ``sdk``: the bare ``openai.AsyncOpenAI`` loop, N workers calling ``chat.completions.create``;
- ``sharded``: the same loop over the SDK clients the harness builds for a model
  (``stainless_pool``: one client per 32 connections, each call leasing the least busy), so
  the harness is also measured against the SDK used as the harness uses it;
- ``harness``: a campaign of one-turn cases (``biaslens.answer``, Yes/No and Choice) on
  ``openai-compat``, with the event log, the gates and the progress bar of ``harness run``.

On a machine with at least two cores the server is pinned to the last core and the clients
to the first (``--no-pin`` to leave scheduling to the OS), so a client never shares its core
with the server.

The clients take turns in rounds, in alternating order (``sdk, sharded, harness`` then
``harness, sharded, sdk``), each round against fresh servers. A ratio is computed within a
round (the harness against the clients measured next to it) and reported as the median and
the range over the rounds: a burst of other work on a shared machine moves the range, not a
client's "best round".
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import io
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REPLY = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1,
    "model": "bench",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Yes"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
}


# --- the fake server ------------------------------------------------------------------


class _Stats:
    accepts = 0
    requests = 0
    open_now = 0
    peak_open = 0


class _Http(asyncio.Protocol):
    """Keep-alive HTTP/1.1 with Content-Length bodies: all the OpenAI SDK sends."""

    def __init__(self, stats: _Stats, latency: float, body: bytes) -> None:
        self.stats, self.latency, self.body = stats, latency, body
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.stats.accepts += 1
        self.stats.open_now += 1
        self.stats.peak_open = max(self.stats.peak_open, self.stats.open_now)

    def connection_lost(self, exc: Exception | None) -> None:
        self.stats.open_now -= 1

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length :]
            path = head.split(" ", 2)[1]
            if path.startswith("/stats"):
                s = self.stats
                self._send(
                    json.dumps(
                        {"accepts": s.accepts, "requests": s.requests, "peak_open": s.peak_open}
                    ).encode()
                )
                continue
            self.stats.requests += 1
            if self.latency:
                asyncio.get_running_loop().call_later(self.latency, self._send, self.body)
            else:
                self._send(self.body)

    def _send(self, body: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nx-request-id: req-1\r\n\r\n"
        )
        self.transport.write(head.encode("latin-1") + body)


def serve(latency: float) -> None:
    async def main() -> None:
        stats = _Stats()
        body = json.dumps(REPLY).encode()
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: _Http(stats, latency, body), "127.0.0.1", 0, backlog=4096
        )
        print(server.sockets[0].getsockname()[1], flush=True)
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes stdin

    asyncio.run(main())


def server_stats(port: int) -> dict[str, int]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/stats")
    data: dict[str, int] = json.loads(conn.getresponse().read())
    conn.close()
    return data


# --- the clients ------------------------------------------------------------------------


class Meter:
    """Wall and CPU time (every thread of the process) of the measured part of a client:
    imports and set-up happen before ``start``."""

    def start(self) -> None:
        self.t0, self.cpu0 = time.perf_counter(), _cpu()

    def stop(self) -> None:
        self.elapsed, self.cpu = time.perf_counter() - self.t0, _cpu() - self.cpu0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def raw_client(port: int, in_flight: int, total: int, meter: Meter) -> int:
    body = json.dumps(
        {"model": "bench", "messages": [{"role": "user", "content": "Is it? Yes or No."}]}
    ).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body
    done = 0

    async def worker() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while done + in_flight <= total:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            json.loads(await reader.readexactly(length))
            done += 1
        writer.close()

    meter.start()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    meter.stop()
    return done


async def sdk_client(port: int, in_flight: int, total: int, meter: Meter) -> int:
    import openai

    client = openai.AsyncOpenAI(
        api_key="not-needed", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0
    )
    started = 0

    async def worker(i: int) -> None:
        nonlocal started
        while started < total:
            started += 1
            await client.chat.completions.create(
                model="bench",
                messages=[{"role": "user", "content": f"Question {started}? Yes or No."}],
                max_tokens=8,
                seed=started,
            )

    meter.start()
    await asyncio.gather(*(worker(i) for i in range(in_flight)))
    meter.stop()
    await client.close()
    return started


async def sharded_client(port: int, in_flight: int, total: int, meter: Meter) -> int:
    import openai

    from harness.models.providers._pool import stainless_pool

    pool = stainless_pool(
        openai.AsyncOpenAI,
        openai.DefaultAsyncHttpxClient,
        key="not-needed",
        base_url=f"http://127.0.0.1:{port}/v1",
        timeout=None,
        max_in_flight=in_flight,
    )
    started = 0

    async def worker(i: int) -> None:
        nonlocal started
        while started < total:
            started += 1
            with pool.lease() as client:
                await client.chat.completions.create(
                    model="bench",
                    messages=[{"role": "user", "content": f"Question {started}? Yes or No."}],
                    max_tokens=8,
                    seed=started,
                )

    meter.start()
    await asyncio.gather(*(worker(i) for i in range(in_flight)))
    meter.stop()
    for client in pool.clients:
        await client.close()
    return started


def harness_campaign(port: int, in_flight: int, total: int) -> dict[str, Any]:
    from harness.running.campaign import parse_campaign

    def config(repeats: int) -> Any:
        return parse_campaign(
            {
                "name": "bench-http",
                "seed": 1,
                "repeats": repeats,
                "models": [
                    {
                        "name": "openai-compat:bench",
                        "max_in_flight": in_flight,
                        "options": {"base_url": f"http://127.0.0.1:{port}/v1"},
                    }
                ],
                "relations": [
                    {
                        "name": "biaslens.answer",
                        "options": {"types": ["Yes/No", "Choice"], "role": "both"},
                    }
                ],
            },
            source="bench",
        )

    from harness.running.plan import Plan

    per_repeat = Plan(config(1)).total_cases
    return config(max(1, round(total / per_repeat))).resolved()


async def harness_client(port: int, in_flight: int, total: int, db: Path, meter: Meter) -> int:
    from rich.console import Console

    from harness.cli.progress import RichProgress
    from harness.models.providers import _openai  # noqa: F401  (the SDK import is set-up)
    from harness.running.campaign import parse_campaign
    from harness.running.plan import Plan
    from harness.running.runner import run_campaign

    config = parse_campaign(harness_campaign(port, in_flight, total), source="bench")
    plan = Plan(config)
    # The progress bar of `harness run`, drawn as on a terminal (into a buffer).
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    meter.start()
    with RichProgress(plan.total_cases, console=console) as progress:
        summary = await run_campaign(config, db, progress=progress, plan=plan)
    meter.stop()
    return summary.calls


def client(args: argparse.Namespace) -> None:
    """One measurement in this process; prints a JSON line."""
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    import openai  # noqa: F401  (imports are set-up, not measured)

    meter = Meter()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        if args.client == "raw":
            run = raw_client(args.port, args.in_flight, args.requests, meter)
        elif args.client == "sdk":
            run = sdk_client(args.port, args.in_flight, args.requests, meter)
        elif args.client == "sharded":
            run = sharded_client(args.port, args.in_flight, args.requests, meter)
        else:
            run = harness_client(args.port, args.in_flight, args.requests, db, meter)
        done = asyncio.run(run)
    print(json.dumps({"requests": done, "elapsed_s": meter.elapsed, "cpu_s": meter.cpu}))


def measure(name: str, in_flight: int, latency: float, requests: int, pin: bool) -> dict[str, Any]:
    cores = sorted(os.sched_getaffinity(0))
    server_core = cores[-1] if pin and len(cores) > 1 else None
    client_core = cores[0] if pin and len(cores) > 1 else None
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", f"--latency={latency}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        if server_core is not None:
            os.sched_setaffinity(server.pid, {server_core})
        assert server.stdout is not None
        port = int(server.stdout.readline())
        cmd = [
            sys.executable,
            __file__,
            f"--client={name}",
            f"--port={port}",
            f"--in-flight={in_flight}",
            f"--requests={requests}",
        ]
        if client_core is not None:
            cmd.append(f"--pin={client_core}")
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
        result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        result.update(server_stats(port))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
    result["name"] = name
    return result


def paired(ratios: list[float]) -> str:
    """Median and range of per-round ratios."""
    return f"median {statistics.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f}x)"


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="about 2,000 requests a client")
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.2, help="server latency, seconds")
    parser.add_argument("--requests", type=int, default=0, help="requests per client")
    parser.add_argument("--clients", default="raw,sdk,sharded,harness")
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds of every client, in alternating order"
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and client")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--pin", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    if args.client:
        client(args)
        return
    requests = args.requests or (2_048 if args.quick else 5_120)
    pin = not args.no_pin and len(os.sched_getaffinity(0)) > 1
    print(f"# HTTP benchmark, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    print(f"# python {platform.python_version()}, {os.cpu_count()} cpus; {uptime()}")
    print(
        f"# in_flight={args.in_flight} latency={args.latency * 1000:.0f}ms "
        f"requests/client={requests} rounds={args.rounds}; "
        + ("server pinned to the last core, clients to the first" if pin else "no pinning")
    )
    limit = args.in_flight / args.latency if args.latency else None
    names = args.clients.split(",")
    rounds: list[dict[str, dict[str, Any]]] = []
    for round_no in range(1, args.rounds + 1):
        # Alternating order: a client measured first in one round is measured last in the
        # next, so a slow drift of the machine's load does not favour one of them.
        order = names if round_no % 2 else names[::-1]
        results: dict[str, dict[str, Any]] = {}
        for name in order:
            r = measure(name, args.in_flight, args.latency, requests, pin)
            rate = r["requests"] / r["elapsed_s"]
            r["rate"] = rate
            r["cpu_ms"] = r["cpu_s"] * 1000 / r["requests"]
            ratio = f" {rate / limit:.1%} of the limit {limit:,.0f}/s;" if limit else ""
            print(
                f"round {round_no} {name:8} {rate:8,.0f} req/s;{ratio} CPU "
                f"{r['cpu_ms']:.2f} ms/request; {r['requests']:,} "
                f"requests in {r['elapsed_s']:.1f}s; TCP connections accepted "
                f"{r['accepts']:,} (in flight {args.in_flight}, peak open {r['peak_open']:,})"
            )
            results[name] = r
        rounds.append(results)
    fails = []
    if "harness" in names:
        for base in ("sdk", "sharded"):
            if base not in names:
                continue
            rate = [r["harness"]["rate"] / r[base]["rate"] for r in rounds]
            cpu = [r["harness"]["cpu_ms"] / r[base]["cpu_ms"] for r in rounds]
            print(
                f"harness/{base} paired over {len(rounds)} rounds: requests/s "
                f"{paired(rate)}; CPU per request {paired(cpu)}"
            )
        if "sdk" in names:
            ratio = statistics.median(r["harness"]["rate"] / r["sdk"]["rate"] for r in rounds)
            ok = ratio >= 0.9
            fails += [] if ok else ["harness/sdk requests/s"]
            print(
                f"harness/sdk requests/s, median of the rounds: {ratio:.2f}x "
                f"(target >= 0.90x) [{'ok' if ok else 'MISSED'}]"
            )
        accepts = max(r["harness"]["accepts"] for r in rounds)
        ok = accepts <= args.in_flight * 1.1
        fails += [] if ok else ["TCP connections"]
        print(
            f"harness TCP connections, most of any round: {accepts:,} <= "
            f"{args.in_flight * 1.1:,.0f} (in flight + 10%) [{'ok' if ok else 'MISSED'}]"
        )
    print(f"# at the end: {uptime()}")
    print("result: all targets met" if not fails else f"result: MISSED {', '.join(fails)}")


if __name__ == "__main__":
    main()
