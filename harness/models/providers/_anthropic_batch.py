"""Anthropic's Message Batches (``anthropic:`` models in batch mode) through
``anthropic.AsyncAnthropic``.

A wave is one ``messages.batches.create`` call with its requests inline, each a
``custom_id`` (``^[a-zA-Z0-9_-]{1,64}$``) and the Messages API parameters a direct call
would send. Results stream as JSONL from ``messages.batches.results``: ``succeeded`` (a
message, read as a direct reply), ``errored`` (an error object, mapped to the error a
direct call would have raised), ``canceled`` and ``expired`` (never run: no result, so the
engine sends them again).

The API keeps no metadata with a batch, so `find` by tag returns None; `find_by_requests`
re-attaches a batch whose id was never recorded by what it holds: among the batches created
since its wave was queued (less a clock allowance) that the log does not already know, the
ones with as many requests as the wave; an ended one is adopted only if its results' custom_ids
are exactly the wave's; a single one still in progress is adopted provisionally, its id
recorded with a digest of the wave's custom_ids (``msgbatch_…#ids=…``), and `results` of such
an id returns nothing unless the batch's custom_ids match the digest, so a result that is not
the wave's is never ingested (its requests are then sent again). See docs/vendors.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Sequence
from typing import Any

from harness.models.batch import BatchRequest, BatchResult, BatchState, BatchStatus
from harness.models.providers._anthropic import AnthropicModel, build_anthropic
from harness.models.providers._batch_base import FIND_SCAN_LIMIT, VendorBatchClient
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


# How much earlier than the wave's queued time (by the harness's clock) a batch may say it
# was created (by the vendor's) and still be a candidate.
CLOCK_ALLOWANCE_S = 600.0
_VERIFY = "#ids="  # a provisionally adopted batch's id: the batch id, this, the ids' digest


def ids_digest(custom_ids: Collection[str]) -> str:
    """A short digest of a set of custom_ids (order does not matter)."""
    joined = "\n".join(sorted(set(custom_ids))).encode()
    return hashlib.sha256(joined).hexdigest()[:32]


def split_id(batch_id: str) -> tuple[str, str | None]:
    """(the vendor's batch id, the digest its results must match or None)."""
    vendor_id, mark, digest = batch_id.partition(_VERIFY)
    return vendor_id, (digest if mark else None)


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

    async def find_by_requests(
        self, tag: str, custom_ids: Collection[str], queued_at: float, known: Collection[str]
    ) -> str | None:
        """The batch holding exactly ``custom_ids`` (a wave queued at ``queued_at``, unix
        time), created since, that is none of the ``known`` batch ids; None when there is no
        such batch or several cannot be told apart (the wave is then sent again)."""
        wanted = frozenset(custom_ids)
        # A batch adopted provisionally by another wave stays a candidate: the digests
        # decide whose it is (excluding it would send this wave again if it is this one's).
        known_ids = {b for b in known if split_id(b)[1] is None}

        async def scan() -> str | None:
            verified: list[str] = []
            pending: list[str] = []
            seen = 0
            async for batch in self.client.messages.batches.list(limit=100):
                if batch.created_at.timestamp() < queued_at - CLOCK_ALLOWANCE_S:
                    break  # listed newest first: the rest are older than the wave
                seen += 1
                if seen > FIND_SCAN_LIMIT:
                    break
                if batch.id in known_ids:
                    continue
                counts = batch.request_counts
                total = (
                    counts.processing + counts.succeeded + counts.errored + counts.canceled
                    + counts.expired
                )  # fmt: skip
                if total != len(wanted):
                    continue
                if batch.processing_status != "ended":
                    pending.append(batch.id)
                elif await self._ids_of(batch.id) == wanted:
                    verified.append(batch.id)
            if verified:  # holds exactly the wave's requests: it is the wave's batch
                return verified[0]
            if len(pending) == 1:  # checked against the digest when its results are read
                return f"{pending[0]}{_VERIFY}{ids_digest(wanted)}"
            return None

        return await self.call(scan)

    async def _ids_of(self, batch_id: str) -> frozenset[str]:
        return frozenset(
            [item.custom_id async for item in await self.client.messages.batches.results(batch_id)]
        )

    async def status(self, batch_id: str) -> BatchStatus:
        batch_id = split_id(batch_id)[0]
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
        batch_id, digest = split_id(batch_id)

        async def read() -> list[BatchResult]:
            out = []
            ids = set()
            async for item in await self.client.messages.batches.results(batch_id):
                ids.add(item.custom_id)
                result = self._result(item)
                if result is not None:
                    out.append(result)
            if digest is not None and ids_digest(ids) != digest:
                return []  # adopted provisionally and not the wave's: ingest none of it
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
