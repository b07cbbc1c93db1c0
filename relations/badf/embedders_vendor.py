"""Vendor sentence embedders for BADF's concept unification: OpenAI and Gemini embedding APIs
through their official SDKs (``openai:text-embedding-3-small``, ``google:gemini-embedding-001``).

They follow the chat adapters (harness/models/providers/): keys from the environment only (the
variable named by ``api_key_env``, else the vendor's usual ones), the SDK's own retries
off and the harness's `RetryPolicy` instead, every SDK exception translated once, here, into
the harness error tree with the key redacted, and the base URL the SDK is given recorded as
``endpoint`` (credentials removed) so a log can say where the vectors came from. Texts go in
batches of ``batch_size`` (vendor limits: OpenAI 2,048 inputs a request, Gemini 100); rows
come back in input order, L2-normalised. Wrap one in `embedding_cache.CachedEmbedder` so
that no text is paid for twice.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.family_api import (
    ConfigError,
    MalformedResponseError,
    ModelError,
    ModelSpec,
    RetryPolicy,
    config_error,
    endpoint_for,
    translate_genai,
    translate_stainless,
)
from harness.family_api import error_from_transport as from_transport
from harness.family_api import read_api_key as read_key
from harness.family_api import unexpected_vendor_error as unexpected


class VendorEmbedderOptions(BaseModel):
    """``embedder_options`` of a vendor embedder, validated before the first call."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    batch_size: int | None = Field(default=None, ge=1)
    dimensions: int | None = Field(default=None, ge=1)  # shorter vectors, where the model can
    timeout: float | None = Field(default=None, gt=0)
    max_attempts: int = Field(default=4, ge=1)


def parse_embedder_options(name: str, options: dict[str, Any]) -> VendorEmbedderOptions:
    if "api_key" in options:
        raise ConfigError(
            "a key must never be written in the configuration (it would be logged)",
            field=f"embedder[{name}].options.api_key",
            fix="export the key in the environment; name an unusual variable with api_key_env",
        )
    try:
        return VendorEmbedderOptions.model_validate(options)
    except ValidationError as exc:
        raise config_error(
            exc,
            fix="see docs/embeddings.md",
            where=f"embedder[{name}].options",
            data=options,
            known=VendorEmbedderOptions.model_fields,
        ) from None


def _unit_rows(rows: list[list[float]], expected: int, dim: int | None) -> np.ndarray:
    if len(rows) != expected:
        raise MalformedResponseError(f"asked for {expected} embeddings, got {len(rows)}")
    vectors = np.asarray(rows, dtype=np.float32)
    if vectors.ndim != 2 or (dim is not None and vectors.shape[1] != dim):
        raise MalformedResponseError(f"embeddings have shape {vectors.shape}, not (n, {dim})")
    if not np.isfinite(vectors).all():
        raise MalformedResponseError("an embedding holds a value that is not a finite number")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise MalformedResponseError("an embedding is the zero vector")
    # numpy types arithmetic on arrays of unknown dtype as Any: the result is an array.
    unit: np.ndarray = (vectors / norms).astype(np.float32)
    return unit


class VendorEmbedder(ABC):
    """One vendor embedding model. ``name`` is ``scheme:model`` (plus ``@<dimensions>`` when
    shortened): the identity the cache keys vectors by."""

    scheme: str = ""
    default_keys: tuple[str, ...] = ()
    max_batch: int = 100

    def __init__(self, model: str, options: VendorEmbedderOptions) -> None:
        self.model = model
        self.options = options
        self.name = f"{self.scheme}:{model}" + (
            f"@{options.dimensions}" if options.dimensions else ""
        )
        spec = ModelSpec(name=f"{self.scheme}:{model}", options={"base_url": options.base_url})
        self.endpoint = endpoint_for(spec)
        key = read_key(self.default_keys, f"embedder[{self.name}]", option=options.api_key_env)
        self._secrets = (key,)
        self.batch_size = min(options.batch_size or self.max_batch, self.max_batch)
        self.policy = RetryPolicy(max_attempts=options.max_attempts)
        self.requests = 0  # HTTP requests made (attempts included)
        self._client = self._make_client(key)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        parts = [
            self._batch_with_retries(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self.options.dimensions or 0), dtype=np.float32)
        return np.concatenate(parts)

    def _batch_with_retries(self, batch: list[str]) -> np.ndarray:
        attempt = 0
        while True:
            attempt += 1
            try:
                self.requests += 1
                return _unit_rows(self._send(batch), len(batch), self.options.dimensions)
            except ModelError as error:
                failure: ModelError = error
            except Exception as exc:
                failure = self.translate(exc)
                failure.__cause__ = exc
            decision = self.policy.decide(failure, attempt)
            if decision.action != "retry":
                raise failure
            time.sleep(decision.wait_s)

    def translate(self, exc: BaseException) -> ModelError:
        """The SDK's exception as a harness error (vendor rules, transport, last resort)."""
        error = (
            self._translate(exc)
            or from_transport(exc, secrets=self._secrets)
            or unexpected(exc, self.scheme, secrets=self._secrets)
        )
        if error.status in (None, 404) and error.kind in ("connection", "not_found"):
            error = type(error)(f"{error} at {self.endpoint.describe()}", status=error.status)
        return error

    @abstractmethod
    def _make_client(self, key: str) -> Any: ...

    @abstractmethod
    def _send(self, batch: list[str]) -> list[list[float]]:
        """One request: the batch's vectors in input order."""

    @abstractmethod
    def _translate(self, exc: BaseException) -> ModelError | None: ...


class OpenAIEmbedder(VendorEmbedder):
    """``client.embeddings.create`` of the ``openai`` SDK (also OpenAI-compatible servers,
    through ``base_url``)."""

    scheme = "openai"
    default_keys = ("OPENAI_API_KEY",)
    max_batch = 2048

    def _make_client(self, key: str) -> Any:
        import openai

        kwargs: dict[str, Any] = {"api_key": key, "max_retries": 0, "base_url": self.endpoint.url}
        if self.options.timeout:
            kwargs["timeout"] = self.options.timeout
        return openai.OpenAI(**kwargs)

    def _send(self, batch: list[str]) -> list[list[float]]:
        request: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.options.dimensions:
            request["dimensions"] = self.options.dimensions
        response = self._client.embeddings.create(**request)
        data = sorted(response.data, key=lambda d: d.index)
        if [d.index for d in data] != list(range(len(data))):
            raise MalformedResponseError("embedding indexes are not 0..n-1")
        return [list(d.embedding) for d in data]

    def _translate(self, exc: BaseException) -> ModelError | None:
        import openai

        return translate_stainless(exc, openai, secrets=self._secrets)

    def close(self) -> None:
        self._client.close()


class GeminiEmbedder(VendorEmbedder):
    """``client.models.embed_content`` of ``google-genai`` (the Gemini API's
    batchEmbedContents)."""

    scheme = "google"
    default_keys = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    max_batch = 100

    def _make_client(self, key: str) -> Any:
        from google import genai
        from google.genai import types

        http = types.HttpOptions(
            base_url=self.endpoint.url,
            timeout=int(self.options.timeout * 1000) if self.options.timeout else None,
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=key, vertexai=False, http_options=http)

    def _send(self, batch: list[str]) -> list[list[float]]:
        from google.genai import types

        config = types.EmbedContentConfig(output_dimensionality=self.options.dimensions)
        response = self._client.models.embed_content(
            model=self.model, contents=batch, config=config
        )
        embeddings = response.embeddings or []
        rows = [e.values for e in embeddings]
        if any(r is None for r in rows):
            raise MalformedResponseError("an embedding has no values")
        return [list(r) for r in rows if r is not None]

    def _translate(self, exc: BaseException) -> ModelError | None:
        return translate_genai(exc, secrets=self._secrets)

    def close(self) -> None:
        self._client.close()


def openai_embedder(model: str = "text-embedding-3-small", **options: Any) -> OpenAIEmbedder:
    """Factory for ``embedder_for("openai:MODEL", **options)``."""
    return OpenAIEmbedder(model, parse_embedder_options(f"openai:{model}", options))


def gemini_embedder(model: str = "gemini-embedding-001", **options: Any) -> GeminiEmbedder:
    """Factory for ``embedder_for("google:MODEL", **options)``."""
    return GeminiEmbedder(model, parse_embedder_options(f"google:{model}", options))


# Scheme -> factory taking the model identifier: "openai:text-embedding-3-large" is
# VENDOR_FACTORIES["openai"]("text-embedding-3-large", **options).
VENDOR_FACTORIES = {"openai": openai_embedder, "google": gemini_embedder}


def vendor_embedder(name: str, **options: Any) -> VendorEmbedder:
    """The vendor embedder named ``scheme:model`` (``openai:text-embedding-3-small``); a bare
    ``openai`` or ``google`` takes that vendor's default model."""
    scheme, _, model = name.partition(":")
    factory = VENDOR_FACTORIES.get(scheme)
    if factory is None:
        raise ConfigError(
            f"no vendor embedder {name!r}",
            field="embedder",
            fix="use openai:MODEL or google:MODEL (docs/embeddings.md)",
        )
    return factory(model, **options) if model else factory(**options)
