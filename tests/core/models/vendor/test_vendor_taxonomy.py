"""No SDK exception may reach the engine untranslated.

Two nets: (1) every exception class each SDK defines for HTTP-level failures is
constructed, raised from inside the adapter's SDK call, and must come out as a *specific*
harness error (not the last-resort `ModelError`); (2) an exception class a later SDK release
might add under one of the base classes is caught by its parent's rule in the shared
translators (harness/models/providers/_sdk_errors.py).
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Iterator
from typing import Any, cast

import anthropic
import httpx2
import openai
import pytest
from google.genai import errors as genai_errors

from harness.models.providers import AnthropicModel, GeminiModel, OpenAIChatModel
from harness.models.providers._errors import class_for_status
from harness.vocabulary import errors
from harness.vocabulary.errors import ModelError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

REQUEST = httpx2.Request("POST", "http://127.0.0.1:9/v1/x")
MESSAGES = [Message(role="user", content="hi")]


def _response(status: int) -> httpx2.Response:
    return httpx2.Response(
        status, request=REQUEST, json={"error": {"message": "m"}}, headers={"retry-after": "2"}
    )


def _status_of(cls: type[Exception], default: int) -> int:
    status = getattr(cls, "status_code", None)
    return status if isinstance(status, int) else default


def _sdk_exceptions(
    module: Any, base: type[Exception]
) -> Iterator[tuple[Exception, type[ModelError]]]:
    """An instance of every HTTP-level exception class the SDK exports, and its translation."""
    defined = importlib.import_module(f"{module.__name__}._exceptions")
    classes: set[Any] = {
        obj
        for obj in list(vars(defined).values())
        if inspect.isclass(obj) and issubclass(obj, base)
    }
    assert len(classes) >= 10, f"found only {len(classes)} exception classes in {module.__name__}"
    for cls in sorted(classes, key=lambda c: c.__name__):
        if issubclass(cls, module.APITimeoutError):
            yield cls(request=REQUEST), errors.ModelTimeoutError
        elif issubclass(cls, module.APIConnectionError):
            yield cls(request=REQUEST), errors.ConnectionFailedError
        elif issubclass(cls, module.APIResponseValidationError):
            yield cls(response=_response(200), body=None), errors.MalformedResponseError
        elif issubclass(cls, module.APIStatusError):
            default = 500 if "Server" in cls.__name__ or "Overloaded" in cls.__name__ else 418
            names = {
                "ServiceUnavailableError": 503,
                "OverloadedError": 529,
                "GatewayTimeoutError": 504,
                "HTTPNotImplementedError": 501,
            }
            status = names.get(cls.__name__, _status_of(cls, default))
            params = inspect.signature(cls.__init__).parameters
            if "message" in params:
                exc = cls("m", response=_response(status), body=None)
            else:
                exc = cls(response=_response(status), body=None)
            yield exc, class_for_status(status)
        elif cls is module.APIError:
            continue  # abstract in practice: always raised as a subclass
        elif hasattr(module, "ContentFilterFinishReasonError") and issubclass(
            cls, module.ContentFilterFinishReasonError
        ):
            yield cls(), errors.ContentRefusedError


class _Raising:
    """Stands in for an SDK resource method; raises the given exception when called."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def __call__(self, *_args: Any, **_kwargs: Any) -> Any:
        raise self.exc


def _openai_model(monkeypatch: pytest.MonkeyPatch) -> OpenAIChatModel:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    from harness.models.providers._openai import build_openai

    spec = ModelSpec(name="openai:gpt-4o-mini", options={"base_url": "http://127.0.0.1:9/v1"})
    return cast(OpenAIChatModel, build_openai(spec))


def _anthropic_model(monkeypatch: pytest.MonkeyPatch) -> AnthropicModel:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    from harness.models.providers._anthropic import build_anthropic

    spec = ModelSpec(name="anthropic:claude-haiku-4-5", options={"base_url": "http://127.0.0.1:9"})
    return cast(AnthropicModel, build_anthropic(spec))


def _gemini_model(monkeypatch: pytest.MonkeyPatch) -> GeminiModel:
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaTEST0123456789abcdef")
    from harness.models.providers._google import build_gemini

    spec = ModelSpec(name="google:gemini-2.0-flash", options={"base_url": "http://127.0.0.1:9"})
    return cast(GeminiModel, build_gemini(spec))


@pytest.mark.parametrize(
    ("exc", "expected"),
    list(_sdk_exceptions(openai, openai.OpenAIError)),
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v.__name__,
)
async def test_every_openai_exception_is_translated(
    exc: Exception, expected: type[ModelError], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _openai_model(monkeypatch)
    monkeypatch.setattr(model.client, "post", _Raising(exc))
    with pytest.raises(ModelError) as caught:
        await model.complete(MESSAGES, GenerationParams())
    assert type(caught.value) is expected


@pytest.mark.parametrize(
    ("exc", "expected"),
    list(_sdk_exceptions(anthropic, anthropic.AnthropicError)),
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v.__name__,
)
async def test_every_anthropic_exception_is_translated(
    exc: Exception, expected: type[ModelError], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _anthropic_model(monkeypatch)
    monkeypatch.setattr(model.client.messages, "create", _Raising(exc))
    with pytest.raises(ModelError) as caught:
        await model.complete(MESSAGES, GenerationParams())
    assert type(caught.value) is expected


def _gemini_cases() -> Iterator[tuple[Exception, type[ModelError]]]:
    for status in (400, 401, 403, 404, 408, 422, 429, 500, 502, 503, 504, 529):
        cls = genai_errors.ClientError if status < 500 else genai_errors.ServerError
        body = {"error": {"code": status, "message": "m", "status": "X"}}
        yield cls(status, body, _response(status)), class_for_status(status)
    yield genai_errors.APIError(599, {"message": "m"}), errors.ServerError
    bad_key = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ],
        }
    }
    yield genai_errors.ClientError(400, bad_key, _response(400)), errors.AuthenticationError
    yield genai_errors.UnknownApiResponseError("bad"), errors.MalformedResponseError
    # google-genai lets transport and JSON failures through as they are.
    yield httpx2.ReadTimeout("t", request=REQUEST), errors.ModelTimeoutError
    yield httpx2.ConnectTimeout("t", request=REQUEST), errors.ModelTimeoutError
    yield httpx2.ReadError("r", request=REQUEST), errors.ConnectionFailedError
    yield httpx2.ConnectError("c", request=REQUEST), errors.ConnectionFailedError
    yield httpx2.RemoteProtocolError("p", request=REQUEST), errors.ConnectionFailedError
    yield json.JSONDecodeError("x", "{", 0), errors.MalformedResponseError


@pytest.mark.parametrize(
    ("exc", "expected"),
    list(_gemini_cases()),
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v.__name__,
)
async def test_every_gemini_failure_is_translated(
    exc: Exception, expected: type[ModelError], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _gemini_model(monkeypatch)
    monkeypatch.setattr(model.client.aio.models, "generate_content", _Raising(exc))
    with pytest.raises(ModelError) as caught:
        await model.complete(MESSAGES, GenerationParams())
    assert type(caught.value) is expected


async def test_an_unknown_exception_is_still_a_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _openai_model(monkeypatch)
    monkeypatch.setattr(model.client, "post", _Raising(openai.OpenAIError("?")))
    with pytest.raises(ModelError) as caught:
        await model.complete(MESSAGES, GenerationParams())
    assert caught.value.kind == "model_error" and not caught.value.retryable
    assert isinstance(caught.value.__cause__, openai.OpenAIError)


def _future_subclasses() -> Iterator[tuple[Any, Exception, type[ModelError]]]:
    """Instances of exception classes an SDK release might add under each base class."""
    for sdk in (openai, anthropic):
        new = {
            base: type(f"Future{base}", (getattr(sdk, base),), {})
            for base in (
                "APITimeoutError",
                "APIConnectionError",
                "APIStatusError",
                "APIResponseValidationError",
            )
        }
        yield sdk, new["APITimeoutError"](request=REQUEST), errors.ModelTimeoutError
        yield sdk, new["APIConnectionError"](request=REQUEST), errors.ConnectionFailedError
        yield (
            sdk,
            new["APIStatusError"]("m", response=_response(500), body=None),
            errors.ServerError,
        )
        yield (
            sdk,
            new["APIResponseValidationError"](response=_response(200), body=None),
            errors.MalformedResponseError,
        )
    future_api_error = type("FutureAPIError", (genai_errors.APIError,), {})
    yield (
        genai_errors,
        future_api_error(429, {"error": {"message": "m"}}, None),
        (errors.RateLimitedError),
    )


@pytest.mark.parametrize(("sdk", "exc", "expected"), list(_future_subclasses()))
def test_a_new_sdk_subclass_is_caught_by_its_parents_rule(
    sdk: Any, exc: Exception, expected: type[ModelError]
) -> None:
    from harness.models.providers._sdk_errors import translate_genai, translate_stainless

    translated = translate_genai(exc) if sdk is genai_errors else translate_stainless(exc, sdk)
    assert type(translated) is expected


def test_retryable_kinds_match_the_retry_policy() -> None:
    from harness.running.retry import RetryPolicy

    policy = RetryPolicy()
    assert policy.decide(errors.BadRequestError("x"), 1).action == "give_up"
    assert policy.decide(errors.NotFoundError("x"), 1).action == "give_up"
    assert policy.decide(errors.ContentRefusedError("x"), 1).action == "give_up"
    assert policy.decide(errors.AuthenticationError("x"), 1).action == "abort"
    wait = policy.decide(errors.RateLimitedError("x", retry_after=3.5), 1)
    assert (wait.action, wait.wait_s) == ("retry", 3.5)
