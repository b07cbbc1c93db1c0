"""The one error tree of the harness.

Every error a user can meet is a `HarnessError`. Third-party exceptions (vendor SDKs,
sqlite3, llama.cpp, pydantic) are translated at the boundary where they occur, with
``raise ... from exc`` so the cause survives for debugging but never leaks upward as a
foreign type. Messages must never contain secrets: see `redact`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

_SECRET_ENV_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
_BEARER = re.compile(r"(?i)(bearer\s+|api[-_]?key[=:\s]+|x-goog-api-key[=:\s]+)[A-Za-z0-9._\-]{8,}")
_KEY_SHAPES = re.compile(
    r"\b(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,}|AIza[0-9A-Za-z_\-]{20,})"
)
# Credentials a URL can carry: ``scheme://user:secret@host`` and query parameters named
# like keys (``?key=...`` is how Gemini takes one).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#]+@")
_URL_SECRET_PARAM = re.compile(
    r"(?i)([?&;](?:key|api[-_]?key|apikey|token|access[-_]?token|secret|password|pass|sig"
    r"|signature|auth|x-goog-api-key)=)[^&#\s]*"
)


def strip_url_credentials(text: str) -> str:
    """``text`` with credentials removed from every URL in it (user:secret@ and key-like
    query parameters), so a base URL can be logged, reported or shown in an error."""
    text = _URL_USERINFO.sub(lambda m: m.group(1), text)
    return _URL_SECRET_PARAM.sub(lambda m: m.group(1) + "***", text)


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables that look like credentials (longest first)."""
    env = os.environ if environ is None else environ
    found = [
        value
        for name, value in env.items()
        if any(hint in name.upper() for hint in _SECRET_ENV_HINTS) and len(value) >= 8
    ]
    return sorted(set(found), key=len, reverse=True)


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """Remove credentials from text bound for the log, a report or an error message."""
    for value in [*extra, *secret_values()]:
        if value:
            text = text.replace(value, "***")
    text = _BEARER.sub(lambda m: m.group(1) + "***", text)
    return _KEY_SHAPES.sub("***", strip_url_credentials(text))


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


# --- configuration -------------------------------------------------------------------


class ConfigError(HarnessError):
    """Bad campaign file or option; raised before the first model call."""

    def __init__(self, message: str, *, field: str | None = None, fix: str | None = None):
        self.field = field
        self.fix = fix
        parts = []
        if field:
            parts.append(f"{field}: ")
        parts.append(message)
        if fix:
            parts.append(f" (fix: {fix})")
        super().__init__("".join(parts))


# --- event store ---------------------------------------------------------------------


class StoreError(HarnessError):
    """The event store could not do what was asked."""


class StoreClosedError(StoreError):
    """An append reached a store that was already closed."""


class ConcurrencyError(StoreError):
    """Optimistic concurrency failure: the per-case sequence number is already taken."""


class EventDecodeError(StoreError):
    """A stored row does not decode into a known event (corrupt, or from a newer schema)."""


class NotAHarnessLogError(StoreError):
    """The file is not an event log written by this harness."""


# --- models / providers --------------------------------------------------------------


class ModelError(HarnessError):
    """A model call failed. ``kind`` is the stable taxonomy name logged in AskFailed."""

    kind = "model_error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        self.status = status
        self.retry_after = retry_after
        self.request_id = request_id
        super().__init__(message)


class RateLimitedError(ModelError):
    kind = "rate_limited"
    retryable = True


class OverloadedError(ModelError):
    kind = "overloaded"
    retryable = True


class ServerError(ModelError):
    kind = "server_error"
    retryable = True


class ModelTimeoutError(ModelError):
    kind = "timeout"
    retryable = True


class ConnectionFailedError(ModelError):
    kind = "connection"
    retryable = True


class MalformedResponseError(ModelError):
    """The vendor answered with something that is not its own protocol (bad JSON, no choices)."""

    kind = "malformed_response"
    retryable = True


class BatchUnansweredError(ModelError):
    """A vendor batch ended (expired, failed, cancelled) without a result for a request:
    sent again in a later wave, as a direct call's transient failure would be."""

    kind = "batch_unanswered"
    retryable = True


class AuthenticationError(ModelError):
    """Bad or missing key: fatal for the whole campaign, not just the call."""

    kind = "authentication"


class TargetConfigError(ModelError):
    """A model's options make its calls impossible: the first reply of an application under
    test matches no response path, or a batched request's worst case is over the model's
    ``batch_enqueued_tokens``. The campaign aborts, naming the field and the fix; the case
    stays open for `harness resume` once the option is fixed (never a verdict)."""

    kind = "target_config"


class PermissionDeniedError(ModelError):
    kind = "permission_denied"


class BadRequestError(ModelError):
    kind = "bad_request"


class NotFoundError(ModelError):
    kind = "not_found"


class ContentRefusedError(ModelError):
    """The vendor refused on content grounds; recorded, never retried."""

    kind = "content_refused"


class ReplayMissError(ModelError):
    """Replay was asked for a request the log never saw."""

    kind = "replay_miss"


# --- campaign control ----------------------------------------------------------------


class BudgetExceededError(HarnessError):
    """The spending ceiling was reached; the campaign stops cleanly and can be resumed."""


class CampaignAbortedError(HarnessError):
    """A fatal condition (e.g. authentication) stopped the campaign."""


class RelationError(HarnessError):
    """A relation or its parameters are unknown or invalid."""


class RegistryError(HarnessError):
    """A family, relation, backend, section, command or handler could not be registered:
    a name registered twice, or a family entry point that does not load."""


class FamilyNotInstalledError(RegistryError):
    """A log (or a campaign) needs a relation that no installed family registers: the data
    is fine, a package is missing (or is another version). Names the relation, its family
    and what to install."""

    def __init__(self, message: str, *, relation: str, family: str) -> None:
        self.relation = relation
        self.family = family
        super().__init__(message)
