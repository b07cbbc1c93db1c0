"""``python:package.module:function`` targets: an application's own Python entry point as
the model under test (docs/targets.md).

The function is imported from the harness's own environment (an installed package, or a
directory on PYTHONPATH) when the campaign is loaded and when the model is built (an
import that fails is a `ConfigError` naming the field, before the first call). It is called
with the request's messages (a list of ``{"role", "content"}`` dicts: the system prompt and
template of the model already applied) and its sampling parameters (a dict of the ones
set), and returns the reply's text, or an object (or mapping) with ``text`` and optionally
``input_tokens`` / ``output_tokens``. A coroutine function is awaited; a plain function
runs in a worker thread, so it never blocks the engine. What it raises is translated once,
here: a `ModelError` it raises passes as it is, a timeout and a lost connection are their
retryable kinds, anything else is a ``python_error`` that is not retried (the same
function given the same request fails the same way), its type and message recorded with
credentials removed.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.vocabulary.errors import (
    ConfigError,
    ConnectionFailedError,
    MalformedResponseError,
    ModelError,
    ModelTimeoutError,
    redact,
)
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    ModelSpec,
    Reply,
    Usage,
    recordable_reply,
)

_FORMAT = "python:package.module:function"


class PythonTargetError(ModelError):
    """The target function raised something that is not one of the harness's kinds."""

    kind = "python_error"


def resolve_target(identifier: str, where: str) -> Callable[..., Any]:
    """The function ``identifier`` ("package.module:function", attributes dotted) names,
    or a `ConfigError` naming ``where``."""
    module_name, _, attribute = identifier.partition(":")
    if not module_name or not attribute:
        raise ConfigError(
            f"{identifier!r} does not name a function",
            field=where,
            fix=f'name it as "{_FORMAT}", e.g. "python:myapp.assistant:answer"',
        )
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or the module failed while importing
        raise ConfigError(
            f"module {module_name!r} cannot be imported ({type(exc).__name__}: {exc})",
            field=where,
            fix="install the package in the harness's environment (pip install -e .), or "
            "put its directory on PYTHONPATH, and check the module's name",
        ) from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise ConfigError(
                f"module {module_name!r} has no {attribute!r}",
                field=where,
                fix=f"check the function's name after the colon ({_FORMAT})",
            ) from exc
    if not callable(target):
        raise ConfigError(
            f"{identifier!r} is not callable", field=where, fix=f"name a function ({_FORMAT})"
        )
    return target  # type: ignore[no-any-return]


def _usage_of(result: Any, messages: Sequence[Message], text: str) -> Usage:
    """The usage a result reports, else the 4-characters-a-token estimate."""

    def field(name: str) -> Any:
        if isinstance(result, Mapping):
            return result.get(name)
        usage = getattr(result, "usage", None)
        if usage is not None and getattr(usage, name, None) is not None:
            return getattr(usage, name)
        return getattr(result, name, None)

    counted_in, counted_out = field("input_tokens"), field("output_tokens")
    chars = sum(len(m.content) for m in messages)
    return Usage(
        input_tokens=int(counted_in) if isinstance(counted_in, int) else chars // 4 + 1,
        output_tokens=int(counted_out) if isinstance(counted_out, int) else len(text) // 4 + 1,
    )


def reply_from(result: Any, messages: Sequence[Message]) -> Reply:
    """A target function's return value as a `Reply` (a `MalformedResponseError` when it
    holds no text)."""
    if isinstance(result, Reply):
        return result
    text = result if isinstance(result, str) else None
    if text is None:
        text = result.get("text") if isinstance(result, Mapping) else getattr(result, "text", None)
    if not isinstance(text, str):
        raise MalformedResponseError(
            f"the target returned {type(result).__name__}, not text (return a str, or an "
            "object or mapping with a str 'text')"
        )
    return Reply(text=text, usage=_usage_of(result, messages, text), finish_reason="stop")


def translate(exc: Exception) -> ModelError:
    """What the target raised, as the error the engine logs and retries (or not)."""
    if isinstance(exc, ModelError):
        return exc
    message = redact(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, TimeoutError):
        return ModelTimeoutError(message)
    if isinstance(exc, ConnectionError):
        return ConnectionFailedError(message)
    return PythonTargetError(message)


class PythonTarget:
    """A model whose calls are calls of one Python function."""

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self.name = name
        self.function = function
        self._is_async = inspect.iscoroutinefunction(function)

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        plain = [{"role": m.role, "content": m.content} for m in messages]
        arguments = params.model_dump(mode="json", exclude_none=True)
        started = time.monotonic()
        try:
            if self._is_async:
                result = await self.function(plain, arguments)
            else:
                result = await asyncio.to_thread(self.function, plain, arguments)
                if inspect.isawaitable(result):  # a callable object with an async __call__
                    result = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise translate(exc) from exc
        reply = reply_from(result, messages)
        if not reply.latency_s:
            reply = reply.model_copy(update={"latency_s": time.monotonic() - started})
        return recordable_reply(reply)

    async def aclose(self) -> None:
        return None


def check_python_options(spec: ModelSpec, where: str) -> None:
    """A ``python:`` model takes no options: its function is its whole configuration."""
    if spec.options:
        raise ConfigError(
            f"{spec.name} is a Python function; it takes no options",
            field=f"{where}.options",
            fix="remove options (configure the function in its own module or environment)",
        )


def build_python(spec: ModelSpec) -> PythonTarget:
    where = f"models[{spec.name}].name"
    check_python_options(spec, f"models[{spec.name}]")
    return PythonTarget(spec.name, resolve_target(spec.identifier, where))
