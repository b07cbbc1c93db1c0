"""Gemini's batch mode (``google:`` models in batch mode) through ``google-genai``.

A wave is one ``batches.create`` call with the engine's tag as the batch's display name, so
`find` can re-attach a batch by listing them. A wave up to the inline size (20 MB) sends
its requests inline, each with the contents and generation config a direct call would send
and its ``custom_id`` in the request's metadata (``key``); a larger one is uploaded first
through the Files API as JSONL (one ``{"key", "request"}`` line a request, the request as
the inline path sends it) and created with that file as its ``src``. Results are the
inlined responses of a finished batch, or the lines of its responses file, matched to
requests by that key (a response without one is dropped, never guessed); a response with an
error becomes the error a direct call with the same status would have raised. See
docs/vendors.md, "Batch APIs".
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from google.genai import _common, types
from google.genai import batches as sdk_batches

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


def file_line(request: dict[str, Any], custom_id: str) -> dict[str, Any]:
    """One line of a JSONL input file: an inline request's REST body under its key."""
    return {"key": custom_id, "request": request.get("request", {})}


class GeminiBatchClient(VendorBatchClient):
    model: GeminiModel
    max_bytes = 2 * 1000 * 1000 * 1000  # a Files API file (the input of a large wave)
    # Up to this size (the vendor's limit on inline requests) a wave's requests go inline;
    # above it they are uploaded as a JSONL file first.
    inline_bytes = 20 * 1000 * 1000

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

    def jsonl(self, requests: Sequence[BatchRequest]) -> bytes:
        """The wave as a JSONL input file. Each request is converted to its REST body by the
        SDK's own converter for inline requests, so a request reads the same either way."""
        api = self.client._api_client
        lines = []
        for inline, r in zip(self.inlined(requests), requests, strict=True):
            body = sdk_batches._InlinedRequest_to_mldev(api, inline)
            # What the SDK does to a request body before it sends it (schemas to dicts,
            # bytes to base64): a file's line must read as the same JSON.
            body = _common.encode_unserializable_types(_common.convert_to_dict(body))
            lines.append(json.dumps(file_line(body, r.custom_id), ensure_ascii=False))
        return ("\n".join(lines) + "\n").encode()

    async def upload(self, requests: Sequence[BatchRequest]) -> str | None:
        """None for a wave that goes inline; else the Files API name of its JSONL file."""
        size = sum(len(r.model_dump_json(exclude_none=True)) for r in self.inlined(requests))
        if size <= self.inline_bytes:
            return None
        data = self.jsonl(requests)
        self.check_size(len(requests), len(data))
        uploaded = await self.call(
            lambda: self.client.aio.files.upload(
                file=io.BytesIO(data),
                config=types.UploadFileConfig(display_name="requests.jsonl", mime_type="jsonl"),
            )
        )
        return str(uploaded.name)

    async def create(self, requests: Sequence[BatchRequest], file_id: str | None, tag: str) -> str:
        src: Any
        if file_id is not None:
            src = file_id
        else:
            src = self.inlined(requests)
            size = sum(len(r.model_dump_json(exclude_none=True)) for r in src)
            if size > self.inline_bytes:  # not staged by `upload`: stage it now
                src = await self.upload(requests)
            else:
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

    async def _responses(self, job: types.BatchJob) -> list[types.InlinedResponse]:
        """A job's responses: inline, or read from its responses file (each line's response
        converted by the SDK's own converter for inline ones, so both read alike)."""
        dest = job.dest
        if dest is None:
            return []
        if dest.file_name:
            name = dest.file_name
            data = await self.call(lambda: self.client.aio.files.download(file=name))
            out = []
            for line in data.decode().splitlines():
                if not line.strip():
                    continue
                item = json.loads(line)
                if not isinstance(item, dict):
                    continue
                converted = sdk_batches._InlinedResponse_from_mldev(item)
                response = types.InlinedResponse._from_response(response=converted, kwargs={})
                key = item.get("key")
                if key is not None:  # a file's line names its request by ``key``
                    response.metadata = {**(response.metadata or {}), KEY: str(key)}
                out.append(response)
            return out
        return list(dest.inlined_responses or [])

    async def status(self, batch_id: str) -> BatchStatus:
        job = await self._job(batch_id)
        vendor = _state(job)
        # The Developer API's batch stats are not surfaced by the SDK: the counts are read
        # from the responses once there are any (inline ones, at the end; a responses file is
        # read only for the results). Until then they are unknown, not 0 (``counted``).
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        failed = sum(1 for r in responses if r.error is not None)
        return BatchStatus(
            state=_STATES.get(vendor, "pending"),
            vendor_state=vendor,
            total=len(responses),
            completed=len(responses) - failed,
            failed=failed,
            counted=bool(responses),
        )

    async def results(self, batch_id: str) -> list[BatchResult]:
        job = await self._job(batch_id)
        responses = await self._responses(job)
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
