"""Per-model vendor options (``[[models]] options = {...}`` in a campaign file).

Validated with pydantic before the first call; errors name the field, e.g.
``models[0].options.rpm``, and say how to fix it. Keys never appear here: only the *name*
of the environment variable that holds one.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.vocabulary.config_bounds import MAX_IN_FLIGHT, MAX_SECONDS
from harness.vocabulary.config_errors import config_error
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import ModelSpec

# The schemes served by vendor SDKs (the others: sim, local, replay). Options, gates and the
# cost estimate all depend on it, so it lives here, below them.
VENDOR_SCHEMES = frozenset({"openai", "anthropic", "google", "openai-compat"})

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class VendorOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    base_url: str | None = None
    api_key_env: str | None = None  # name of the environment variable holding the key
    rpm: float | None = Field(default=None, gt=0)  # requests per minute
    tpm: float | None = Field(default=None, gt=0)  # tokens (in + out) per minute
    price_in_per_mtok: float | None = Field(default=None, ge=0)
    price_out_per_mtok: float | None = Field(default=None, ge=0)
    timeout: float | None = Field(default=None, gt=0, le=MAX_SECONDS)  # seconds per request
    adaptive: bool = True  # shrink calls in flight on 429, grow back on success
    min_in_flight: int = Field(default=1, ge=1, le=MAX_IN_FLIGHT)
    # How a structured answer's schema is sent: OpenAI, vLLM, Ollama and llama-server take
    # "json_schema"; llama-cpp-python's server takes only "json_object" with a schema.
    response_format: Literal["json_schema", "json_object"] = "json_schema"

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        # Never echo the value: someone may have pasted the key itself here.
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be the NAME of an environment variable, not a key")
        return value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value


def parse_options(spec: ModelSpec, where: str | None = None) -> VendorOptions:
    where = where or f"models[{spec.name}]"
    if "api_key" in spec.options:
        raise ConfigError(
            "a key must never be written in the campaign file (it would be logged)",
            field=f"{where}.options.api_key",
            fix="remove it; export the key in the environment and, if the variable has an "
            'unusual name, set api_key_env = "NAME"',
        )
    try:
        return VendorOptions.model_validate(spec.options)
    except ValidationError as exc:
        raise config_error(
            exc,
            fix="see docs/vendors.md",
            where=f"{where}.options",
            data=spec.options,
            known=VendorOptions.model_fields,
        ) from None


def read_key(env_names: tuple[str, ...], where: str, *, option: str | None) -> str:
    """The first set variable of ``env_names`` (or the one named by ``api_key_env``)."""
    names = (option,) if option else env_names
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    shown = " or ".join(names)
    raise ConfigError(
        f"no API key: environment variable {shown} is not set",
        field=f"{where}.options.api_key_env" if option else where,
        fix=f"export {names[0]}=<your key> before running (keys come from the environment only)",
    )


def check_vendor_options(config: Any) -> None:
    """Validate every vendor model's options with index-based field names, before any call."""
    for group in ("models", "judges"):
        for i, spec in enumerate(getattr(config, group)):
            if spec.scheme in VENDOR_SCHEMES:
                parse_options(spec, f"{group}[{i}]")
