"""What the three vendor batch clients share: the direct adapter they lean on (request
bodies, reply parsing, error translation), the batch price, and the mapping of a failed
request's vendor error to the error a direct call would have raised.

A batch client never builds a request body or reads a reply on its own: the direct adapter's
``request`` and ``parse`` do, so a batched turn is sent and read exactly as a direct one
(same refusal, error-body and structured-answer rules); only the price differs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

from harness.models.batch import BatchResult
from harness.models.providers._base import RawReply, VendorModel, reply_from
from harness.models.providers._errors import from_status
from harness.models.providers._pricing import Price, batch_price_of
from harness.vocabulary.errors import BadRequestError, ModelError, redact
from harness.vocabulary.model import ModelSpec, Reply

T = TypeVar("T")

# The tag's key in a vendor's batch metadata (OpenAI); Gemini keeps it as the display name.
TAG_KEY = "harness_tag"

# How many of the newest batches `find` reads before it gives up (vendors list newest first;
# a wave's batch is found among the newest unless thousands were created since).
FIND_SCAN_LIMIT = 2000


class VendorBatchClient:
    """Base of the SDK batch clients; ``name`` is the campaign-level model name.

    ``max_requests`` and ``max_bytes`` are the vendor's limits on one batch (None: none
    documented); the engine may read them to size its waves, and a wave past them is
    refused before anything is sent (`check_size`)."""

    max_requests: ClassVar[int | None] = None
    max_bytes: ClassVar[int | None] = None

    def __init__(self, spec: ModelSpec, model: VendorModel) -> None:
        self.name = spec.name
        self.model = model
        options = model.options
        self.price: Price | None = batch_price_of(spec, options)
        # Read by the engine: the most tokens (worst case) its batches in flight may hold.
        self.enqueued_tokens: int | None = options.batch_enqueued_tokens

    def check_size(self, count: int, size: int) -> None:
        """A `BadRequestError` (not retried) for a wave the vendor would reject for its size:
        ``count`` requests of ``size`` bytes as sent."""
        if self.max_requests is not None and count > self.max_requests:
            raise BadRequestError(
                f"a batch of {count} requests is more than the {self.max_requests} one "
                f"{self.model.vendor} batch may hold: send smaller waves"
            )
        if self.max_bytes is not None and size > self.max_bytes:
            raise BadRequestError(
                f"a batch of {size} bytes is more than the {self.max_bytes} one "
                f"{self.model.vendor} batch may hold: send smaller waves"
            )

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.model._secrets

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """One SDK call; whatever it raises leaves as a `ModelError` (key redacted)."""
        try:
            return await make()
        except (ModelError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise self.model.translate(exc) from exc

    def reply(self, raw: RawReply) -> Reply:
        """A batched reply, priced at the batch rate. The latency of a batched reply is not
        the vendor's: it is recorded as 0."""
        return reply_from(raw, self.price, input_fallback=0)

    def outcome(self, custom_id: str, parse: Callable[[], RawReply]) -> BatchResult:
        """The result of one answered request: its reply, or the error its body stands for
        (a refusal, an error object), as `parse` (the direct adapter's) decides."""
        try:
            return BatchResult(custom_id, self.reply(parse()), None)
        except ModelError as error:
            return BatchResult(custom_id, None, error)
        except Exception as exc:  # a body the parser cannot read: a malformed reply
            return BatchResult(custom_id, None, self.model.translate(exc))

    def failure(
        self, custom_id: str, status: int, message: str, *, body: Any = None,
        request_id: str | None = None,
    ) -> BatchResult:  # fmt: skip
        """A request the vendor answered with an error status: the error a direct call that
        got the same status and message would have raised (retryable or not alike)."""
        error = from_status(
            status, redact(message, extra=self.secrets), body=body, request_id=request_id,
            secrets=self.secrets,
        )  # fmt: skip
        return BatchResult(custom_id, None, error)

    async def aclose(self) -> None:
        """Close the SDK clients."""
        await self.model.aclose()
