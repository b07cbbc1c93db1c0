"""OpenAI (``openai:gpt-4o-mini``) and OpenAI-compatible servers (``openai-compat:NAME``).

Both use ``openai.AsyncOpenAI`` and chat completions with the SDK's own retries off
(``max_retries=0``): the engine retries and logs every attempt. ``openai-compat`` never
sends ``OPENAI_API_KEY`` (a real key must not go to a third-party or local server); it uses
the variable named by ``api_key_env`` or none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from harness.models.providers._base import RawReply, VendorModel
from harness.models.providers._errors import error_in_body, refused
from harness.models.providers._options import VendorOptions, read_key
from harness.models.providers._pool import stainless_pool
from harness.models.providers._sdk_errors import translate_stainless
from harness.vocabulary.errors import (
    ConfigError,
    MalformedResponseError,
    ModelError,
)
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

_REFUSAL_CODES = {"content_filter", "content_policy_violation"}


class OpenAIChatModel(VendorModel):
    vendor = "openai"

    def __init__(self, spec: ModelSpec, options: VendorOptions, key: str, *, compat: bool) -> None:
        super().__init__(spec, options, key)
        self.compat = compat
        self.clients = stainless_pool(
            openai.AsyncOpenAI,
            openai.DefaultAsyncHttpxClient,
            key=key,
            base_url=self.endpoint.url,  # options, else OPENAI_BASE_URL, else the default
            timeout=options.timeout,
            max_in_flight=spec.max_in_flight,
        )
        self.client = self.clients.first

    def request(self, messages: Sequence[Message], params: GenerationParams) -> dict[str, Any]:
        """The chat completion request's JSON body."""
        request: dict[str, Any] = {
            "model": self.identifier,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        if params.temperature is not None:
            request["temperature"] = params.temperature
        if params.top_p is not None:
            request["top_p"] = params.top_p
        if params.seed is not None:
            request["seed"] = params.seed
        if params.max_tokens is not None:
            # Current OpenAI models reject max_tokens; compatible servers only know it.
            request["max_tokens" if self.compat else "max_completion_tokens"] = params.max_tokens
        if params.answer_shape is not None:
            schema = params.answer_shape.json_schema()
            if self.options.response_format == "json_object":
                request["response_format"] = {"type": "json_object", "schema": schema}
            else:  # OpenAI structured outputs, and the servers that copy them
                request["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema, "strict": True},
                }
        return request

    async def _send(self, messages: Sequence[Message], params: GenerationParams) -> RawReply:
        # The SDK's generic `post` with the body as built, not `chat.completions.create`:
        # create() walks its ~40 typed parameters to transform the body (10-12 % of the CPU of
        # a call at hundreds of calls a second), and for the plain JSON sent here that
        # transform is the identity (tests/core/models/vendor/test_vendor_adapters.py checks it).
        with self.clients.lease() as client:
            completion = await client.post(
                "/chat/completions", body=self.request(messages, params), cast_to=ChatCompletion
            )
        return self.parse(completion)

    def parse(self, completion: object) -> RawReply:
        """A chat completion's text, usage and finish reason; the error a refusal, a body
        that is an error object or a reply without choices stands for. Shared with the batch
        client (harness.models.providers._openai_batch), whose results hold the same body."""
        if not isinstance(completion, ChatCompletion):
            raise MalformedResponseError(
                f"reply is not a chat completion ({type(completion).__name__})"
            )
        request_id = getattr(completion, "_request_id", None) or getattr(completion, "id", None)
        failed = error_in_body(completion, secrets=self._secrets)
        if failed is not None:
            raise failed
        if not getattr(completion, "choices", None):
            raise MalformedResponseError("reply has no choices", request_id=request_id)
        choice = completion.choices[0]
        if choice.finish_reason == "content_filter":
            raise refused("finish_reason content_filter", request_id=request_id)
        message = choice.message
        if getattr(message, "refusal", None):
            raise refused("the model returned a refusal", request_id=request_id)
        usage = completion.usage
        return RawReply(
            text=message.content or "",
            input_tokens=usage.prompt_tokens if usage is not None else None,
            output_tokens=usage.completion_tokens if usage is not None else None,
            finish_reason=choice.finish_reason,
            request_id=request_id,
        )

    def _translate(self, exc: BaseException) -> ModelError | None:
        if isinstance(exc, openai.APIStatusError) and exc.code in _REFUSAL_CODES:
            return refused(f"HTTP {exc.status_code} {exc.code}", request_id=exc.request_id)
        if isinstance(exc, openai.ContentFilterFinishReasonError):
            return refused("content filter")
        if isinstance(exc, openai.LengthFinishReasonError):
            return MalformedResponseError("reply cut off at the length limit")
        return translate_stainless(exc, openai, secrets=self._secrets)

    async def aclose(self) -> None:
        for client in self.clients.clients:
            await client.close()


def build_openai(spec: ModelSpec) -> OpenAIChatModel:
    options = OpenAIChatModel.options_for(spec)
    key = read_key(("OPENAI_API_KEY",), f"models[{spec.name}]", option=options.api_key_env)
    return OpenAIChatModel(spec, options, key, compat=False)


def build_openai_compat(spec: ModelSpec) -> OpenAIChatModel:
    options = OpenAIChatModel.options_for(spec)
    if not options.base_url:
        raise ConfigError(
            f"{spec.name} needs the server's address",
            field=f"models[{spec.name}].options.base_url",
            fix='add options = { base_url = "http://127.0.0.1:8080/v1" } (Ollama: :11434/v1)',
        )
    key = "not-needed"  # local servers ignore it, but the SDK insists on one
    if options.api_key_env:
        key = read_key((), f"models[{spec.name}]", option=options.api_key_env)
    return OpenAIChatModel(spec, options, key, compat=True)
