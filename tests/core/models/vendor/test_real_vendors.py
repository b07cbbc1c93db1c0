"""Smoke tests against the real vendor APIs: opt-in, never in CI.

Run with ``HARNESS_VENDOR_TESTS=1`` and the vendor's key exported, e.g.
``HARNESS_VENDOR_TESTS=1 OPENAI_API_KEY=... .venv/bin/python -m pytest tests/core/models/vendor -m
vendor``. Each test makes one or two tiny calls (a few dozen tokens). Override the model with
``HARNESS_VENDOR_MODEL_OPENAI`` / ``_ANTHROPIC`` / ``_GOOGLE``.
"""

from __future__ import annotations

import os

import pytest

from harness.plugins.assembly import build_model
from harness.vocabulary.errors import AuthenticationError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec

pytestmark = pytest.mark.vendor

VENDORS = {
    "openai": (("OPENAI_API_KEY",), "gpt-4o-mini"),
    "anthropic": (("ANTHROPIC_API_KEY",), "claude-haiku-4-5"),
    "google": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini-2.0-flash"),
}
BAD_KEYS = {
    "openai": "sk-invalid-0000000000000000",
    "anthropic": "sk-ant-invalid-000000000000",
    "google": "AIzaInvalid000000000000000000000000000",
}


def _require(scheme: str) -> str:
    if os.environ.get("HARNESS_VENDOR_TESTS") != "1":
        pytest.skip("real-vendor tests are opt-in: set HARNESS_VENDOR_TESTS=1")
    keys, default = VENDORS[scheme]
    if not any(os.environ.get(k) for k in keys):
        pytest.skip(f"{' or '.join(keys)} is not set")
    return os.environ.get(f"HARNESS_VENDOR_MODEL_{scheme.upper()}", default)


@pytest.mark.parametrize("scheme", sorted(VENDORS))
async def test_one_real_call(scheme: str) -> None:
    identifier = _require(scheme)
    model = build_model(ModelSpec(name=f"{scheme}:{identifier}", options={"timeout": 60}))
    try:
        reply = await model.complete(
            [
                Message(role="system", content="Answer with one word."),
                Message(role="user", content="What colour is a clear daytime sky?"),
            ],
            GenerationParams(temperature=0.0, max_tokens=20, seed=1),
        )
    finally:
        await model.aclose()
    assert reply.text.strip()
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    assert reply.request_id
    assert reply.cost_usd is not None and 0 < reply.cost_usd < 0.01


@pytest.mark.parametrize("scheme", sorted(VENDORS))
async def test_a_bad_key_is_an_authentication_error(
    scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    identifier = _require(scheme)
    for name in VENDORS[scheme][0]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(VENDORS[scheme][0][0], BAD_KEYS[scheme])
    model = build_model(ModelSpec(name=f"{scheme}:{identifier}", options={"timeout": 60}))
    try:
        with pytest.raises(AuthenticationError) as caught:
            await model.complete(
                [Message(role="user", content="hi")], GenerationParams(max_tokens=5)
            )
    finally:
        await model.aclose()
    assert BAD_KEYS[scheme] not in str(caught.value)
