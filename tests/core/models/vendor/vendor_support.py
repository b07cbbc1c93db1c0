"""Shared constants and helpers of the vendor tests (fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vendor_fakes import FakeVendor

from harness.models.providers import VendorModel
from harness.vocabulary.model import ModelSpec

CANARY = {
    "OPENAI_API_KEY": "sk-test-CANARY-openai-7f3a9c1e55d2",
    "ANTHROPIC_API_KEY": "sk-ant-test-CANARY-anthropic-41b8e2",
    "GEMINI_API_KEY": "AIzaTEST-CANARY-gemini-0123456789abcdef",
}
CLEARED_ENV = (
    "GOOGLE_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "GOOGLE_GENAI_USE_VERTEXAI",
)

VENDORS = ("openai", "anthropic", "google", "openai-compat")
IDENTIFIERS = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-haiku-4-5",
    "google": "gemini-2.0-flash",
    "openai-compat": "smollm2",
}


def base_url(scheme: str, vendor: FakeVendor) -> str:
    return vendor.url + ("/v1" if scheme.startswith("openai") else "")


ModelMaker = Callable[..., VendorModel]


def spec_for(
    scheme: str, vendor: FakeVendor, *, max_in_flight: int = 8, **options: Any
) -> ModelSpec:
    options.setdefault("base_url", base_url(scheme, vendor))
    return ModelSpec(
        name=f"{scheme}:{IDENTIFIERS[scheme]}", options=options, max_in_flight=max_in_flight
    )
