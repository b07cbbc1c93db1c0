"""The options every vendor-served model shares (`VendorOptions`): where its calls go,
which variable holds its key, its rate, token and cost budgets. Below `_options` (which
parses them per scheme) and `_http_options` (an ``http:`` target's, which extend them).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.vocabulary.config_bounds import MAX_IN_FLIGHT, MAX_SECONDS

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class VendorOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    base_url: str | None = None
    api_key_env: str | None = None  # name of the environment variable holding the key
    rpm: float | None = Field(default=None, gt=0)  # requests per minute
    tpm: float | None = Field(default=None, gt=0)  # tokens (in + out) per minute
    price_in_per_mtok: float | None = Field(default=None, ge=0)
    price_out_per_mtok: float | None = Field(default=None, ge=0)
    # Batch mode (docs/vendors.md, "Batch APIs"): the share of the price a batch takes off
    # (the vendor's default, 0.5, when unset), or the batch prices themselves, which win.
    batch_discount: float | None = Field(default=None, ge=0, lt=1)
    batch_price_in_per_mtok: float | None = Field(default=None, ge=0)
    batch_price_out_per_mtok: float | None = Field(default=None, ge=0)
    # The vendor's limit on tokens enqueued in this model's batches in flight (each request
    # counted at its worst case: estimated input + max_tokens); None: not bounded here.
    batch_enqueued_tokens: int | None = Field(default=None, gt=0)
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
