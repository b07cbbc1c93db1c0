"""Fake vendor servers on 127.0.0.1 speaking the OpenAI, Anthropic and Gemini wire protocols.

A deliberately small HTTP/1.1 server on raw asyncio streams (in its own thread and event
loop) rather than an ASGI app: fault injection needs control below HTTP, e.g. a TCP reset
in the middle of a request, a body that is not JSON, or a reply that never comes.

Faults are named strings, taken from ``script`` (one per request, in order) and then from
``chooser`` (a function of the request number), else "ok":

    ok  429  429-ms  429-reset  429-date  500  503  529  401  403  400  404
    slow  reset  malformed  empty  refusal
    hang  trickle  sse  html  200-error  huge  nul  surrogate  deep

The last row is the fault suite's (tests/core/models/vendor/test_vendor_faults.py): a reply
that never comes, one trickled a byte at a time, server-sent events or an HTML page where
JSON belongs, a 200 whose body is the vendor's error ("model overloaded"), a reply of
``huge_chars`` characters, a reply holding NUL or a lone surrogate (legal JSON escapes),
and a body nested deeper than any JSON parser's recursion.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import socket
import struct
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

FAULTS = (
    "ok",
    "429",
    "429-ms",
    "429-reset",
    "429-date",
    "500",
    "503",
    "529",
    "401",
    "403",
    "400",
    "404",
    "slow",
    "reset",
    "malformed",
    "empty",
    "refusal",
    "hang",
    "trickle",
    "sse",
    "html",
    "200-error",
    "huge",
    "nul",
    "surrogate",
    "deep",
)

OVERLOADED = "model overloaded"  # the vendor's own message in a 200 with an error body


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    fault: str
    at: float


def schema_instance(schema: dict[str, Any]) -> Any:
    """The simplest value a JSON schema allows (the first enum value, one array item)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: schema_instance(props[k]) for k in schema.get("required", props)}
    if kind == "array":
        return [schema_instance(schema.get("items", {"type": "string"}))]
    return {"integer": 1, "number": 1.0, "boolean": True}.get(str(kind), "x")


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


def _texts(value: Any) -> list[str]:
    """Every string under a JSON value (prompt text, wherever a protocol puts it)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


class Dialect(ABC):
    """How one vendor spells replies and errors."""

    @abstractmethod
    def last_user_text(self, body: dict[str, Any]) -> str:
        """The text of the last user message of a request."""

    @abstractmethod
    def ok(self, body: dict[str, Any], text: str, n: int) -> dict[str, Any]:
        """A successful reply carrying text."""

    @abstractmethod
    def empty(self, n: int) -> dict[str, Any]:
        """A reply with no choices or candidates."""

    @abstractmethod
    def refusal(self, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        """A content-filter refusal."""

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "error", "code": str(status)}}

    def reset_headers(self) -> dict[str, str]:
        return {}

    def retry_info(self) -> dict[str, Any] | None:
        return None


class OpenAIDialect(Dialect):
    def last_user_text(self, body: dict[str, Any]) -> str:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        return str(users[-1]["content"]) if users else ""

    def ok(self, body: dict[str, Any], text: str, n: int) -> dict[str, Any]:
        prompt = _tokens(" ".join(_texts(body.get("messages", []))))
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": _tokens(text),
                "total_tokens": prompt + _tokens(text),
            },
        }

    def empty(self, n: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": "fake",
            "choices": [],
        }

    def refusal(self, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        reply = self.ok(body, "", n)
        reply["choices"][0]["finish_reason"] = "content_filter"
        return 200, reply

    def reset_headers(self) -> dict[str, str]:
        return {"x-ratelimit-reset-requests": "1.5s", "x-ratelimit-reset-tokens": "350ms"}


class AnthropicDialect(Dialect):
    def last_user_text(self, body: dict[str, Any]) -> str:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        if not users:
            return ""
        content = users[-1]["content"]
        return content if isinstance(content, str) else " ".join(_texts(content))

    def ok(self, body: dict[str, Any], text: str, n: int) -> dict[str, Any]:
        texts = _texts(body.get("messages", [])) + _texts(body.get("system", ""))
        prompt = _tokens(" ".join(texts))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        forced = (body.get("tool_choice") or {}).get("name")
        tools = {t["name"]: t for t in body.get("tools") or []}
        if forced in tools:  # a forced tool call answers with an instance of its schema
            schema = tools[forced]["input_schema"]
            content = [{"type": "tool_use", "id": f"toolu_{n}", "name": forced,
                        "input": schema_instance(schema)}]  # fmt: skip
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": "tool_use" if forced in tools else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": _tokens(text)},
        }

    def empty(self, n: int) -> dict[str, Any]:
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "fake",
            "content": None,
            "stop_reason": None,
            "usage": {"input_tokens": 1, "output_tokens": 0},
        }

    def refusal(self, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        reply = self.ok(body, "", n)
        reply["content"] = []
        reply["stop_reason"] = "refusal"
        return 200, reply

    def error(self, status: int, message: str) -> dict[str, Any]:
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        kind = kinds.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def reset_headers(self) -> dict[str, str]:
        at = time.time() + 2.0
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d}Z"
        return {"anthropic-ratelimit-requests-reset": stamp}


class GeminiDialect(Dialect):
    _STATUS: ClassVar[dict[int, str]] = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }

    def last_user_text(self, body: dict[str, Any]) -> str:
        users = [c for c in body.get("contents", []) if c.get("role", "user") == "user"]
        return " ".join(_texts(users[-1].get("parts", []))) if users else ""

    def ok(self, body: dict[str, Any], text: str, n: int) -> dict[str, Any]:
        prompt = _tokens(" ".join(_texts(body.get("contents", []))))
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": _tokens(text),
                "totalTokenCount": prompt + _tokens(text),
            },
            "modelVersion": "fake",
            "responseId": f"resp-{n}",
        }

    def empty(self, n: int) -> dict[str, Any]:
        return {"candidates": [], "responseId": f"resp-{n}"}

    def refusal(self, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        return 200, {
            "promptFeedback": {"blockReason": "SAFETY"},
            "responseId": f"resp-{n}",
            "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3},
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {
            "error": {
                "code": status,
                "message": message,
                "status": self._STATUS.get(status, "UNKNOWN"),
            }
        }

    def retry_info(self) -> dict[str, Any] | None:
        return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.25s"}


def _dialect_for(path: str) -> Dialect | None:
    if path.endswith("/chat/completions"):
        return OpenAIDialect()
    if path.endswith("/v1/messages"):
        return AnthropicDialect()
    if ":generateContent" in path:
        return GeminiDialect()
    return None


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass
class FakeVendor:
    """One server for all three dialects; the request path picks the dialect."""

    slow_s: float = 5.0
    retry_after_s: float = 1.0
    retry_after_ms: int = 250
    max_in_flight: int | None = None  # above it: 429 with retry-after-ms (a throttling vendor)
    throttle_retry_ms: int = 50
    latency_s: float = 0.0
    trickle_s: float = 0.05  # between two bytes of a trickled reply
    huge_chars: int = 2_000_000
    chooser: Callable[[int], str] | None = None
    reply_fn: Callable[[str], str] = field(default=lambda text: f"echo: {text[:200]}")
    script: deque[str] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    port: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    connections: int = 0  # TCP connections accepted

    # --- lifecycle (the server runs in its own thread and loop) -------------------------

    def start(self) -> FakeVendor:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake vendor did not start")
        return self

    def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        self._handlers: set[asyncio.Task[None]] = set()

        async def main() -> None:
            self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            self._stopped = asyncio.Event()
            ready.set()
            await self._stopped.wait()
            self._server.close()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)

        self._loop.run_until_complete(main())
        self._loop.close()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *faults: str) -> None:
        for fault in faults:
            if fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r}")
        self.script.extend(faults)

    def reset_log(self) -> None:
        self.requests.clear()
        self.script.clear()
        self.peak_in_flight = 0

    # --- HTTP ----------------------------------------------------------------------

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self.connections += 1
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    break
                keep = await self._respond(writer, *request)
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._handlers.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _read_request(
        self, reader: asyncio.StreamReader
    ) -> tuple[str, dict[str, str], bytes] | None:
        line = await reader.readline()
        if not line:
            return None
        _method, target, _version = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b""
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int((await reader.readline()).strip(), 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        return target, headers, body

    def _next_fault(self, n: int) -> str:
        if self.script:
            return self.script.popleft()
        if self.chooser is not None:
            return self.chooser(n)
        return "ok"

    async def _respond(
        self, writer: asyncio.StreamWriter, target: str, headers: dict[str, str], raw: bytes
    ) -> bool:
        n = len(self.requests)
        path = urlsplit(target).path
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            throttled = self.max_in_flight is not None and self.in_flight > self.max_in_flight
            fault = "throttled" if throttled else self._next_fault(n)
            self.requests.append(RecordedRequest(path, headers, body, fault, time.monotonic()))
            dialect = _dialect_for(path)
            if dialect is None:
                await self._send(writer, 404, {"error": {"message": f"no route {path}"}})
                return True
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            return await self._fault(writer, dialect, fault, body, headers, target, n)
        finally:
            self.in_flight -= 1

    async def _fault(
        self,
        writer: asyncio.StreamWriter,
        dialect: Dialect,
        fault: str,
        body: dict[str, Any],
        headers: dict[str, str],
        target: str,
        n: int,
    ) -> bool:
        if fault == "throttled":
            await self._send(
                writer,
                429,
                dialect.error(429, "too many requests in flight"),
                {"retry-after-ms": str(self.throttle_retry_ms)},
            )
            return True
        if fault == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if fault == "slow":
            await asyncio.sleep(self.slow_s)
            fault = "ok"
        if fault == "hang":
            await asyncio.sleep(3600)  # cancelled when the client gives up or the server stops
            return False
        if fault in ("huge", "nul", "surrogate", "trickle"):
            text = self.reply_fn(dialect.last_user_text(body))
            text = {
                "huge": text + " " + "x" * self.huge_chars,
                "nul": text + " \u0000 after a NUL",
                "surrogate": text + " \ud800 a lone surrogate",
                "trickle": text,
            }[fault]
            if fault != "trickle":
                await self._send(writer, 200, dialect.ok(body, text, n))
                return True
            data = json.dumps(dialect.ok(body, text, n)).encode()
            head = (
                f"HTTP/1.1 200 OK\r\ncontent-length: {len(data)}\r\n"
                "content-type: application/json\r\nconnection: keep-alive\r\n\r\n"
            )
            writer.write(head.encode("latin-1"))
            for i in range(len(data)):
                writer.write(data[i : i + 1])
                await writer.drain()
                await asyncio.sleep(self.trickle_s)
            return True
        if fault == "sse":
            event = json.dumps(dialect.ok(body, "streamed", n))
            data = f"data: {event}\n\ndata: [DONE]\n\n".encode()
            await self._send_raw(writer, 200, data, {"content-type": "text/event-stream"})
            return True
        if fault == "html":
            page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
            await self._send_raw(writer, 200, page, {"content-type": "text/html"})
            return True
        if fault == "200-error":
            await self._send(writer, 200, dialect.error(503, OVERLOADED))
            return True
        if fault == "deep":
            depth = 200_000
            data = b'{"choices": ' + b"[" * depth + b"]" * depth + b"}"
            await self._send_raw(writer, 200, data, {"content-type": "application/json"})
            return True
        if fault == "ok":
            text = self.reply_fn(dialect.last_user_text(body))
            await self._send(
                writer,
                200,
                dialect.ok(body, text, n),
                {"x-request-id": f"req-{n}", "request-id": f"req-{n}"},
            )
            return True
        if fault == "malformed":
            await self._send_raw(
                writer,
                200,
                b'{"id": "broken", "choices": [{"message": ',
                {"content-type": "application/json"},
            )
            return True
        if fault == "empty":
            await self._send(writer, 200, dialect.empty(n))
            return True
        if fault == "refusal":
            status, payload = dialect.refusal(body, n)
            await self._send(writer, status, payload)
            return True
        if fault == "401":
            key = _presented_key(headers, target)
            await self._send(writer, 401, dialect.error(401, f"Incorrect API key provided: {key}."))
            return True
        status = int(fault.split("-")[0])
        extra: dict[str, str] = {}
        payload = dialect.error(status, f"fault {fault}")
        if fault == "429":
            extra["retry-after"] = f"{self.retry_after_s:g}"
        elif fault == "429-ms":
            extra["retry-after-ms"] = str(self.retry_after_ms)
        elif fault == "429-date":
            extra["retry-after"] = email.utils.formatdate(time.time() + 3, usegmt=True)
        elif fault == "429-reset":
            extra.update(dialect.reset_headers())
            info = dialect.retry_info()
            if info is not None:
                payload["error"]["details"] = [info]
        await self._send(writer, status, payload, extra)
        return True

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: dict[str, Any],
        extra: dict[str, str] | None = None,
    ) -> None:
        headers = {"content-type": "application/json", **(extra or {})}
        await self._send_raw(writer, status, json.dumps(payload).encode(), headers)

    async def _send_raw(
        self, writer: asyncio.StreamWriter, status: int, data: bytes, headers: dict[str, str]
    ) -> None:
        head = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"content-length: {len(data)}",
            "connection: keep-alive",
        ]
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()


def _presented_key(headers: dict[str, str], target: str) -> str:
    for name in ("x-api-key", "x-goog-api-key"):
        if name in headers:
            return headers[name]
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:]
    return parse_qs(urlsplit(target).query).get("key", [""])[0]
