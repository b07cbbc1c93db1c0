"""What a vendor's batch API is to the engine: stage a wave of requests, create a batch of
them, follow it, and collect its results.

A batch client is the batch-side twin of a `Model`: the engine (``harness.running``) decides
which requests go into a wave and records every step in the log before and after it is
taken; the client only speaks the vendor's protocol through its official SDK. Each request
carries a ``custom_id`` derived from its request key, so a result is matched to its request
whatever order the vendor returns them in, and a re-attached batch is ingested exactly once.

Clients are built per scheme by `batch_client_for`; a scheme with no batch API is a
configuration error before the first call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from harness.vocabulary.errors import ConfigError, ModelError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec, Reply

BatchState = Literal["pending", "ended", "expired", "failed", "cancelled"]
"""Where a batch is: still running (``pending``: validating, in progress, finalizing), or
finished one way or another. Only an ``ended`` batch has results for every request it
answered; ``expired`` and ``cancelled`` ones may have results for some; ``failed`` has none."""


@dataclass(frozen=True)
class BatchRequest:
    """One request of a wave: what a direct call would have sent, and the id that names it."""

    custom_id: str  # from the request key: unique in the campaign, at most 64 [A-Za-z0-9_-]
    messages: tuple[Message, ...]
    params: GenerationParams


@dataclass(frozen=True)
class BatchStatus:
    """A batch as the vendor last described it."""

    state: BatchState
    vendor_state: str  # the vendor's own word ("in_progress", "ended", "JOB_STATE_RUNNING")
    total: int
    completed: int
    failed: int
    # False: the vendor tells no counts until the results are read (a Gemini batch: the SDK
    # surfaces none while it runs), so the zeros above mean "not known yet", not "none done".
    counted: bool = True


@dataclass(frozen=True)
class BatchResult:
    """The outcome of one request of a finished batch: a reply (priced at the batch rate) or
    the error a direct call would have raised for it."""

    custom_id: str
    reply: Reply | None
    error: ModelError | None


class BatchClient(Protocol):
    """One model's batch API. Every method is one or a few SDK calls; none retries a
    creation (the engine decides, from the log, what may be sent again)."""

    name: str  # the campaign-level model name, as in `Model`

    async def upload(self, requests: Sequence[BatchRequest]) -> str | None:
        """Stage the requests where the vendor wants them first (OpenAI: a JSONL file) and
        return that file's id; None for vendors that take requests inline."""
        ...

    async def create(self, requests: Sequence[BatchRequest], file_id: str | None, tag: str) -> str:
        """Create the batch and return its id. ``tag`` (the engine's name for the wave) is
        stored with the batch where the vendor keeps metadata, so `find` can re-attach a
        batch whose id was never recorded."""
        ...

    async def find(self, tag: str) -> str | None:
        """The id of a batch created with ``tag``, or None (also when the vendor cannot
        tell: then a batch whose id was never recorded is sent again)."""
        ...

    async def status(self, batch_id: str) -> BatchStatus: ...

    async def results(self, batch_id: str) -> list[BatchResult]:
        """Every result a finished batch holds (possibly fewer than it was sent)."""
        ...


BatchClientFactory = Callable[[ModelSpec], BatchClient]

_FACTORIES: dict[str, BatchClientFactory] = {}


def register_batch_client(scheme: str, factory: BatchClientFactory) -> None:
    """Make ``scheme``'s models runnable in batch mode; one factory a scheme."""
    if scheme in _FACTORIES and _FACTORIES[scheme] is not factory:
        raise ValueError(f"a batch client for {scheme!r} is already registered")
    _FACTORIES[scheme] = factory


def batch_client_for(spec: ModelSpec) -> BatchClient:
    """The batch client of ``spec``'s scheme; a `ConfigError` naming the field when the
    scheme has no batch API."""
    factory = _FACTORIES.get(spec.scheme)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES)) or "none"
        raise ConfigError(
            f"{spec.scheme!r} has no batch API (batch mode works for: {known})",
            field=f"models[{spec.name!r}].mode",
            fix='remove mode (or set mode = "direct") for this model',
        )
    return factory(spec)
