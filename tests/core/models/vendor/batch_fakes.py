"""A fake of the three vendors' batch APIs on 127.0.0.1, speaking each wire protocol over
real HTTP: OpenAI's files + batches (JSONL input, output and error files), Anthropic's
message batches (JSONL results) and Gemini's batch jobs (inline requests and responses, or
a JSONL input file sent through the Files API's resumable upload and a responses file read
back through its download).

Driven by a few knobs: how many status reads a batch takes to end (``polls``; OpenAI's
batches go validating -> in_progress -> finalizing -> completed on the way), and a
``chooser`` naming each request's fate from its custom_id and position in its batch:

    ok  refusal  400  401  429  500  503  529  expire

``transient`` (the default as a process) gives a request its fault only the first time it
is run, so resends succeed. ``expire`` leaves a request unrun: its batch ends expired
(OpenAI: an error line with code ``batch_expired``; Anthropic: an ``expired`` result;
Gemini: no response), while the other requests of the batch keep their results.
``fail_batch`` makes every batch fail validation.

``enqueued_token_limit`` bounds the input tokens of one model's batches in flight (not yet
ended), as the vendors' enqueued-token rate limits do: a batch that would pass it is refused
(OpenAI: the batch is created ``failed`` with the error code ``token_limit_exceeded``;
Anthropic and Gemini: a 429 to the create call), counted in ``rejected``; ``peak_enqueued``
is the most any model had in flight.

The fake bills like a vendor: a request is billed (counted in ``billed[custom_id]``, with
its tokens) each time it is answered (a refusal too); errors and unrun requests are free,
and ``billed_twice`` in the stats names any request paid for more than once.
Everything it counts is served at ``GET /_fake/stats``, so a campaign killed and resumed in
other processes can be checked against it. Start it in a thread (``FakeBatchVendor().start()``)
or as a process: ``python batch_fakes.py --polls 3 --every 5=500 --every 7=expire`` prints
``listening on http://127.0.0.1:PORT`` and serves until it is killed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from vendor_fakes import AnthropicDialect, GeminiDialect, OpenAIDialect, _texts, _tokens

BATCH_FAULTS = ("ok", "refusal", "400", "401", "429", "500", "503", "529", "expire")
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_OPENAI_STEPS = ("validating", "in_progress", "finalizing")


def echo(text: str) -> str:
    """The reply the direct fake (vendor_fakes.FakeVendor) gives, so batch and direct
    runs of one campaign get the same answers."""
    return f"echo: {text[:200]}"


@dataclass
class FakeBatch:
    """One batch as the fake keeps it."""

    id: str
    vendor: str  # "openai", "anthropic", "google"
    requests: list[tuple[str, dict[str, Any]]]  # (custom_id, the request's body)
    created: float
    tag: str | None = None  # OpenAI metadata's harness_tag / Gemini display name
    metadata: dict[str, Any] | None = None  # OpenAI's, as given
    model: str = "fake"
    polls: int = 0
    state: str = "running"  # running, ended, expired, failed
    results: dict[str, tuple[str, dict[str, Any] | None]] = field(default_factory=dict)
    input_file_id: str = ""  # OpenAI's input file; Gemini's when its requests came in a file
    output_file_id: str | None = None
    error_file_id: str | None = None
    tokens: int = 0  # enqueued (input) tokens
    failure: str | None = None  # why a failed batch failed (OpenAI's error code)


@dataclass
class FakeBatchVendor:
    polls: int = 2  # status reads before a batch ends
    chooser: Callable[[str, int], str] | None = None  # (custom_id, index in batch) -> fault
    fail_batch: bool = False
    # A transient fault meets a request only the first time it is run: its resend in a later
    # batch is answered, so a campaign that resends what failed or expired comes to an end.
    transient: bool = False
    runs: dict[str, int] = field(default_factory=dict)  # custom_id -> times run in a batch
    reply_fn: Callable[[str], str] = echo
    batches: dict[str, FakeBatch] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)  # Gemini's, under way
    billed: dict[str, int] = field(default_factory=dict)  # custom_id -> times billed
    input_tokens: int = 0  # billed tokens
    output_tokens: int = 0
    tokens_by_model: dict[str, list[int]] = field(default_factory=dict)  # model -> [in, out]
    keys: list[str] = field(default_factory=list)  # every key presented
    status_reads: int = 0  # polls of a running batch
    enqueued_token_limit: int | None = None  # per model, over its batches in flight
    rejected: int = 0  # batches refused for that limit
    peak_enqueued: int = 0
    port: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    # --- lifecycle ------------------------------------------------------------------

    def start(self, port: int = 0) -> FakeBatchVendor:
        fake = self

        class Handler(_Handler):
            vendor = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "billed": dict(self.billed),
                "billed_requests": sum(self.billed.values()),
                "billed_twice": sorted(c for c, n in self.billed.items() if n > 1),
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "tokens_by_model": {m: list(t) for m, t in self.tokens_by_model.items()},
                "batches": len(self.batches),
                "ended": sum(b.state != "running" for b in self.batches.values()),
                "status_reads": self.status_reads,
                "requests_sent": sum(len(b.requests) for b in self.batches.values()),
                "files": len(self.files),
                "rejected": self.rejected,
                "peak_enqueued": self.peak_enqueued,
            }

    # --- the batch life cycle ---------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def add(self, batch: FakeBatch) -> FakeBatch:
        with self._lock:
            self.batches[batch.id] = batch
        return batch

    def admit(self, vendor: str, model: str, requests: list[tuple[str, dict[str, Any]]]) -> int:
        """The input tokens of a new batch of ``model``'s, or -1 when they would take the
        model's batches in flight past ``enqueued_token_limit`` (then counted as rejected)."""
        tokens = sum(
            _tokens(" ".join(_texts(body.get("messages", body.get("contents", [])))))
            for _, body in requests
        )
        with self._lock:
            flying = sum(
                b.tokens
                for b in self.batches.values()
                if b.vendor == vendor and b.model == model and b.state == "running"
            )
            limit = self.enqueued_token_limit
            if limit is not None and flying + tokens > limit:
                self.rejected += 1
                return -1
            self.peak_enqueued = max(self.peak_enqueued, flying + tokens)
        return tokens

    def poll(self, batch: FakeBatch) -> None:
        """One status read: the batch moves on, and ends after ``polls`` reads."""
        with self._lock:
            if batch.state != "running":
                return
            self.status_reads += 1
            batch.polls += 1
            if batch.polls < self.polls:
                return
            if self.fail_batch:
                batch.state = "failed"
                return
            expired = False
            for index, (custom_id, body) in enumerate(batch.requests):
                fault = self.chooser(custom_id, index) if self.chooser else "ok"
                if fault not in BATCH_FAULTS:
                    raise ValueError(f"unknown batch fault {fault!r}")
                if self.transient and self.runs.get(custom_id, 0) > 0:
                    fault = "ok"
                self.runs[custom_id] = self.runs.get(custom_id, 0) + 1
                if fault == "expire":
                    expired = True
                    continue
                batch.results[custom_id] = (fault, self._answer(batch, custom_id, body, fault))
            batch.state = "expired" if expired else "ended"

    def _answer(
        self, batch: FakeBatch, custom_id: str, body: dict[str, Any], fault: str
    ) -> dict[str, Any] | None:
        """The reply body of an answered request (billed), None for an error one."""
        if fault not in ("ok", "refusal"):
            return None
        dialect = {"openai": OpenAIDialect, "anthropic": AnthropicDialect,
                   "google": GeminiDialect}[batch.vendor]()  # fmt: skip
        n = next(self._ids)
        if fault == "refusal":
            reply = dialect.refusal(body, n)[1]
        else:
            reply = dialect.ok(body, self.reply_fn(dialect.last_user_text(body)), n)
        usage = reply.get("usage") or {}
        meta = reply.get("usageMetadata") or {}
        tokens_in = usage.get("prompt_tokens", usage.get("input_tokens", 0)) or meta.get(
            "promptTokenCount", 0
        )
        tokens_out = usage.get("completion_tokens", usage.get("output_tokens", 0)) or meta.get(
            "candidatesTokenCount", 0
        )
        self.billed[custom_id] = self.billed.get(custom_id, 0) + 1
        self.input_tokens += int(tokens_in)
        self.output_tokens += int(tokens_out)
        # OpenAI and Anthropic name the model in each request, Gemini in the batch's path.
        model = str(body.get("model") or batch.model).removeprefix("models/")
        by_model = self.tokens_by_model.setdefault(model, [0, 0])
        by_model[0] += int(tokens_in)
        by_model[1] += int(tokens_out)
        return reply


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    vendor: FakeBatchVendor

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # --- plumbing ----------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(
        self, status: int, payload: Any, content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _key(self) -> str:
        for name in ("x-api-key", "x-goog-api-key"):
            if self.headers.get(name):
                return str(self.headers[name])
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else ""

    def _authorized(self, dialect: Any) -> bool:
        """A key containing "bad" is refused, echoed back as some vendors do."""
        key = self._key()
        self.vendor.keys.append(key)
        if "bad" not in key:
            return True
        self._send(401, dialect.error(401, f"Incorrect API key provided: {key}."))
        return False

    def do_GET(self) -> None:
        self._guarded("GET", b"")

    def do_POST(self) -> None:
        self._guarded("POST", self._body())

    def _guarded(self, method: str, raw: bytes) -> None:
        try:
            self._route(method, raw)
        except Exception as exc:  # a bug of the fake shows as a 500 naming it, not a hang
            self._send(500, {"error": {"message": f"fake failed: {exc!r}"}})

    def _route(self, method: str, raw: bytes) -> None:
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        if path == "/_fake/stats":
            self._send(200, self.vendor.stats())
            return
        if re.fullmatch(r"/upload/v1(beta)?/files", path) and "upload_id" in query:
            # A resumable upload's chunks go to the URL the start call returned, without
            # the key (as the SDK sends them): the upload id is the credential.
            self._gemini_upload_chunk(query["upload_id"][0], raw)
            return
        # The vendors share paths (/v1/batches): the key's header says who is calling.
        if "x-goog-api-key" in self.headers:
            if self._authorized(GeminiDialect()):
                path = re.sub(r"^(/upload|/download)?/v1(beta)?/", r"\1/v1beta/", path)
                self._gemini(method, path, query, raw)
            return
        if "x-api-key" in self.headers or "anthropic-version" in self.headers:
            if self._authorized(AnthropicDialect()):
                self._anthropic(method, path, query, raw)
            return
        if path.startswith("/v1/"):
            if self._authorized(OpenAIDialect()):
                self._openai(method, path, query, raw)
            return
        self._send(404, {"error": {"message": f"no route {path}"}})

    # --- OpenAI: files + batches -----------------------------------------------------------

    def _openai(self, method: str, path: str, query: dict[str, list[str]], raw: bytes) -> None:
        fake = self.vendor
        if method == "POST" and path == "/v1/files":
            purpose, name, data = _multipart(self.headers.get("content-type", ""), raw)
            if purpose != "batch":
                self._send(400, OpenAIDialect().error(400, f"purpose must be batch: {purpose}"))
                return
            file_id = fake.new_id("file-")
            fake.files[file_id] = data
            self._send(200, {"id": file_id, "object": "file", "bytes": len(data),
                             "created_at": int(time.time()), "filename": name,
                             "purpose": "batch", "status": "processed"})  # fmt: skip
            return
        match = re.fullmatch(r"/v1/files/([^/]+)/content", path)
        if method == "GET" and match:
            data = fake.files.get(match.group(1))
            if data is None:
                self._send(404, OpenAIDialect().error(404, "no such file"))
            else:
                self._send(200, data, "application/octet-stream")
            return
        if method == "POST" and path == "/v1/batches":
            body = json.loads(raw)
            data = fake.files.get(body.get("input_file_id", ""))
            if data is None:
                self._send(404, OpenAIDialect().error(404, "no such input file"))
                return
            lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
            ids = [line["custom_id"] for line in lines]
            if len(set(ids)) != len(ids):
                self._send(400, OpenAIDialect().error(400, "duplicate custom_id"))
                return
            requests = [(line["custom_id"], line["body"]) for line in lines]
            model = str(lines[0]["body"].get("model", "fake")) if lines else "fake"
            tokens = fake.admit("openai", model, requests)
            batch = fake.add(FakeBatch(
                id=fake.new_id("batch_"), vendor="openai", requests=requests,
                created=time.time(), tag=(body.get("metadata") or {}).get("harness_tag"),
                input_file_id=body["input_file_id"], model=model, tokens=max(tokens, 0),
            ))  # fmt: skip
            batch.metadata = body.get("metadata")
            if tokens < 0:  # refused as OpenAI does: the batch exists, failed
                batch.state, batch.failure = "failed", "token_limit_exceeded"
            self._send(200, self._openai_batch(batch))
            return
        if method == "GET" and path == "/v1/batches":
            listed = sorted(
                (b for b in fake.batches.values() if b.vendor == "openai"),
                key=lambda b: b.id, reverse=True,
            )  # fmt: skip
            after = query.get("after", [None])[0]
            if after:
                listed = [b for b in listed if b.id < after]
            limit = int(query.get("limit", ["20"])[0])
            page = listed[:limit]
            data_out = [self._openai_batch(b) for b in page]
            self._send(200, {"object": "list", "data": data_out,
                             "first_id": page[0].id if page else None,
                             "last_id": page[-1].id if page else None,
                             "has_more": len(listed) > limit})  # fmt: skip
            return
        match = re.fullmatch(r"/v1/batches/([^/]+)", path)
        if method == "GET" and match and match.group(1) in fake.batches:
            batch = fake.batches[match.group(1)]
            fake.poll(batch)
            self._send(200, self._openai_batch(batch))
            return
        self._send(404, OpenAIDialect().error(404, f"no route {method} {path}"))

    def _openai_batch(self, batch: FakeBatch) -> dict[str, Any]:
        if batch.state == "running":
            status = _OPENAI_STEPS[min(batch.polls, len(_OPENAI_STEPS) - 1)]
        else:
            status = {"ended": "completed", "expired": "expired", "failed": "failed"}[batch.state]
            if batch.state != "failed" and batch.output_file_id is None:
                self._openai_files(batch)
        done = sum(1 for f, _ in batch.results.values() if f in ("ok", "refusal"))
        failed = len(batch.results) - done
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "errors": {"object": "list", "data": [_openai_failure(batch)]}
            if batch.state == "failed" else None,
            "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": status, "created_at": int(batch.created),
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "metadata": batch.metadata,
            "request_counts": {"total": len(batch.requests), "completed": done,
                               "failed": failed},
        }  # fmt: skip

    def _openai_files(self, batch: FakeBatch) -> None:
        fake = self.vendor
        out: list[str] = []
        errors: list[str] = []
        for custom_id, _body in batch.requests:
            if custom_id not in batch.results:
                errors.append(json.dumps({"id": fake.new_id("batch_req_"), "custom_id": custom_id,
                    "response": None, "error": {"code": "batch_expired", "message": "This "
                    "request could not be executed before the completion window expired."}},
                ))  # fmt: skip
                continue
            fault, reply = batch.results[custom_id]
            if reply is not None:
                response = {"status_code": 200, "request_id": f"req_{custom_id}", "body": reply}
                out.append(json.dumps({"id": fake.new_id("batch_req_"), "custom_id": custom_id,
                                       "response": response, "error": None}))  # fmt: skip
            else:
                status = int(fault)
                body = OpenAIDialect().error(status, f"fault {fault}")
                response = {"status_code": status, "request_id": f"req_{custom_id}", "body": body}
                errors.append(json.dumps({"id": fake.new_id("batch_req_"), "custom_id": custom_id,
                                          "response": response, "error": None}))  # fmt: skip
        if out:
            batch.output_file_id = fake.new_id("file-")
            fake.files[batch.output_file_id] = ("\n".join(out) + "\n").encode()
        if errors:
            batch.error_file_id = fake.new_id("file-")
            fake.files[batch.error_file_id] = ("\n".join(errors) + "\n").encode()

    # --- Anthropic: message batches --------------------------------------------------------

    def _anthropic(self, method: str, path: str, query: dict[str, list[str]], raw: bytes) -> None:
        fake = self.vendor
        dialect = AnthropicDialect()
        if method == "POST" and path == "/v1/messages/batches":
            requests = json.loads(raw).get("requests", [])
            ids = [r.get("custom_id", "") for r in requests]
            bad = [i for i in ids if not ANTHROPIC_ID.match(i)]
            if bad or len(set(ids)) != len(ids) or not ids:
                message = f"custom_id invalid or repeated: {bad[:1] or ids[:1]}"
                self._send(400, dialect.error(400, message))
                return
            pairs = [(r["custom_id"], r["params"]) for r in requests]
            model = str(requests[0]["params"].get("model", "fake"))
            tokens = fake.admit("anthropic", model, pairs)
            if tokens < 0:
                self._send(429, dialect.error(429, "rate_limit_error: batch tokens queued"))
                return
            batch = fake.add(FakeBatch(
                id=fake.new_id("msgbatch_"), vendor="anthropic", requests=pairs,
                created=time.time(), model=model, tokens=tokens,
            ))  # fmt: skip
            self._send(200, self._anthropic_batch(batch))
            return
        if method == "GET" and path == "/v1/messages/batches":
            listed = sorted((b for b in fake.batches.values() if b.vendor == "anthropic"),
                            key=lambda b: b.id, reverse=True)  # fmt: skip
            after = query.get("after_id", [None])[0]
            if after:
                listed = [b for b in listed if b.id < after]
            limit = int(query.get("limit", ["20"])[0])
            page = listed[:limit]
            self._send(200, {"data": [self._anthropic_batch(b) for b in page],
                             "has_more": len(listed) > limit,
                             "first_id": page[0].id if page else None,
                             "last_id": page[-1].id if page else None})  # fmt: skip
            return
        match = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results)?", path)
        if method == "GET" and match and match.group(1) in fake.batches:
            batch = fake.batches[match.group(1)]
            if match.group(2):
                if batch.state == "running":
                    self._send(400, dialect.error(400, "batch still processing"))
                    return
                self._send(200, self._anthropic_results(batch).encode(), "application/binary")
                return
            fake.poll(batch)
            self._send(200, self._anthropic_batch(batch))
            return
        self._send(404, dialect.error(404, f"no route {method} {path}"))

    def _anthropic_batch(self, batch: FakeBatch) -> dict[str, Any]:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created))
        ended = batch.state != "running"
        counts = {"processing": 0 if ended else len(batch.requests), "succeeded": 0,
                  "errored": 0, "canceled": 0, "expired": 0}  # fmt: skip
        if ended:
            for custom_id, _ in batch.requests:
                fault = batch.results.get(custom_id, ("expire", None))[0]
                key = {"ok": "succeeded", "refusal": "succeeded", "expire": "expired"}
                counts[key.get(fault, "errored")] += 1
        return {
            "id": batch.id, "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts, "created_at": stamp, "expires_at": stamp,
            "ended_at": stamp if ended else None, "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.vendor.url}/v1/messages/batches/{batch.id}/results"
            if ended else None,
        }  # fmt: skip

    def _anthropic_results(self, batch: FakeBatch) -> str:
        kinds = {400: "invalid_request_error", 401: "authentication_error",
                 429: "rate_limit_error", 500: "api_error", 503: "api_error",
                 529: "overloaded_error"}  # fmt: skip
        lines = []
        for custom_id, _ in batch.requests:
            fault, reply = batch.results.get(custom_id, ("expire", None))
            if fault == "expire":
                result: dict[str, Any] = {"type": "expired"}
            elif reply is not None:
                result = {"type": "succeeded", "message": reply}
            else:
                kind = kinds.get(int(fault), "api_error")
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": kind, "message": f"fault {fault}"}}}  # fmt: skip
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        return "\n".join(lines) + "\n"

    # --- Gemini: batch jobs -------------------------------------------------------------

    _RPC: dict[int, int] = {400: 3, 401: 16, 429: 8, 500: 13, 503: 14, 529: 14}  # noqa: RUF012

    def _gemini_upload_chunk(self, upload_id: str, raw: bytes) -> None:
        fake = self.vendor
        with fake._lock:
            pending = fake.uploads.get(upload_id)
            if pending is None:
                self._send(404, GeminiDialect().error(404, "no such upload"))
                return
            pending["data"] += raw
            command = self.headers.get("x-goog-upload-command", "")
            if "finalize" not in command:
                self._send(200, b"", headers={"x-goog-upload-status": "active"})
                return
            del fake.uploads[upload_id]
            name = pending["name"]
            fake.files[name] = bytes(pending["data"])
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._send(200, {"file": {
            "name": name, "displayName": pending["display"], "mimeType": pending["mime"],
            "sizeBytes": str(len(fake.files[name])), "createTime": stamp, "state": "ACTIVE",
            "source": "UPLOADED",
        }}, headers={"x-goog-upload-status": "final"})  # fmt: skip

    def _gemini(self, method: str, path: str, query: dict[str, list[str]], raw: bytes) -> None:
        fake = self.vendor
        dialect = GeminiDialect()
        if method == "POST" and path == "/upload/v1beta/files":
            if "start" not in self.headers.get("x-goog-upload-command", ""):
                self._send(400, dialect.error(400, "expected a resumable upload start"))
                return
            described = (json.loads(raw) if raw else {}).get("file", {})
            upload_id = fake.new_id("up")
            fake.uploads[upload_id] = {
                "name": fake.new_id("files/in-"), "data": bytearray(),
                "display": described.get("displayName"), "mime": described.get("mimeType"),
            }  # fmt: skip
            location = f"{fake.url}/upload/v1beta/files?upload_id={upload_id}"
            self._send(200, {}, headers={"x-goog-upload-url": location,
                                         "x-goog-upload-status": "active"})  # fmt: skip
            return
        match = re.fullmatch(r"/v1beta/(files/[^/:]+):download", path)
        if method == "GET" and match:
            data = fake.files.get(match.group(1))
            if data is None:
                self._send(404, dialect.error(404, "no such file"))
            else:
                self._send(200, data, "application/octet-stream")
            return
        match = re.fullmatch(r"/v1beta/models/([^/:]+):batchGenerateContent", path)
        if method == "POST" and match:
            batch_body = json.loads(raw).get("batch", {})
            source = batch_body.get("inputConfig", {})
            file_name = source.get("fileName")
            if file_name is not None:
                data = fake.files.get(file_name)
                if data is None:
                    self._send(404, dialect.error(404, f"no such input file {file_name}"))
                    return
                lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
                pairs = [(str(line.get("key", i)), line.get("request", {}))
                         for i, line in enumerate(lines)]  # fmt: skip
            else:
                requests = source.get("requests", {}).get("requests", [])
                pairs = [((r.get("metadata") or {}).get("key", str(i)), r.get("request", {}))
                         for i, r in enumerate(requests)]  # fmt: skip
            model = f"models/{match.group(1)}"
            tokens = fake.admit("google", model, pairs)
            if tokens < 0:
                self._send(429, dialect.error(429, "RESOURCE_EXHAUSTED: enqueued tokens"))
                return
            batch = fake.add(FakeBatch(
                id=fake.new_id("batches/"), vendor="google", created=time.time(),
                requests=pairs, tag=batch_body.get("displayName"), model=model, tokens=tokens,
                input_file_id=file_name or "",
            ))  # fmt: skip
            self._send(200, self._gemini_job(batch))
            return
        if method == "GET" and path == "/v1beta/batches":
            listed = sorted((b for b in fake.batches.values() if b.vendor == "google"),
                            key=lambda b: b.id, reverse=True)  # fmt: skip
            size = int(query.get("pageSize", ["50"])[0])
            start = int(query.get("pageToken", ["0"])[0])
            page = listed[start : start + size]
            body: dict[str, Any] = {"operations": [self._gemini_job(b) for b in page]}
            if start + size < len(listed):
                body["nextPageToken"] = str(start + size)
            self._send(200, body)
            return
        match = re.fullmatch(r"/v1beta/(batches/[^/]+)", path)
        if method == "GET" and match and match.group(1) in fake.batches:
            batch = fake.batches[match.group(1)]
            fake.poll(batch)
            self._send(200, self._gemini_job(batch))
            return
        self._send(404, dialect.error(404, f"no route {method} {path}"))

    def _gemini_job(self, batch: FakeBatch) -> dict[str, Any]:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created))
        state = {"running": "BATCH_STATE_RUNNING" if batch.polls else "BATCH_STATE_PENDING",
                 "ended": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED",
                 "failed": "BATCH_STATE_FAILED"}[batch.state]  # fmt: skip
        metadata: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "name": batch.id, "displayName": batch.tag, "model": batch.model,
            "state": state, "createTime": stamp, "updateTime": stamp,
        }  # fmt: skip
        if batch.state in ("ended", "expired"):
            responses = []
            for custom_id, _ in batch.requests:
                if custom_id not in batch.results:
                    continue
                fault, reply = batch.results[custom_id]
                item: dict[str, Any]
                if reply is not None:
                    item = {"response": reply}
                else:
                    status = int(fault)
                    item = {"error": {"code": self._RPC.get(status, 13),
                                      "message": f"fault {fault}"}}  # fmt: skip
                responses.append((custom_id, item))
            metadata["endTime"] = stamp
            if batch.input_file_id:  # requests came in a file: responses go in one
                if batch.output_file_id is None:
                    batch.output_file_id = self.vendor.new_id("files/out-")
                    lines = [json.dumps({"key": k, **item}) for k, item in responses]
                    self.vendor.files[batch.output_file_id] = ("\n".join(lines) + "\n").encode()
                metadata["output"] = {"responsesFile": batch.output_file_id}
            else:
                metadata["output"] = {"inlinedResponses": {"inlinedResponses": [
                    {**item, "metadata": {"key": k}} for k, item in responses]}}  # fmt: skip
        return {"name": batch.id, "metadata": metadata, "done": batch.state != "running"}


def _openai_failure(batch: FakeBatch) -> dict[str, Any]:
    if batch.failure == "token_limit_exceeded":
        return {"code": "token_limit_exceeded", "message": f"Enqueued token limit reached for "
                f"{batch.model}: wait for your in-progress batches to complete"}  # fmt: skip
    return {"code": "invalid", "message": "the input file failed validation"}


def _multipart(content_type: str, raw: bytes) -> tuple[str, str, bytes]:
    """(purpose, file name, file bytes) of a files.create upload."""
    message = BytesParser(policy=HTTP).parsebytes(
        f"content-type: {content_type}\r\n\r\n".encode() + raw
    )
    purpose, name, data = "", "", b""
    for part in message.iter_parts():
        field_name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if field_name == "purpose":
            purpose = payload.decode()
        elif field_name == "file":
            name = str(part.get_filename() or "")
            data = payload
    return purpose, name, data


def _every_chooser(rules: list[tuple[int, str]]) -> Callable[[str, int], str] | None:
    """``--every K=FAULT``: the K-th, 2K-th, ... request (by a stable hash of its custom_id,
    so a resent request meets the same fate in every batch) gets FAULT."""
    if not rules:
        return None

    def choose(custom_id: str, _index: int) -> str:
        number = int.from_bytes(custom_id.encode()[-8:].rjust(8, b"\0"), "big")
        for every, fault in rules:
            if number % every == 0:
                return fault
        return "ok"

    return choose


def main() -> None:
    parser = argparse.ArgumentParser(description="fake vendor batch APIs on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--polls", type=int, default=2)
    parser.add_argument("--every", action="append", default=[], metavar="K=FAULT")
    parser.add_argument(
        "--permanent", action="store_true", help="a request meets its fault every time it is run"
    )
    args = parser.parse_args()
    rules = []
    for rule in args.every:
        every, _, fault = rule.partition("=")
        if fault not in BATCH_FAULTS:
            parser.error(f"unknown fault {fault!r} (one of {', '.join(BATCH_FAULTS)})")
        rules.append((int(every), fault))
    fake = FakeBatchVendor(
        polls=args.polls, chooser=_every_chooser(rules), transient=not args.permanent
    ).start(args.port)
    print(f"listening on {fake.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
