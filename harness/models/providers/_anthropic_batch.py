"""Anthropic's Message Batches (``anthropic:`` models in batch mode) through
``anthropic.AsyncAnthropic``.

A wave is one ``messages.batches.create`` call with its requests inline, each a
``custom_id`` (``^[a-zA-Z0-9_-]{1,64}$``) and the Messages API parameters a direct call
would send. Results stream as JSONL from ``messages.batches.results``: ``succeeded`` (a
message, read as a direct reply), ``errored`` (an error object, mapped to the error a
direct call would have raised), ``canceled`` and ``expired`` (never run: no result, so the
engine sends them again). The API keeps no metadata with a batch, so `find` cannot
re-attach a batch whose id was never recorded: it returns None. See docs/vendors.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from harness.models.batch import BatchRequest, BatchResult, BatchState, BatchStatus
from harness.models.providers._anthropic import AnthropicModel, build_anthropic
from harness.models.providers._batch_base import VendorBatchClient
from harness.vocabulary.errors import BadRequestError
from harness.vocabulary.model import ModelSpec

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# The error types of the Messages API, as the HTTP status a direct call would have got.
_STATUS_OF = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicBatchClient(VendorBatchClient):
    model: AnthropicModel
    max_requests = 100_000  # whichever limit a batch reaches first
    max_bytes = 256 * 1024 * 1024

    def __init__(self, spec: ModelSpec, model: AnthropicModel) -> None:
        super().__init__(spec, model)
        self.client = model.client

    def batch_requests(self, requests: Sequence[BatchRequest]) -> list[dict[str, Any]]:
        """The ``requests`` argument: each request's parameters as a direct call's."""
        out = []
        for r in requests:
            if not CUSTOM_ID.match(r.custom_id):
                raise BadRequestError(
                    f"custom_id {r.custom_id!r} is not 1-64 of [a-zA-Z0-9_-] (Anthropic's rule)"
                )
            params = self.model.request(r.messages, r.params)
            params.update(params.pop("extra_body", {}))  # sampling parameters, inline
            out.append({"custom_id": r.custom_id, "params": params})
        return out

    async def upload(self, requests: Sequence[BatchRequest]) -> str | None:
        return None  # requests go inline with the batch

    async def create(self, requests: Sequence[BatchRequest], file_id: str | None, tag: str) -> str:
        body = self.batch_requests(requests)
        self.check_size(len(body), len(json.dumps(body, ensure_ascii=False).encode()))
        batch = await self.call(lambda: self.client.messages.batches.create(requests=body))  # type: ignore[arg-type]
        return batch.id

    async def find(self, tag: str) -> str | None:
        return None  # a message batch has no metadata to look a tag up by

    async def status(self, batch_id: str) -> BatchStatus:
        batch = await self.call(lambda: self.client.messages.batches.retrieve(batch_id))
        counts = batch.request_counts
        state: BatchState = "pending"
        if batch.processing_status == "ended":
            state = "ended"
            if batch.cancel_initiated_at is not None:
                state = "cancelled"
            elif counts.expired:
                state = "expired"
        total = (
            counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
        )
        return BatchStatus(
            state=state,
            vendor_state=batch.processing_status,
            total=total,
            completed=counts.succeeded,
            failed=counts.errored,
        )

    async def results(self, batch_id: str) -> list[BatchResult]:
        async def read() -> list[BatchResult]:
            out = []
            async for item in await self.client.messages.batches.results(batch_id):
                result = self._result(item)
                if result is not None:
                    out.append(result)
            return out

        return await self.call(read)

    def _result(self, item: Any) -> BatchResult | None:
        custom_id = item.custom_id
        result = item.result
        kind = getattr(result, "type", None)
        if kind == "succeeded":
            message = result.message
            # A forced tool call answers a structured ask; the batch result does not say
            # what was asked, but a tool_use block from the answer tool says it was.
            structured = any(
                getattr(b, "type", None) == "tool_use"
                for b in getattr(message, "content", None) or []
            )
            return self.outcome(custom_id, lambda: self.model.parse(message, structured=structured))
        if kind == "errored":
            response = result.error
            error = getattr(response, "error", None)
            error_type = str(getattr(error, "type", "api_error"))
            message_text = str(getattr(error, "message", "") or error_type)
            return self.failure(
                custom_id,
                _STATUS_OF.get(error_type, 500),
                f"{error_type}: {message_text}",
                request_id=getattr(response, "request_id", None),
            )
        return None  # canceled or expired: never run, sent again by the engine


def build_anthropic_batch(spec: ModelSpec) -> AnthropicBatchClient:
    return AnthropicBatchClient(spec, build_anthropic(spec))
