"""The simulated model's batch service: a vendor batch API in a directory, for batch mode
on ``sim:`` models and for killing a batch campaign at any moment of its lifecycle.

Every batch is one JSON file, replaced whole (write, then rename) at each change, so a
process killed at any point leaves each batch as it was before or after the change and a
new process carries on with it: find it by its tag, poll it, read its results. A batch stays
pending for ``batch_polls`` polls, then ends with the sim model's own answers (a pure
function of the request, so verdicts equal a direct run's with the same seeds). Requests
answered when a batch ends are billed in its file (`billed_requests` counts them); on
request, every k-th request fails once (``batch_fail_every``) and every k-th batch expires
with half its requests unanswered (``batch_expire_every``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.models.batch import (
    BatchRequest,
    BatchResult,
    BatchState,
    BatchStatus,
    register_batch_client,
)
from harness.models.sim import SimModel
from harness.vocabulary.errors import ModelError, NotFoundError, ServerError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec, Reply

BATCH_DIR_ENV = "HARNESS_SIM_BATCH_DIR"


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _every(k: int, text: str) -> bool:
    """A seeded one-in-k choice of ``text`` (0: never)."""
    if k <= 0:
        return False
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % k == 0


def billed_requests(directory: str | Path) -> Counter[str]:
    """How many times each request (custom_id) was billed, over every batch in
    ``directory``: a count above 1 is a request paid twice."""
    billed: Counter[str] = Counter()
    for path in sorted(Path(directory).glob("batch_*.json")):
        billed.update(_read(path).get("billed", []))
    return billed


class SimBatchClient:
    """A `BatchClient` for one ``sim:`` model, its batches in a directory."""

    def __init__(self, spec: ModelSpec) -> None:
        self.name = spec.name
        self.model = SimModel(spec.name, spec.options)
        opts = self.model.options
        self.directory = Path(opts.batch_dir or os.environ.get(BATCH_DIR_ENV) or "sim-batches")
        self.polls = opts.batch_polls
        self.fail_every = opts.batch_fail_every
        self.expire_every = opts.batch_expire_every

    def _path(self, batch_id: str) -> Path:
        if not batch_id.startswith("batch_") or not batch_id[6:].isalnum():
            raise NotFoundError(f"no batch {batch_id!r}")
        return self.directory / f"{batch_id}.json"

    async def upload(self, requests: Sequence[BatchRequest]) -> str | None:
        self.directory.mkdir(parents=True, exist_ok=True)
        file_id = f"file_{uuid.uuid4().hex[:16]}"
        _write_atomic(
            self.directory / f"{file_id}.json",
            {"requests": [_request_json(r) for r in requests]},
        )
        return file_id

    async def create(self, requests: Sequence[BatchRequest], file_id: str | None, tag: str) -> str:
        if file_id is None:
            raise ModelError("the sim batch service takes its requests from an uploaded file")
        staged = self.directory / f"{file_id}.json"
        if not staged.exists():
            raise NotFoundError(f"no file {file_id!r}")
        created = len(list(self.directory.glob("batch_*.json"))) + 1
        batch_id = f"batch_{uuid.uuid4().hex[:16]}"
        _write_atomic(
            self.directory / f"{batch_id}.json",
            {
                "id": batch_id,
                "tag": tag,
                "model": self.name,
                "number": created,
                "state": "pending",
                "polls": 0,
                "requests": _read(staged)["requests"],
                "results": None,
                "billed": [],
            },
        )
        return batch_id

    async def find(self, tag: str) -> str | None:
        if not self.directory.exists():
            return None
        for path in sorted(self.directory.glob("batch_*.json")):
            with contextlib.suppress(OSError, ValueError):
                data = _read(path)
                if data.get("tag") == tag and data.get("model") == self.name:
                    return str(data["id"])
        return None

    async def status(self, batch_id: str) -> BatchStatus:
        path = self._path(batch_id)
        if not path.exists():
            raise NotFoundError(f"no batch {batch_id!r}")
        data = _read(path)
        if data["state"] == "pending":
            data["polls"] += 1
            if data["polls"] > self.polls:
                await self._end(data)
            _write_atomic(path, data)
        return _status(data)

    async def _end(self, data: dict[str, Any]) -> None:
        """Answer the batch (the whole change is written at once by the caller)."""
        expired = self.expire_every > 0 and data["number"] % self.expire_every == 0
        results: list[dict[str, Any]] = []
        billed: list[str] = []
        for i, request in enumerate(data["requests"]):
            custom_id = request["custom_id"]
            if expired and i % 2 == 1:
                continue  # unanswered when the batch expired
            marker = self.directory / f"failed_{custom_id}"
            if _every(self.fail_every, custom_id) and not marker.exists():
                marker.touch()  # fails once: sent again, it is answered
                results.append({"custom_id": custom_id, "error": "injected batch failure"})
                continue
            messages = [Message.model_validate(m) for m in request["messages"]]
            params = GenerationParams.model_validate(request["params"])
            reply = await self.model.complete(messages, params)
            results.append({"custom_id": custom_id, "reply": reply.model_dump(mode="json")})
            billed.append(custom_id)
        data["state"] = "expired" if expired else "ended"
        data["results"] = results
        data["billed"] = billed

    async def results(self, batch_id: str) -> list[BatchResult]:
        data = _read(self._path(batch_id))
        out: list[BatchResult] = []
        for result in data.get("results") or []:
            if "reply" in result:
                reply = Reply.model_validate(result["reply"])
                out.append(BatchResult(result["custom_id"], reply, None))
            else:
                out.append(BatchResult(result["custom_id"], None, ServerError(result["error"])))
        return out

    async def aclose(self) -> None:
        await self.model.aclose()


def _request_json(request: BatchRequest) -> dict[str, Any]:
    return {
        "custom_id": request.custom_id,
        "messages": [m.model_dump(mode="json") for m in request.messages],
        "params": request.params.model_dump(mode="json", exclude_none=True),
    }


def _status(data: dict[str, Any]) -> BatchStatus:
    state: BatchState = data["state"]
    results = data.get("results") or []
    failed = sum(1 for r in results if "error" in r)
    return BatchStatus(
        state=state,
        vendor_state=state,
        total=len(data["requests"]),
        completed=len(results) - failed,
        failed=failed,
    )


register_batch_client("sim", SimBatchClient)
