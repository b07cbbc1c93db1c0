"""Translation of vendor SDK exceptions into the harness error taxonomy.

Every adapter funnels whatever its SDK raises through `translate` (or one of the vendor
helpers) so the engine only ever sees `harness.vocabulary.errors.ModelError` subclasses. The vendor
message is redacted here, with the adapter's own key added to the redaction list, because
some vendors echo the presented key in 401 bodies.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import httpx2

from harness.vocabulary.errors import (
    AuthenticationError,
    BadRequestError,
    ConnectionFailedError,
    ContentRefusedError,
    MalformedResponseError,
    ModelError,
    ModelTimeoutError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    redact,
)

ErrorClass = type[ModelError]

_BY_STATUS: dict[int, ErrorClass] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: ModelTimeoutError,
    413: BadRequestError,
    422: BadRequestError,
    429: RateLimitedError,
    503: OverloadedError,
    529: OverloadedError,
}

# A reply to wait for longer than this is treated as absent: it is a parse error, not advice.
_MAX_SENSIBLE_WAIT_S = 24 * 3600.0
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def class_for_status(status: int) -> ErrorClass:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return BadRequestError


def _go_duration(text: str) -> float | None:
    """'1.5s', '6m0s', '20ms', '1h2m' (OpenAI reset headers, Gemini retryDelay) to seconds."""
    text = text.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def _seconds_until(stamp: str, now: float) -> float | None:
    """An RFC 3339 timestamp (Anthropic reset headers) or HTTP date, as seconds from now."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(stamp) if "," in stamp else None
        if parsed is None:
            return None
        when = parsed.timestamp()
    return max(0.0, when - now)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN is not a wait


_RESET_HEADERS = (
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
)


def retry_after_from_headers(
    headers: Mapping[str, str], *, now: float | None = None
) -> float | None:
    """Seconds the server asks us to wait: retry-after-ms, Retry-After, then reset headers.

    The explicit retry headers win; of the vendor reset headers the longest wait wins,
    since a call needs every exhausted budget (requests and tokens) to be back.
    """
    now = time.time() if now is None else now
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        ms = _number(lower["retry-after-ms"])
        if ms is not None and 0 <= ms / 1000 <= _MAX_SENSIBLE_WAIT_S:
            return ms / 1000
    if "retry-after" in lower:
        raw = lower["retry-after"].strip()
        seconds = _number(raw)
        if seconds is None:
            seconds = _seconds_until(raw, now)
        if seconds is not None and 0 <= seconds <= _MAX_SENSIBLE_WAIT_S:
            return seconds
    waits = []
    for name in _RESET_HEADERS:
        value = lower.get(name)
        if not value:
            continue
        wait = _go_duration(value)
        if wait is None:
            wait = _number(value)
        if wait is None:
            wait = _seconds_until(value, now)
        if wait is not None and 0 <= wait <= _MAX_SENSIBLE_WAIT_S:
            waits.append(wait)
    return max(waits) if waits else None


def retry_after_from_body(body: Any) -> float | None:
    """Gemini puts the wait in a google.rpc.RetryInfo detail: {"retryDelay": "37s"}."""
    error = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            wait = _go_duration(str(detail.get("retryDelay", "")))
            if wait is not None and wait <= _MAX_SENSIBLE_WAIT_S:
                return wait
    return None


def from_status(
    status: int,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    request_id: str | None = None,
    secrets: Iterable[str] = (),
) -> ModelError:
    cls = class_for_status(status)
    retry_after = None
    if cls in (RateLimitedError, OverloadedError, ServerError):
        retry_after = retry_after_from_headers(headers or {})
        if retry_after is None:
            retry_after = retry_after_from_body(body)
    return cls(
        redact(f"HTTP {status}: {message}", extra=secrets),
        status=status,
        retry_after=retry_after,
        request_id=request_id,
    )


def from_transport(exc: BaseException, *, secrets: Iterable[str] = ()) -> ModelError | None:
    """httpx2 and JSON failures, which some SDKs (google-genai) let through raw."""
    detail = redact(f"{type(exc).__name__}: {exc}".rstrip(": "), extra=secrets)
    if isinstance(exc, httpx2.TimeoutException | TimeoutError):
        return ModelTimeoutError(f"request timed out ({detail})")
    if isinstance(exc, httpx2.TransportError | ConnectionError):
        return ConnectionFailedError(f"connection failed ({detail})")
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return MalformedResponseError(f"reply is not valid JSON ({detail})")
    if isinstance(exc, RecursionError):  # a body nested deeper than the JSON parser goes
        return MalformedResponseError(f"reply is nested too deep to parse ({detail})")
    return None


def error_in_body(reply: Any, *, secrets: Iterable[str] = ()) -> ModelError | None:
    """The vendor's own error when a 200 reply's body is an error object (``{"error":
    {"message": "model overloaded", ...}}``, Anthropic's ``{"type": "error", ...}``), so
    the recorded failure keeps the vendor's message; None for any other reply.

    The SDKs build their reply objects from such a body without complaint (fields they do
    not know land in ``model_extra``): the adapters ask before reading the reply."""
    extra = getattr(reply, "model_extra", None)
    found = extra.get("error") if isinstance(extra, dict) else None
    if found is None:
        found = getattr(reply, "error", None)
    if found is None:
        return None
    if isinstance(found, dict):
        message = str(found.get("message") or found.get("type") or found)
        code = found.get("status") or found.get("code") or found.get("type")
    else:
        message, code = str(found), None
    label = f" ({code})" if code else ""
    text = f"HTTP 200 with an error body{label}: {message}"
    overloaded = "overload" in message.lower() or "overload" in str(code).lower()
    cls = OverloadedError if overloaded else ServerError
    return cls(redact(text, extra=secrets), status=200)


def unexpected(exc: BaseException, vendor: str, *, secrets: Iterable[str] = ()) -> ModelError:
    """Last resort: an exception no rule knows. Logged under its own kind, never retried."""
    return ModelError(redact(f"{vendor}: unexpected {type(exc).__name__}: {exc}", extra=secrets))


def refused(reason: str, *, request_id: str | None = None) -> ContentRefusedError:
    return ContentRefusedError(
        f"the vendor refused on content grounds ({reason})", request_id=request_id
    )
