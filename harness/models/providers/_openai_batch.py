"""OpenAI's Batch API (``openai:`` models in batch mode) through ``openai.AsyncOpenAI``.

A wave is a JSONL file of ``/v1/chat/completions`` requests, one a line with its
``custom_id``, uploaded with ``files.create(purpose="batch")``; ``batches.create`` starts it
with a 24 h completion window and the engine's tag in its metadata, so ``find`` can
re-attach it through ``batches.list``. Results are read from the output file (answered
requests) and the error file (requests the vendor refused or could not run). Requests that
were never run (the batch expired or was cancelled first) have no result: the engine sends
them again. See docs/vendors.md, "Batch APIs".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from openai.types.chat import ChatCompletion

from harness.models.batch import BatchRequest, BatchResult, BatchState, BatchStatus
from harness.models.providers._batch_base import FIND_SCAN_LIMIT, TAG_KEY, VendorBatchClient
from harness.models.providers._openai import OpenAIChatModel, build_openai
from harness.vocabulary.errors import BadRequestError, redact
from harness.vocabulary.model import ModelSpec

ENDPOINT = "/v1/chat/completions"

_STATES: dict[str, BatchState] = {
    "validating": "pending",
    "in_progress": "pending",
    "finalizing": "pending",
    "cancelling": "pending",
    "completed": "ended",
    "expired": "expired",
    "failed": "failed",
    "cancelled": "cancelled",
}

# Line errors of requests the vendor never ran: no result, so the engine sends them again.
_NOT_RUN = {"batch_expired", "batch_cancelled"}


class OpenAIBatchClient(VendorBatchClient):
    model: OpenAIChatModel
    max_requests = 50_000  # a batch input file's limits
    max_bytes = 200 * 1024 * 1024

    def __init__(self, spec: ModelSpec, model: OpenAIChatModel) -> None:
        super().__init__(spec, model)
        self.client = model.client

    def jsonl(self, requests: Sequence[BatchRequest]) -> bytes:
        """The batch input file: one chat completion request a line, as a direct call's."""
        lines = [
            json.dumps(
                {
                    "custom_id": r.custom_id,
                    "method": "POST",
                    "url": ENDPOINT,
                    "body": self.model.request(r.messages, r.params),
                },
                ensure_ascii=False,
            )
            for r in requests
        ]
        return ("\n".join(lines) + "\n").encode("utf-8")

    async def upload(self, requests: Sequence[BatchRequest]) -> str | None:
        data = self.jsonl(requests)
        self.check_size(len(requests), len(data))
        uploaded = await self.call(
            lambda: self.client.files.create(
                file=("requests.jsonl", data, "application/jsonl"), purpose="batch"
            )
        )
        return uploaded.id

    async def create(self, requests: Sequence[BatchRequest], file_id: str | None, tag: str) -> str:
        if file_id is None:  # the engine skipped the upload step: stage the file now
            file_id = await self.upload(requests)
            assert file_id is not None
        staged = file_id
        batch = await self.call(
            lambda: self.client.batches.create(
                input_file_id=staged,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata={TAG_KEY: tag},
            )
        )
        return batch.id

    async def find(self, tag: str) -> str | None:
        async def scan() -> str | None:
            seen = 0
            async for batch in self.client.batches.list(limit=100):
                if (batch.metadata or {}).get(TAG_KEY) == tag:
                    return batch.id
                seen += 1
                if seen >= FIND_SCAN_LIMIT:
                    break
            return None

        return await self.call(scan)

    async def status(self, batch_id: str) -> BatchStatus:
        batch = await self.call(lambda: self.client.batches.retrieve(batch_id))
        counts = batch.request_counts
        return BatchStatus(
            state=_STATES.get(batch.status, "pending"),
            vendor_state=batch.status,
            total=counts.total if counts is not None else 0,
            completed=counts.completed if counts is not None else 0,
            failed=counts.failed if counts is not None else 0,
        )

    async def _file_text(self, file_id: str) -> str:
        content = await self.call(lambda: self.client.files.content(file_id))
        return content.content.decode("utf-8", errors="replace")

    async def results(self, batch_id: str) -> list[BatchResult]:
        batch = await self.call(lambda: self.client.batches.retrieve(batch_id))
        out: list[BatchResult] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                text = await self._file_text(file_id)
                out.extend(r for line in text.splitlines() if (r := self._line(line)))
        return out

    def _line(self, line: str) -> BatchResult | None:
        """One line of an output or error file as a result; None for a blank or unreadable
        line (its request has no result and is sent again) or one the vendor never ran."""
        try:
            item = json.loads(line)
        except ValueError:
            return None
        if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
            return None
        custom_id: str = item["custom_id"]
        response = item.get("response")
        if isinstance(response, dict) and isinstance(response.get("status_code"), int):
            status: int = response["status_code"]
            body = response.get("body")
            request_id = response.get("request_id")
            if status == 200 and isinstance(body, dict):
                return self.outcome(
                    custom_id, lambda: self.model.parse(_completion(body, request_id))
                )
            error = body.get("error") if isinstance(body, dict) else None
            message = error.get("message") if isinstance(error, dict) else None
            return self.failure(
                custom_id, status, str(message or body), body=body, request_id=request_id
            )
        error = item.get("error")
        if isinstance(error, dict):
            if error.get("code") in _NOT_RUN:
                return None
            return BatchResult(
                custom_id,
                None,
                BadRequestError(
                    redact(
                        f"the batch could not run this request ({error.get('code')}): "
                        f"{error.get('message')}",
                        extra=self.secrets,
                    )
                ),
            )  # fmt: skip
        return None


def _completion(body: dict[str, Any], request_id: Any) -> ChatCompletion:
    completion = ChatCompletion.construct(**body)
    if isinstance(request_id, str):
        completion._request_id = request_id
    return completion


def build_openai_batch(spec: ModelSpec) -> OpenAIBatchClient:
    return OpenAIBatchClient(spec, build_openai(spec))
