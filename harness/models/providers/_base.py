"""What every vendor adapter shares: option parsing, timing, cost, error funnel.

Subclasses implement ``_send`` (one SDK call, returning a `RawReply`) and ``_translate``
(their SDK's exception classes to harness errors). ``complete`` guarantees that nothing but
a `ModelError` (or cancellation) leaves the adapter.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from harness.models.providers._endpoint import endpoint_for
from harness.models.providers._errors import from_transport, unexpected
from harness.models.providers._options import VendorOptions, parse_options
from harness.models.providers._pricing import Price, price_for
from harness.vocabulary.errors import ConnectionFailedError, ModelError, NotFoundError
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    ModelSpec,
    Reply,
    Usage,
    recordable_reply,
)


@dataclass(frozen=True)
class RawReply:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    request_id: str | None
    conversation_id: str | None = None  # an http: target's own (``conversation = "id"``)


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """Vendors that take the system prompt out of band get it joined; order is kept."""
    system = [m.content for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    return ("\n\n".join(system) if system else None), rest


def approx_tokens(text: str) -> int:
    return len(text) // 4 + 1 if text else 0


def reply_from(
    raw: RawReply, price: Price | None, *, input_fallback: int, latency_s: float = 0.0
) -> Reply:
    """The recorded reply of a vendor's answer: tokens it did not report are estimated
    (input: ``input_fallback``), the cost is ``price``'s."""
    usage = Usage(
        input_tokens=raw.input_tokens if raw.input_tokens is not None else input_fallback,
        output_tokens=raw.output_tokens
        if raw.output_tokens is not None
        else approx_tokens(raw.text),
    )
    # The vendor's text is data: a lone surrogate (legal JSON, from a proxy or a
    # tokenizer bug) is repaired here, the original kept escaped in the event.
    return recordable_reply(
        Reply(
            text=raw.text,
            usage=usage,
            finish_reason=raw.finish_reason,
            request_id=raw.request_id,
            latency_s=latency_s,
            cost_usd=price.cost(usage) if price is not None else None,
            conversation_id=raw.conversation_id,
        )
    )


class VendorModel(ABC):
    """Base of the SDK adapters; ``name`` is the campaign-level model name."""

    vendor: ClassVar[str] = ""

    def __init__(self, spec: ModelSpec, options: VendorOptions, key: str) -> None:
        self.name = spec.name
        self.identifier = spec.identifier
        self.options = options
        # The URL the SDK is given explicitly: the one logged and shown is the one used.
        self.endpoint = endpoint_for(spec, options)
        self._secrets: tuple[str, ...] = (key,)
        self.price: Price | None = price_for(
            spec.scheme, spec.identifier, options.price_in_per_mtok, options.price_out_per_mtok
        )

    @classmethod
    def options_for(cls, spec: ModelSpec) -> VendorOptions:
        return parse_options(spec)

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        started = time.monotonic()
        try:
            raw = await self._send(messages, params)
        except ModelError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self.translate(exc) from exc
        latency = time.monotonic() - started
        prompt = approx_tokens(" ".join(m.content for m in messages))
        return reply_from(raw, self.price, input_fallback=prompt, latency_s=latency)

    def translate(self, exc: BaseException) -> ModelError:
        """Vendor rules first, then transport/JSON failures, then the last resort.

        A failure to reach the server or a 404 names the base URL and the URL shape the
        SDK expects: a wrong base URL is the usual cause.
        """
        error = (
            self._translate(exc)
            or from_transport(exc, secrets=self._secrets)
            or unexpected(exc, self.vendor, secrets=self._secrets)
        )
        if isinstance(error, ConnectionFailedError | NotFoundError):
            error = type(error)(
                f"{error} at {self.endpoint.describe()}",
                status=error.status,
                retry_after=error.retry_after,
                request_id=error.request_id,
            )
        return error

    @abstractmethod
    def _translate(self, exc: BaseException) -> ModelError | None:
        """The vendor's own exceptions as harness errors; None for anything else."""

    @abstractmethod
    async def _send(self, messages: Sequence[Message], params: GenerationParams) -> RawReply:
        """One request through the vendor's SDK."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close the SDK client."""
