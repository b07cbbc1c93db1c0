"""Google Gemini (``google:gemini-2.0-flash``) through ``google-genai``'s async client.

Not the deprecated ``google-generativeai``. Retries are off with
``HttpRetryOptions(attempts=1)``; the base URL comes from the ``base_url`` option, else the
SDK's own ``GOOGLE_GEMINI_BASE_URL``. Keys: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

import httpx2
from google import genai
from google.genai import types

from harness.models.providers._base import RawReply, VendorModel, split_system
from harness.models.providers._errors import error_in_body, refused
from harness.models.providers._options import VendorOptions, read_key
from harness.models.providers._pool import ClientPool, pool_limits
from harness.models.providers._sdk_errors import translate_genai
from harness.vocabulary.errors import MalformedResponseError, ModelError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

_REFUSED_FINISH = {
    "SAFETY",
    "PROHIBITED_CONTENT",
    "BLOCKLIST",
    "SPII",
    "RECITATION",
    "IMAGE_SAFETY",
}


class _ErrorBodyTransport(httpx2.AsyncHTTPTransport):
    """The SDK's transport, with a 200 whose body is an error object (``{"error": {"code":
    503, "message": "model overloaded"}}``) given the error's status: the Gemini SDK drops
    the fields of a 200 it does not know, so the vendor's message would be lost, and the
    failure would read "no candidates". With the status, the SDK raises its own API error,
    with the message, and `translate_genai` classifies it as for any error status."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await super().handle_async_request(request)
        if response.status_code != 200:
            return response
        body = await response.aread()
        if not body.lstrip()[:10].startswith(b'{"error"'):
            return response
        status = 503
        with contextlib.suppress(ValueError, TypeError, AttributeError, RecursionError):
            data = json.loads(body)
            error = data["error"]
            code = error.get("code")
            if isinstance(code, int) and 400 <= code <= 599:
                status = code
            # The recorded failure says where the error came from: a 200, not a real 503.
            error["message"] = f"(in a 200 reply) {error.get('message', '')}"
            body = json.dumps(data).encode()
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return httpx2.Response(
            status, headers=headers, content=body, request=request,
            extensions=response.extensions,
        )  # fmt: skip


def _name(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema in the OpenAPI subset Gemini's ``response_schema`` takes: no
    ``additionalProperties``, and ``enum`` only on strings (an integer enum becomes a range)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "additionalProperties":
            continue
        if key == "properties":
            out[key] = {k: gemini_schema(v) for k, v in value.items()}
        elif key == "items":
            out[key] = gemini_schema(value)
        else:
            out[key] = value
    enum = out.get("enum")
    if out.get("type") == "integer" and enum:
        del out["enum"]
        out["minimum"], out["maximum"] = min(enum), max(enum)
    return out


class GeminiModel(VendorModel):
    vendor = "google"

    def __init__(self, spec: ModelSpec, options: VendorOptions, key: str) -> None:
        super().__init__(spec, options, key)

        def make(connections: int) -> genai.Client:
            http = types.HttpOptions(
                base_url=self.endpoint.url,  # options, else GOOGLE_GEMINI_BASE_URL, else default
                timeout=int(options.timeout * 1000) if options.timeout else None,
                retry_options=types.HttpRetryOptions(attempts=1),
                # The SDK builds its httpx2 client with these arguments: connections sized by
                # max_in_flight (harness.models.providers._pool). Giving a transport also keeps the
                # SDK on httpx2 when aiohttp is importable (it would switch to an unlimited
                # aiohttp session that keeps every connection).
                async_client_args={
                    "transport": _ErrorBodyTransport(limits=pool_limits(connections))
                },
            )
            return genai.Client(api_key=key, vertexai=False, http_options=http)

        self.clients = ClientPool(make, spec.max_in_flight)
        self.client = self.clients.first

    def request(
        self, messages: Sequence[Message], params: GenerationParams
    ) -> tuple[list[types.Content], types.GenerateContentConfig]:
        """The contents and generation config of a ``generate_content`` call."""
        system, turns = split_system(messages)
        contents = [
            types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[types.Part(text=m.content)],
            )
            for m in turns
        ]
        config = types.GenerateContentConfig(
            system_instruction=system,
            temperature=params.temperature,
            top_p=params.top_p,
            max_output_tokens=params.max_tokens,
            seed=params.seed,
        )
        if params.answer_shape is not None:
            config.response_mime_type = "application/json"
            config.response_schema = gemini_schema(params.answer_shape.json_schema())
        return contents, config

    async def _send(self, messages: Sequence[Message], params: GenerationParams) -> RawReply:
        contents, config = self.request(messages, params)
        with self.clients.lease() as client:
            response = await client.aio.models.generate_content(
                model=self.identifier, contents=contents, config=config
            )
        return self.parse(response)

    def parse(self, response: types.GenerateContentResponse) -> RawReply:
        """A response's text, usage and finish reason; the error a blocked prompt, a refusal
        or an error body stands for. Shared with the batch client
        (harness.models.providers._google_batch), whose inlined responses are the same."""
        request_id = response.response_id
        failed = error_in_body(response, secrets=self._secrets)
        if failed is not None:
            raise failed
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            raise refused(f"prompt blocked: {_name(feedback.block_reason)}", request_id=request_id)
        if not response.candidates:
            raise MalformedResponseError("reply has no candidates", request_id=request_id)
        candidate = response.candidates[0]
        finish = _name(candidate.finish_reason)
        if finish in _REFUSED_FINISH:
            raise refused(f"finish_reason {finish}", request_id=request_id)
        parts = candidate.content.parts if candidate.content is not None else None
        text = "".join(p.text for p in parts or [] if p.text and not p.thought)
        usage = response.usage_metadata
        output = None
        if usage is not None and usage.candidates_token_count is not None:
            # Thinking tokens are billed as output.
            output = usage.candidates_token_count + (usage.thoughts_token_count or 0)
        return RawReply(
            text=text,
            input_tokens=usage.prompt_token_count if usage is not None else None,
            output_tokens=output,
            finish_reason=finish,
            request_id=request_id,
        )

    def _translate(self, exc: BaseException) -> ModelError | None:
        return translate_genai(exc, secrets=self._secrets)

    async def aclose(self) -> None:
        for client in self.clients.clients:
            await client.aio.aclose()


def build_gemini(spec: ModelSpec) -> GeminiModel:
    options = GeminiModel.options_for(spec)
    key = read_key(
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"), f"models[{spec.name}]", option=options.api_key_env
    )
    return GeminiModel(spec, options, key)
