"""``http:NAME`` targets: an application's own JSON endpoint as the model under test.

Sent with httpx2 (the HTTP client under the vendor SDKs), through the same gate, retries,
budgets, reachability and outage rules as a vendor (`VendorModel`): a status listed in
``rate_limit_status`` is a rate limit (its Retry-After honoured), other statuses are
classed as a vendor's are, a body that is not JSON is malformed. A ``reply_path`` that
matches nothing in the first reply aborts the campaign naming the field and the fix (no
call can succeed); later, it is a malformed reply, retried. Conversation state: the whole
conversation is sent each turn (``conversation = "history"``), or only the new prompt with
the endpoint's own conversation id (``"id"``), which is recorded with each reply and
carried per case and thread (`conversation_scope`; `HttpTarget.remember` primes it on
resume). A forked thread has no conversation of its own on the endpoint: a relation that
forks is refused with such a target before the first call (`harness.running.campaign`); a
thread whose earlier turns were answered elsewhere (``--reuse``) fails its turn, saying so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx2

from harness.models.providers._base import RawReply, VendorModel
from harness.models.providers._errors import class_for_status, retry_after_from_headers
from harness.models.providers._http_options import (
    MISSING,
    HttpOptions,
    find,
    parse_path,
    resolved_headers,
)
from harness.models.providers._options import parse_options
from harness.models.providers._pool import pool_limits
from harness.vocabulary.errors import (
    BadRequestError,
    MalformedResponseError,
    ModelError,
    RateLimitedError,
    TargetConfigError,
    redact,
)
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    ModelSpec,
    conversation_scope,
    request_key,
)

_TEXT = re.compile(r"\{(prompt|system|conversation_id)\}")
_NO_PARAMS = GenerationParams()
# No client-side deadline by default: the engine's call_timeout_s ends every call.
_DEFAULT_TIMEOUT_S = 3600.0


def history_key(messages: Sequence[Message]) -> str:
    """The key of a conversation so far (its conversation id is stored under it)."""
    return request_key("", messages, _NO_PARAMS)


def render(template: Any, text: dict[str, str | None], values: dict[str, Any]) -> Any:
    """The body template with its placeholders filled: a whole-string placeholder by its
    JSON value, a text placeholder inside a string by its text (one pass: a prompt that
    contains ``{system}`` stays as written)."""
    if isinstance(template, str):
        if template in values:
            return values[template]
        if template[1:-1] in text and template.startswith("{") and template.endswith("}"):
            return text[template[1:-1]]
        return _TEXT.sub(lambda m: text[m.group(1)] or "", template)
    if isinstance(template, dict):
        return {render(k, text, {}): render(v, text, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, text, values) for v in template]
    return template


class HttpTarget(VendorModel):
    vendor = "http"

    def __init__(
        self,
        spec: ModelSpec,
        options: HttpOptions,
        headers: dict[str, str],
        secrets: tuple[str, ...],
    ) -> None:
        super().__init__(spec, options, "")
        self.http = options
        self._secrets: tuple[str, ...] = secrets
        self._headers = headers
        self._where = f"models[{spec.name}].options"
        self._reply_path = parse_path(options.reply_path)
        self._paths = {
            name: parse_path(path) if path is not None else None
            for name, path in (
                ("input_tokens", options.input_tokens_path),
                ("output_tokens", options.output_tokens_path),
                ("conversation_id", options.conversation_id_path),
            )
        }
        self._answered = False
        self._conversations: dict[tuple[str | None, str], str] = {}
        self.client = httpx2.AsyncClient(
            limits=pool_limits(spec.max_in_flight),
            timeout=options.timeout or _DEFAULT_TIMEOUT_S,
        )

    def remember(
        self, conversation: Sequence[Message], conversation_id: str, scope: str | None
    ) -> None:
        """``conversation`` (a request and the reply to it) of the thread ``scope``
        (`conversation_scope`) continues as ``conversation_id`` on the endpoint: what each
        reply says, and what a resumed run reads back from the log."""
        self._conversations[(scope, history_key(conversation))] = conversation_id

    def body(
        self, messages: Sequence[Message], params: GenerationParams, conversation_id: str | None
    ) -> Any:
        """The request's JSON body (the template filled)."""
        sent = list(messages)
        if self.http.conversation == "id" and conversation_id is not None:
            sent = [m for m in messages if m.role == "system"] + [messages[-1]]
        system = "\n\n".join(m.content for m in messages if m.role == "system") or None
        prompt = messages[-1].content if messages else ""
        chosen = params.model_dump(mode="json", exclude_none=True)
        values: dict[str, Any] = {
            "{messages}": [{"role": m.role, "content": m.content} for m in sent],
            "{params}": chosen,
            "{temperature}": params.temperature,
            "{max_tokens}": params.max_tokens,
            "{seed}": params.seed,
            "{top_p}": params.top_p,
        }
        text = {"prompt": prompt, "system": system, "conversation_id": conversation_id}
        return render(self.http.body, text, values)

    def _conversation_of(self, messages: Sequence[Message]) -> str | None:
        if self.http.conversation != "id":
            return None
        before = list(messages[:-1])
        if not any(m.role == "assistant" for m in before):
            return None  # the thread's first turn: the endpoint starts a conversation
        found = self._conversations.get((conversation_scope.get(), history_key(before)))
        if found is None:
            raise BadRequestError(
                "no conversation id is known for this thread's earlier turns (a thread forked "
                "from another, or turns answered from a cache or another log); the endpoint "
                'would not know them: use conversation = "history" for this relation'
            )
        return found

    async def _send(self, messages: Sequence[Message], params: GenerationParams) -> RawReply:
        conversation = self._conversation_of(messages)
        url = self.http.url.replace("{conversation_id}", quote(conversation or "", safe=""))
        response = await self.client.request(
            self.http.method,
            url,
            json=self.body(messages, params, conversation),
            headers=self._headers,
        )
        status = response.status_code
        if status in self.http.rate_limit_status:
            raise RateLimitedError(
                f"HTTP {status} (a rate limit: options.rate_limit_status)",
                status=status,
                retry_after=retry_after_from_headers(response.headers),
            )
        if status >= 400:
            detail = redact(response.text[:300], extra=self._secrets)
            raise class_for_status(status)(
                f"HTTP {status}: {detail}",
                status=status,
                retry_after=retry_after_from_headers(response.headers),
            )
        document = json.loads(response.content)
        text = find(document, self._reply_path)
        if not isinstance(text, str):
            self._wrong_path("reply_path", self.http.reply_path, document, text)
        found_id = self._found("conversation_id", document)
        if self.http.conversation == "id" and found_id is MISSING:
            self._wrong_path("conversation_id_path", self.http.conversation_id_path, document, None)
        self._answered = True
        conversation_id = None if found_id is MISSING or found_id is None else str(found_id)
        if conversation_id is not None:
            answered = [*messages, Message(role="assistant", content=text)]
            self.remember(answered, conversation_id, conversation_scope.get())
        tokens_in, tokens_out = (
            self._found("input_tokens", document),
            self._found("output_tokens", document),
        )
        return RawReply(
            text=text,
            input_tokens=tokens_in if isinstance(tokens_in, int) else None,
            output_tokens=tokens_out if isinstance(tokens_out, int) else None,
            finish_reason="stop",
            request_id=response.headers.get("x-request-id"),
            conversation_id=conversation_id,
        )

    def _found(self, name: str, document: Any) -> Any:
        path = self._paths[name]
        return MISSING if path is None else find(document, path)

    def _wrong_path(self, option: str, path: str | None, document: Any, found: Any) -> None:
        what = "nothing" if found is MISSING or found is None else type(found).__name__
        keys = sorted(document) if isinstance(document, dict) else type(document).__name__
        message = f"{option} {path!r} matches {what} in the endpoint's reply (top level: {keys})"
        if not self._answered:
            raise TargetConfigError(
                f"{self._where}.{option}: {message} (fix: give the path of the reply's text "
                "in the response JSON, e.g. 'answer.text' or 'choices[0].message.content')"
            )
        raise MalformedResponseError(message)

    def _translate(self, exc: BaseException) -> ModelError | None:
        return None  # httpx2 and JSON failures: `from_transport`

    async def aclose(self) -> None:
        await self.client.aclose()


def build_http(spec: ModelSpec) -> HttpTarget:
    where = f"models[{spec.name}]"
    options = parse_options(spec, where)
    assert isinstance(options, HttpOptions)
    headers, secrets = resolved_headers(options, where)
    return HttpTarget(spec, options, headers, secrets)
