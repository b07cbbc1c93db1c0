"""Vendor models through the official SDKs, with rate, token and cost budgets.

The backends ``openai``, ``anthropic``, ``google``, ``openai-compat`` and ``http`` (an
application's own endpoint, docs/targets.md) are registered by
`harness.builtins` (see `harness.plugins.assembly.build_model`). Budgets: `build_budgets` /
`build_gate` make `VendorGate` objects (the engine's `CallGate`); `estimate_cost` shows
what a campaign may cost before the first call. See docs/vendors.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.models.providers._budget import (
    AdaptiveConcurrency,
    CostMeter,
    GateSnapshot,
    VendorGate,
)
from harness.models.providers._endpoint import Endpoint, campaign_endpoints, endpoint_for
from harness.models.providers._estimate import (
    CostEstimate,
    check_priced,
    estimate_cost,
    format_estimate,
    spent_so_far,
)
from harness.models.providers._gates import (
    Budgets,
    BudgetSnapshot,
    build_budgets,
    build_gate,
    build_vendor_gate,
    meter_for,
)
from harness.models.providers._options import (
    VENDOR_SCHEMES,
    VendorOptions,
    check_vendor_options,
    parse_options,
)
from harness.models.providers._pricing import (
    BATCH_DISCOUNTS,
    Price,
    batch_price_for,
    list_price,
    price_for,
)
from harness.models.providers._rate_budget import RateBudget, max_in_window

# The SDKs take seconds to import; they are loaded when a vendor model is first built (the
# registry imports a backend's module on first use: `harness.builtins`), or an adapter name
# below is first used, so offline commands start fast.
_LAZY = {
    "AnthropicBatchClient": ("_anthropic_batch", "AnthropicBatchClient"),
    "AnthropicModel": ("_anthropic", "AnthropicModel"),
    "GeminiBatchClient": ("_google_batch", "GeminiBatchClient"),
    "OpenAIBatchClient": ("_openai_batch", "OpenAIBatchClient"),
    "GeminiModel": ("_google", "GeminiModel"),
    "OpenAIChatModel": ("_openai", "OpenAIChatModel"),
    "build_anthropic_batch": ("_anthropic_batch", "build_anthropic_batch"),
    "build_gemini_batch": ("_google_batch", "build_gemini_batch"),
    "build_openai_batch": ("_openai_batch", "build_openai_batch"),
    "VendorModel": ("_base", "VendorModel"),
    "build_anthropic": ("_anthropic", "build_anthropic"),
    "build_gemini": ("_google", "build_gemini"),
    "build_http": ("_http", "build_http"),
    "HttpTarget": ("_http", "HttpTarget"),
    "build_openai": ("_openai", "build_openai"),
    "build_openai_compat": ("_openai", "build_openai_compat"),
    "retry_after_from_body": ("_errors", "retry_after_from_body"),
    "retry_after_from_headers": ("_errors", "retry_after_from_headers"),
}


def __getattr__(name: str) -> Any:
    if name == "ADAPTER_MODULES":
        return tuple(
            importlib.import_module(f"{__name__}.{m}") for m in ("_openai", "_anthropic", "_google")
        )
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ADAPTER_MODULES",
    "BATCH_DISCOUNTS",
    "VENDOR_SCHEMES",
    "AdaptiveConcurrency",
    "AnthropicBatchClient",
    "AnthropicModel",
    "BudgetSnapshot",
    "Budgets",
    "CostEstimate",
    "CostMeter",
    "Endpoint",
    "GateSnapshot",
    "GeminiBatchClient",
    "GeminiModel",
    "HttpTarget",
    "OpenAIBatchClient",
    "OpenAIChatModel",
    "Price",
    "RateBudget",
    "VendorGate",
    "VendorModel",
    "VendorOptions",
    "batch_price_for",
    "build_anthropic",
    "build_anthropic_batch",
    "build_budgets",
    "build_gate",
    "build_gemini",
    "build_gemini_batch",
    "build_http",
    "build_openai",
    "build_openai_batch",
    "build_openai_compat",
    "build_vendor_gate",
    "campaign_endpoints",
    "check_priced",
    "check_vendor_options",
    "endpoint_for",
    "estimate_cost",
    "format_estimate",
    "list_price",
    "max_in_window",
    "meter_for",
    "parse_options",
    "price_for",
    "retry_after_from_body",
    "retry_after_from_headers",
    "spent_so_far",
]
