"""Anthropic (``anthropic:claude-3-5-haiku-latest``) through ``anthropic.AsyncAnthropic``.

The Messages API takes the system prompt out of band and requires ``max_tokens``; it has
no seed. SDK retries are off (``max_retries=0``). The base URL comes from the model's
``base_url`` option, else the SDK's own ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anthropic

from harness.models.providers._base import RawReply, VendorModel, split_system
from harness.models.providers._errors import error_in_body, refused
from harness.models.providers._options import VendorOptions, read_key
from harness.models.providers._pool import stainless_pool
from harness.models.providers._sdk_errors import translate_stainless
from harness.vocabulary.errors import (
    MalformedResponseError,
    ModelError,
)
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

DEFAULT_MAX_TOKENS = 1024  # the API has no default; this bounds cost when a relation sets none


ANSWER_TOOL = "answer"


class AnthropicModel(VendorModel):
    vendor = "anthropic"

    def __init__(self, spec: ModelSpec, options: VendorOptions, key: str) -> None:
        super().__init__(spec, options, key)
        self.clients = stainless_pool(
            anthropic.AsyncAnthropic,
            anthropic.DefaultAsyncHttpxClient,
            key=key,
            base_url=self.endpoint.url,  # options, else ANTHROPIC_BASE_URL, else the default
            timeout=options.timeout,
            max_in_flight=spec.max_in_flight,
        )
        self.client = self.clients.first

    def request(self, messages: Sequence[Message], params: GenerationParams) -> dict[str, Any]:
        """The Messages API request's arguments (``extra_body`` holds the sampling ones)."""
        system, turns = split_system(messages)
        request: dict[str, Any] = {
            "model": self.identifier,
            "max_tokens": params.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": m.role, "content": m.content} for m in turns],
        }
        if system is not None:
            request["system"] = system
        # This SDK release dropped the sampling arguments from its signature (newer Claude
        # models fix them); the API still takes them for the models that allow them.
        sampling = {"temperature": params.temperature, "top_p": params.top_p}
        extra = {k: v for k, v in sampling.items() if v is not None}
        if extra:
            request["extra_body"] = extra
        shape = params.answer_shape
        if shape is not None:
            # A forced call of one tool whose input schema is the answer's shape.
            request["tools"] = [
                {
                    "name": ANSWER_TOOL,
                    "description": "Give your answer.",
                    "input_schema": shape.json_schema(),
                }
            ]
            request["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
        return request

    async def _send(self, messages: Sequence[Message], params: GenerationParams) -> RawReply:
        request = self.request(messages, params)
        with self.clients.lease() as client:
            message = await client.messages.create(**request)
        return self.parse(message, structured=params.answer_shape is not None)

    def parse(self, message: object, *, structured: bool) -> RawReply:
        """A message's text (a forced tool call's input when ``structured``), usage and stop
        reason; the error a refusal or an error body stands for. Shared with the batch client
        (harness.models.providers._anthropic_batch), whose results hold the same message."""
        request_id = getattr(message, "_request_id", None) or getattr(message, "id", None)
        failed = error_in_body(message, secrets=self._secrets)
        if failed is not None:
            raise failed
        content = getattr(message, "content", None)
        stop_reason = getattr(message, "stop_reason", None)
        if stop_reason == "refusal":
            raise refused("stop_reason refusal", request_id=request_id)
        if not isinstance(content, list) or stop_reason is None:
            raise MalformedResponseError(
                "reply has no content or no stop_reason", request_id=request_id
            )
        text = "".join(block.text for block in content if getattr(block, "type", None) == "text")
        if structured:
            calls = [b for b in content if getattr(b, "type", None) == "tool_use"]
            if calls:  # the structured answer is the tool call's input
                text = json.dumps(getattr(calls[0], "input", None), ensure_ascii=False)
        usage = getattr(message, "usage", None)
        return RawReply(
            text=text,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            finish_reason=stop_reason,
            request_id=request_id,
        )

    def _translate(self, exc: BaseException) -> ModelError | None:
        return translate_stainless(exc, anthropic, secrets=self._secrets)

    async def aclose(self) -> None:
        for client in self.clients.clients:
            await client.close()


def build_anthropic(spec: ModelSpec) -> AnthropicModel:
    options = AnthropicModel.options_for(spec)
    key = read_key(("ANTHROPIC_API_KEY",), f"models[{spec.name}]", option=options.api_key_env)
    return AnthropicModel(spec, options, key)
