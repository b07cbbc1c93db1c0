"""Options of an ``http:`` target (an application's own JSON endpoint; docs/targets.md).

An `HttpOptions` is a `VendorOptions`: rate, token and cost budgets, adaptive concurrency
and the timeout work as for a vendor. What is its own: the URL and method, headers (a
secret only as a ``${VARIABLE}`` reference, read from the environment when the model is
built), the JSON body template with its placeholders, the paths of the reply text (and the
usage, the conversation id) in the JSON response, and the status codes that mean "rate
limited".
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from harness.models.providers._option_fields import VendorOptions
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import PROMPT_PLACEHOLDER

MESSAGES = "{messages}"
CONVERSATION_ID = "{conversation_id}"
# Placeholders replaced by a JSON value when they are a whole string of the body; the text
# ones are also replaced inside a longer string.
VALUE_PLACEHOLDERS = (
    MESSAGES,
    "{params}",
    "{temperature}",
    "{max_tokens}",
    "{seed}",
    "{top_p}",
)
TEXT_PLACEHOLDERS = (PROMPT_PLACEHOLDER, "{system}", CONVERSATION_ID)

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Headers whose value is a credential: written only as ``${VARIABLE}`` references.
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|session|password", re.IGNORECASE)
_PATH_PART = re.compile(r"[^.\[\]]+|\[\d+\]")


def parse_path(path: str) -> tuple[str | int, ...]:
    """``"reply.text"``, ``"choices[0].message.content"`` or ``"$.a.0.b"`` as its keys
    (a list index as an int). A `ValueError` when it is not one."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:].lstrip(".")
    if not text:
        raise ValueError("is empty; give the keys to the reply, e.g. 'reply.text'")
    parts: list[str | int] = []
    for piece in text.split("."):
        found = _PATH_PART.findall(piece)
        if not piece or "".join(found) != piece:
            raise ValueError(f"{path!r} is not a path like 'data.answer' or 'choices[0].text'")
        for part in found:
            if part.startswith("["):
                parts.append(int(part[1:-1]))
            elif part.isdigit():
                parts.append(int(part))
            else:
                parts.append(part)
    return tuple(parts)


_MISSING = object()


def find(document: Any, path: tuple[str | int, ...]) -> Any:
    """The value at ``path`` in a JSON document, or `MISSING`."""
    value = document
    for part in path:
        if isinstance(part, int) and isinstance(value, list) and -len(value) <= part < len(value):
            value = value[part]
        elif isinstance(value, dict) and str(part) in value:
            value = value[str(part)]
        else:
            return _MISSING
    return value


MISSING = _MISSING


def _mentions(template: Any, placeholder: str) -> bool:
    if isinstance(template, str):
        return placeholder in template
    if isinstance(template, dict):
        return any(
            _mentions(k, placeholder) or _mentions(v, placeholder) for k, v in template.items()
        )
    if isinstance(template, list):
        return any(_mentions(v, placeholder) for v in template)
    return False


class HttpOptions(VendorOptions):
    """``[[models]] name = "http:NAME"`` options (see the module)."""

    url: str
    method: Literal["POST", "PUT", "PATCH"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body: dict[str, Any] | list[Any]
    reply_path: str
    input_tokens_path: str | None = None
    output_tokens_path: str | None = None
    rate_limit_status: tuple[int, ...] = (429,)
    conversation: Literal["history", "id"] = "history"
    conversation_id_path: str | None = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator(
        "reply_path", "input_tokens_path", "output_tokens_path", "conversation_id_path"
    )
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_path(value)
        return value

    @field_validator("rate_limit_status")
    @classmethod
    def _statuses(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(not 400 <= status <= 599 for status in value):
            raise ValueError("must be HTTP error statuses (400-599), e.g. [429, 503]")
        return value

    @model_validator(mode="after")
    def _coherent(self) -> HttpOptions:
        if self.base_url is not None or self.api_key_env is not None:
            raise ValueError(
                "an http: target takes url (not base_url) and secrets as ${VARIABLE} "
                "references in headers (not api_key_env)"
            )
        return self


def check_http_options(options: HttpOptions, where: str) -> None:
    """What pydantic cannot say with the field and the fix: the prompt's placeholder, the
    conversation id's path, credentials written into headers."""
    if not (_mentions(options.body, PROMPT_PLACEHOLDER) or _mentions(options.body, MESSAGES)):
        raise ConfigError(
            f"the body template has neither {PROMPT_PLACEHOLDER} nor {MESSAGES}: the ask "
            "would never be sent",
            field=f"{where}.options.body",
            fix=f'put "{PROMPT_PLACEHOLDER}" where the user\'s text goes (or "{MESSAGES}" '
            'for the whole conversation), e.g. body = { question = "{prompt}" }',
        )
    if options.conversation == "id":
        if options.conversation_id_path is None:
            raise ConfigError(
                'conversation = "id" needs the path of the id in the response',
                field=f"{where}.options.conversation_id_path",
                fix='e.g. conversation_id_path = "session.id"',
            )
        if not (_mentions(options.body, CONVERSATION_ID) or CONVERSATION_ID in options.url):
            raise ConfigError(
                f'conversation = "id" but neither the body nor the url has {CONVERSATION_ID}',
                field=f"{where}.options.body",
                fix=f'add "{CONVERSATION_ID}" where the endpoint takes its conversation id',
            )
    for name, value in options.headers.items():
        if _SECRET_HEADER.search(name) and not _ENV_REF.search(value):
            raise ConfigError(
                f"header {name} holds a credential written in the campaign file (it would "
                "be logged)",
                field=f"{where}.options.headers.{name}",
                fix='write it as a reference to an environment variable, e.g. "Bearer '
                '${APP_TOKEN}", and export APP_TOKEN',
            )


def resolved_headers(options: HttpOptions, where: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """The headers with every ``${VARIABLE}`` read from the environment, and the values
    read (kept out of every error message)."""
    secrets: list[str] = []
    out: dict[str, str] = {}
    for name, value in options.headers.items():

        def read(match: re.Match[str], header: str = name) -> str:
            variable = match.group(1)
            found = os.environ.get(variable, "")
            if not found:
                raise ConfigError(
                    f"environment variable {variable} is not set",
                    field=f"{where}.options.headers.{header}",
                    fix=f"export {variable}=<value> before running (secrets come from the "
                    "environment only)",
                )
            secrets.append(found)
            return found

        out[name] = _ENV_REF.sub(read, value)
    return out, tuple(secrets)
