"""OpenAI and Gemini embedders through their SDKs, over real HTTP to a local server that
speaks each embedding wire protocol (tests/fixtures/badf_embedding_vendor.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.vocabulary.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ConnectionFailedError,
    MalformedResponseError,
)
from relations.badf.embedders_vendor import (
    VENDOR_FACTORIES,
    VendorEmbedder,
    gemini_embedder,
    openai_embedder,
    vendor_embedder,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from fixtures.badf_embedding_vendor import EmbeddingVendor, fake_vector

KEYS = {
    "OPENAI_API_KEY": "sk-test-CANARY-openai-7f3a9c1e55d2",
    "GEMINI_API_KEY": "AIzaTEST-CANARY-gemini-0123456789abcdef",
}
SCHEMES = ("openai", "google")


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in ("GOOGLE_API_KEY", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    return KEYS


@pytest.fixture
def server() -> Iterator[EmbeddingVendor]:
    vendor = EmbeddingVendor().start()
    try:
        yield vendor
    finally:
        vendor.stop()


MakeEmbedder = Callable[..., VendorEmbedder]


@pytest.fixture
def make(server: EmbeddingVendor, keys: dict[str, str]) -> MakeEmbedder:
    def build(scheme: str, **options: Any) -> VendorEmbedder:
        options.setdefault("base_url", server.url + ("/v1" if scheme == "openai" else ""))
        return VENDOR_FACTORIES[scheme](**options)

    return build


def unit(texts: list[str], dim: int = 8) -> np.ndarray:
    rows = np.stack([fake_vector(t, dim) for t in texts])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_vectors_in_input_order_unit_length_in_batches(
    scheme: str, make: MakeEmbedder, server: EmbeddingVendor
) -> None:
    embedder = make(scheme, batch_size=3)
    texts = [f"concept {i}" for i in range(7)] + ["naïve café"]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (8, 8)
    np.testing.assert_allclose(vectors, unit(texts), atol=1e-6)
    assert [len(b) for b in _batches(server)] == [3, 3, 2]
    assert server.texts_sent() == texts
    path = server.requests[0].path
    assert path.endswith("/v1/embeddings" if scheme == "openai" else ":batchEmbedContents")


def _batches(server: EmbeddingVendor) -> list[list[str]]:
    out = []
    for r in server.requests:
        body = r.body
        out.append(body["input"] if "input" in body else body["requests"])
    return out


@pytest.mark.parametrize("scheme", SCHEMES)
def test_key_from_the_environment_and_name_endpoint(
    scheme: str, make: MakeEmbedder, server: EmbeddingVendor, keys: dict[str, str]
) -> None:
    embedder = make(scheme, dimensions=4)
    embedder.embed(["caring"])
    headers = server.requests[0].headers
    key = keys["OPENAI_API_KEY" if scheme == "openai" else "GEMINI_API_KEY"]
    presented = headers.get("x-goog-api-key") or headers.get("authorization", "")
    assert presented in (key, f"Bearer {key}")
    model = "text-embedding-3-small" if scheme == "openai" else "gemini-embedding-001"
    assert embedder.name == f"{scheme}:{model}@4"
    assert embedder.endpoint.source == "options.base_url"
    assert embedder.endpoint.shown.startswith(server.url)
    sent = server.requests[0].body
    assert sent.get("dimensions") == 4 or sent["requests"][0]["outputDimensionality"] == 4


def test_base_url_from_the_sdk_environment_variable(
    server: EmbeddingVendor, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    embedder = openai_embedder()
    embedder.embed(["x"])
    assert embedder.endpoint.source == "OPENAI_BASE_URL" and len(server.requests) == 1


@pytest.mark.parametrize("scheme", SCHEMES)
def test_retryable_failures_are_retried_then_succeed(
    scheme: str, make: MakeEmbedder, server: EmbeddingVendor
) -> None:
    server.queue("429", "500", "short")
    embedder = make(scheme)
    np.testing.assert_allclose(embedder.embed(["a", "b"]), unit(["a", "b"]), atol=1e-6)
    assert len(server.requests) == 4 and embedder.requests == 4


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    ("fault", "error", "requests"),
    [
        ("401", AuthenticationError, 1),
        ("400", BadRequestError, 1),
        ("malformed", MalformedResponseError, 2),
        ("short", MalformedResponseError, 2),
    ],
)
def test_failures_become_harness_errors_without_the_key(
    scheme: str,
    fault: str,
    error: type[Exception],
    requests: int,
    make: MakeEmbedder,
    server: EmbeddingVendor,
    keys: dict[str, str],
) -> None:
    server.queue(fault, fault)
    embedder = make(scheme, max_attempts=2)
    with pytest.raises(error) as caught:
        embedder.embed(["a", "b"])
    assert len(server.requests) == requests, "retried only what may succeed, at most twice"
    assert all(key not in str(caught.value) for key in keys.values())
    assert caught.value.__cause__ is not None or fault == "short"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_unreachable_server_names_the_base_url(scheme: str, keys: dict[str, str]) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("/v1" if scheme == "openai" else "")
    embedder = VENDOR_FACTORIES[scheme](base_url=url, max_attempts=1)
    with pytest.raises(ConnectionFailedError, match=f"127.0.0.1:{port}"):
        embedder.embed(["a"])


def test_configuration_errors_name_the_field(
    keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"options\.api_key.*environment"):
        openai_embedder(api_key="sk-pasted-by-mistake-123456")
    with pytest.raises(ConfigError, match=r"options\.batchsize"):
        gemini_embedder(batchsize=3)
    with pytest.raises(ConfigError, match=r"options\.batch_size"):
        openai_embedder(batch_size=0)
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(ConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        gemini_embedder()
    monkeypatch.setenv("MY_KEY", "sk-test-other-variable-0000")
    assert openai_embedder(api_key_env="MY_KEY")._secrets == ("sk-test-other-variable-0000",)


def test_batches_never_exceed_the_vendor_limit(make: MakeEmbedder) -> None:
    assert make("google", batch_size=5000).batch_size == 100
    assert make("openai", batch_size=5000).batch_size == 2048


def test_vendor_embedder_by_name(server: EmbeddingVendor, keys: dict[str, str]) -> None:
    embedder = vendor_embedder("openai:text-embedding-3-large", base_url=f"{server.url}/v1")
    assert embedder.name == "openai:text-embedding-3-large"
    assert vendor_embedder("google", base_url=server.url).name == "google:gemini-embedding-001"
    with pytest.raises(ConfigError, match=r"embedder: no vendor embedder 'anthropic:x'"):
        vendor_embedder("anthropic:x")
    embedder.embed(["a"])
    assert server.requests[0].body["model"] == "text-embedding-3-large"
