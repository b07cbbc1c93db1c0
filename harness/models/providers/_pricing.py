"""List prices per million tokens, used for cost estimates, the meter and the ceiling.

These are published list prices at the time of writing; vendors change them, so
``price_in_per_mtok`` / ``price_out_per_mtok`` in a model's options always win. Lookup is by
the longest listed name the identifier starts with, when what follows it only names a
snapshot of that model (`_SNAPSHOT`: ``-2024-08-06``, ``-20241022``, ``-001``, ``-latest``,
``-preview``): dated snapshots share a price, but ``gpt-4o-mimi`` (a typo) or
``gpt-4o-audio-preview`` (another model) are not priced as ``gpt-4o``: they are unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.vocabulary.model import ModelSpec, Usage

if TYPE_CHECKING:
    from harness.models.providers._options import VendorOptions


@dataclass(frozen=True)
class Price:
    in_per_mtok: float
    out_per_mtok: float

    def cost(self, usage: Usage) -> float:
        spent = usage.input_tokens * self.in_per_mtok + usage.output_tokens * self.out_per_mtok
        return spent / 1e6

    def worst_case(self, tokens: int) -> float:
        """Upper bound for a call of ``tokens`` when the input/output split is unknown."""
        return tokens * max(self.in_per_mtok, self.out_per_mtok) / 1e6


_LIST_PRICES: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-4o-mini": Price(0.15, 0.60),
        "gpt-4o": Price(2.50, 10.00),
        "gpt-4.1-nano": Price(0.10, 0.40),
        "gpt-4.1-mini": Price(0.40, 1.60),
        "gpt-4.1": Price(2.00, 8.00),
        "gpt-4-turbo": Price(10.00, 30.00),
        "gpt-3.5-turbo": Price(0.50, 1.50),
        "o3-mini": Price(1.10, 4.40),
        "o4-mini": Price(1.10, 4.40),
    },
    "anthropic": {
        "claude-3-haiku": Price(0.25, 1.25),
        "claude-3-5-haiku": Price(0.80, 4.00),
        "claude-3-5-sonnet": Price(3.00, 15.00),
        "claude-3-7-sonnet": Price(3.00, 15.00),
        "claude-sonnet-4": Price(3.00, 15.00),
        "claude-3-opus": Price(15.00, 75.00),
        "claude-opus-4": Price(15.00, 75.00),
        "claude-opus-4-5": Price(5.00, 25.00),
        "claude-haiku-4-5": Price(1.00, 5.00),
    },
    "google": {
        "gemini-1.5-flash": Price(0.075, 0.30),
        "gemini-1.5-pro": Price(1.25, 5.00),
        "gemini-2.0-flash-lite": Price(0.075, 0.30),
        "gemini-2.0-flash": Price(0.10, 0.40),
        "gemini-2.5-flash": Price(0.30, 2.50),
        "gemini-2.5-pro": Price(1.25, 10.00),
    },
}


# What may follow a listed name in a snapshot's identifier: dash-separated dates, version
# numbers and release tags, nothing that could name another model.
_SNAPSHOT = re.compile(r"(?:-(?:\d+|latest|preview|exp))*")

LISTED_SCHEMES = frozenset(_LIST_PRICES)


def list_price(scheme: str, identifier: str) -> Price | None:
    """The list price of ``identifier`` or of the model it is a snapshot of; None: unlisted."""
    table = _LIST_PRICES.get(scheme, {})
    matches = [
        prefix
        for prefix in table
        if identifier.startswith(prefix) and _SNAPSHOT.fullmatch(identifier[len(prefix) :])
    ]
    return table[max(matches, key=len)] if matches else None


def listed_models(scheme: str) -> list[str]:
    """The names the list prices, for a message about an unlisted one."""
    return sorted(_LIST_PRICES.get(scheme, {}))


def price_for(
    scheme: str, identifier: str, price_in: float | None, price_out: float | None
) -> Price | None:
    """The options' prices if both are given, else the list price, else None (unknown)."""
    listed = list_price(scheme, identifier)
    if price_in is not None and price_out is not None:
        return Price(price_in, price_out)
    if listed is None:
        return None
    return Price(
        listed.in_per_mtok if price_in is None else price_in,
        listed.out_per_mtok if price_out is None else price_out,
    )


# The share of the list price each vendor's batch API takes off: half, for OpenAI's Batch
# API, Anthropic's Message Batches and Gemini's batch mode alike, at the time of writing.
BATCH_DISCOUNTS: dict[str, float] = {"openai": 0.5, "anthropic": 0.5, "google": 0.5}


def batch_price_for(
    scheme: str,
    identifier: str,
    price_in: float | None,
    price_out: float | None,
    *,
    discount: float | None = None,
    batch_in: float | None = None,
    batch_out: float | None = None,
) -> Price | None:
    """The price of a reply that came through ``scheme``'s batch API: a batch price given
    in the options wins (per side); the other side is the direct price (`price_for`) less
    ``discount`` (the vendor's `BATCH_DISCOUNTS` share when None). None: unknown."""
    direct = price_for(scheme, identifier, price_in, price_out)
    share = BATCH_DISCOUNTS.get(scheme, 0.0) if discount is None else discount
    if batch_in is None:
        batch_in = direct.in_per_mtok * (1 - share) if direct is not None else None
    if batch_out is None:
        batch_out = direct.out_per_mtok * (1 - share) if direct is not None else None
    if batch_in is None or batch_out is None:
        return None
    return Price(batch_in, batch_out)


def batch_price_of(spec: ModelSpec, options: VendorOptions) -> Price | None:
    """`batch_price_for` with a model's own scheme, identifier and price options."""
    return batch_price_for(
        spec.scheme,
        spec.identifier,
        options.price_in_per_mtok,
        options.price_out_per_mtok,
        discount=options.batch_discount,
        batch_in=options.batch_price_in_per_mtok,
        batch_out=options.batch_price_out_per_mtok,
    )
