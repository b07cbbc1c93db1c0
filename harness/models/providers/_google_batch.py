"""Gemini's batch mode (``google:`` models in batch mode) through ``google-genai``.

A wave is one ``batches.create`` call with its requests inline, each with the contents and
generation config a direct call would send and its ``custom_id`` in the request's metadata
(``key``), and the engine's tag as the batch's display name, so `find` can re-attach a
batch by listing them. Results are the inlined responses of a succeeded batch, matched to
requests by that key (a response without one is dropped, never guessed); a response with an
error becomes the error a direct call with the same status would have raised. See
docs/vendors.md, "Batch APIs".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.genai import types

from harness.models.batch import BatchRequest, BatchResult, BatchState, BatchStatus
from harness.models.providers._batch_base import FIND_SCAN_LIMIT, VendorBatchClient
from harness.models.providers._google import GeminiModel, build_gemini
from harness.vocabulary.model import ModelSpec

KEY = "key"  # the metadata field that carries a request's custom_id

_STATES: dict[str, BatchState] = {
    "JOB_STATE_PENDING": "pending",
    "JOB_STATE_RUNNING": "pending",
    "JOB_STATE_QUEUED": "pending",
    "JOB_STATE_UNSPECIFIED": "pending",
    "JOB_STATE_SUCCEEDED": "ended",
    "JOB_STATE_PARTIALLY_SUCCEEDED": "ended",
    "JOB_STATE_EXPIRED": "expired",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_CANCELLED": "cancelled",
    "JOB_STATE_CANCELLING": "pending",
}

# google.rpc codes (a per-request error's ``code``) as the HTTP status a direct call gets.
_HTTP_OF_RPC = {
    1: 499,  # CANCELLED
    2: 500,  # UNKNOWN
    3: 400,  # INVALID_ARGUMENT
    4: 504,  # DEADLINE_EXCEEDED
    5: 404,  # NOT_FOUND
    7: 403,  # PERMISSION_DENIED
    8: 429,  # RESOURCE_EXHAUSTED
    9: 400,  # FAILED_PRECONDITION
    11: 400,  # OUT_OF_RANGE
    13: 500,  # INTERNAL
    14: 503,  # UNAVAILABLE
    16: 401,  # UNAUTHENTICATED
}


def http_status(code: int | None) -> int:
    """A per-request error's status: an HTTP status as is, a google.rpc code mapped."""
    if code is None:
        return 500
    if 400 <= code <= 599:
        return code
    return _HTTP_OF_RPC.get(code, 500)


def _state(job: types.BatchJob) -> str:
    state = job.state
    return str(getattr(state, "value", state) or "JOB_STATE_UNSPECIFIED")


class GeminiBatchClient(VendorBatchClient):
    model: GeminiModel
    max_bytes = 20 * 1000 * 1000  # inline requests (larger jobs need the file input)

    def __init__(self, spec: ModelSpec, model: GeminiModel) -> None:
        super().__init__(spec, model)
        self.client = model.client

    def inlined(self, requests: Sequence[BatchRequest]) -> list[types.InlinedRequest]:
        out = []
        for r in requests:
            contents, config = self.model.request(r.messages, r.params)
            out.append(
                types.InlinedRequest(
                    contents=list(contents), config=config, metadata={KEY: r.custom_id}
                )
            )
        return out

    async def upload(self, requests: Sequence[BatchRequest]) -> str | None:
        return None  # requests go inline with the batch

    async def create(self, requests: Sequence[BatchRequest], file_id: str | None, tag: str) -> str:
        src: Any = self.inlined(requests)
        size = sum(len(r.model_dump_json(exclude_none=True)) for r in src)
        self.check_size(len(src), size)
        job = await self.call(
            lambda: self.client.aio.batches.create(
                model=self.model.identifier,
                src=src,
                config=types.CreateBatchJobConfig(display_name=tag),
            )
        )
        return str(job.name)

    async def find(self, tag: str) -> str | None:
        async def scan() -> str | None:
            seen = 0
            pager = await self.client.aio.batches.list(
                config=types.ListBatchJobsConfig(page_size=100)
            )
            async for job in pager:
                if job.display_name == tag:
                    return str(job.name)
                seen += 1
                if seen >= FIND_SCAN_LIMIT:
                    break
            return None

        return await self.call(scan)

    async def _job(self, batch_id: str) -> types.BatchJob:
        return await self.call(lambda: self.client.aio.batches.get(name=batch_id))

    async def status(self, batch_id: str) -> BatchStatus:
        job = await self._job(batch_id)
        vendor = _state(job)
        # The Developer API's batch stats are not surfaced by the SDK: the counts are read
        # from the inlined responses once there are any.
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        failed = sum(1 for r in responses if r.error is not None)
        return BatchStatus(
            state=_STATES.get(vendor, "pending"),
            vendor_state=vendor,
            total=len(responses),
            completed=len(responses) - failed,
            failed=failed,
        )

    async def results(self, batch_id: str) -> list[BatchResult]:
        job = await self._job(batch_id)
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        out: list[BatchResult] = []
        for item in responses:
            custom_id = (item.metadata or {}).get(KEY)
            if not custom_id:
                continue
            if item.error is not None:
                error = item.error
                out.append(
                    self.failure(
                        custom_id,
                        http_status(error.code),
                        str(error.message or "the request failed"),
                        body={"error": {"details": error.details or []}},
                    )
                )
            elif item.response is not None:
                response = item.response
                out.append(self.outcome(custom_id, lambda r=response: self.model.parse(r)))  # type: ignore[misc]
        return out


def build_gemini_batch(spec: ModelSpec) -> GeminiBatchClient:
    return GeminiBatchClient(spec, build_gemini(spec))
