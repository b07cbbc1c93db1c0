"""Building the gates of a campaign's vendor models, sharing one cost meter.

The runner calls `build_budgets(config)` (or `build_gate` per model) and hands
``budgets.gates`` to the Engine; ``budgets.snapshot()`` feeds the progress display.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from harness.models.gates import CallGate, InFlightGate
from harness.models.providers._budget import CostMeter, GateSnapshot, VendorGate
from harness.models.providers._options import VENDOR_SCHEMES, parse_options
from harness.models.providers._pricing import price_for
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import ModelSpec

_SHARED_METERS: dict[int, CostMeter] = {}


def meter_for(owner: Any) -> CostMeter:
    """The one cost meter of a campaign, keyed by its config object (or its `Limits`).

    Gates built one by one for the same config share it, so the ceiling holds for the
    whole campaign. On resume, set ``meter_for(config).spent_usd = spent_so_far(log, id)``.
    """
    key = id(owner)
    meter = _SHARED_METERS.get(key)
    if meter is None:
        limits = getattr(owner, "limits", owner)
        meter = _SHARED_METERS[key] = CostMeter(getattr(limits, "spend_ceiling_usd", None))
        weakref.finalize(owner, _SHARED_METERS.pop, key, None)
    return meter


def build_gate(
    spec: ModelSpec,
    config: Any,
    meter: CostMeter | None = None,
    *,
    where: str | None = None,
    window_s: float = 60.0,
) -> CallGate:
    """The gate for one model. ``config`` is the `CampaignConfig` (or just its `Limits`).

    Vendor models get a `VendorGate`; other schemes (sim, local, replay) the plain
    `InFlightGate`. Without ``meter``, all gates built for the same ``config`` object share
    one `CostMeter`.
    """
    if spec.scheme not in VENDOR_SCHEMES:
        return InFlightGate(spec.max_in_flight)
    return build_vendor_gate(spec, config, meter, where=where, window_s=window_s)


def build_vendor_gate(
    spec: ModelSpec,
    config: Any,
    meter: CostMeter | None = None,
    *,
    where: str | None = None,
    window_s: float = 60.0,
) -> VendorGate:
    where = where or f"models[{spec.name}]"
    options = parse_options(spec, where)
    limits = getattr(config, "limits", config)
    ceiling = getattr(limits, "spend_ceiling_usd", None)
    price = price_for(
        spec.scheme, spec.identifier, options.price_in_per_mtok, options.price_out_per_mtok
    )
    if ceiling is not None and price is None:
        raise ConfigError(
            f"a spending ceiling is set but the price of {spec.name} is unknown",
            field=f"{where}.options.price_in_per_mtok",
            fix="set price_in_per_mtok and price_out_per_mtok (USD per million tokens; "
            "0 for a free local server)",
        )
    return VendorGate(
        spec.name,
        max_in_flight=spec.max_in_flight,
        rpm=options.rpm,
        tpm=options.tpm,
        price=price,
        meter=meter if meter is not None else meter_for(config),
        window_s=window_s,
        adaptive=options.adaptive,
        min_in_flight=options.min_in_flight,
    )


@dataclass(frozen=True)
class BudgetSnapshot:
    models: tuple[GateSnapshot, ...]
    spent_usd: float
    reserved_usd: float
    ceiling_usd: float | None

    @property
    def retries(self) -> int:
        return sum(m.retries for m in self.models)

    @property
    def calls_per_s(self) -> float:
        return sum(m.calls_per_s for m in self.models)

    @property
    def tokens(self) -> int:
        return sum(m.tokens_in + m.tokens_out for m in self.models)

    def line(self) -> str:
        """One short line for a progress bar."""
        spend = f"${self.spent_usd:.2f}"
        if self.ceiling_usd is not None:
            spend += f"/${self.ceiling_usd:.2f}"
        limits = " ".join(f"{m.model}:{m.in_flight}/{m.concurrency_limit}" for m in self.models)
        return (
            f"{self.calls_per_s:.1f} calls/s · {self.tokens} tok · {spend} · "
            f"{self.retries} retries · in flight {limits}"
        )


@dataclass
class Budgets:
    """The vendor gates of one campaign and the cost meter they share."""

    meter: CostMeter
    gates: dict[str, VendorGate] = field(default_factory=dict)

    def call_gates(self) -> dict[str, CallGate]:
        return dict(self.gates)

    def snapshot(self) -> BudgetSnapshot:
        return BudgetSnapshot(
            models=tuple(g.snapshot() for g in self.gates.values()),
            spent_usd=self.meter.spent_usd,
            reserved_usd=self.meter.reserved_usd,
            ceiling_usd=self.meter.ceiling_usd,
        )


def build_budgets(config: Any, *, spent_usd: float = 0.0, window_s: float = 60.0) -> Budgets:
    """Gates for every vendor model and judge of a campaign.

    ``spent_usd`` is what earlier runs of the same campaign already spent (see
    `spent_so_far`), so that a resumed campaign's ceiling covers the whole campaign.
    Models of other schemes (sim, local, replay) get no gate here: the engine gives them
    its plain in-flight gate.
    """
    meter = CostMeter(config.limits.spend_ceiling_usd, spent_usd=spent_usd)
    budgets = Budgets(meter)
    for group in ("models", "judges"):
        for i, spec in enumerate(getattr(config, group)):
            if spec.scheme in VENDOR_SCHEMES and spec.name not in budgets.gates:
                budgets.gates[spec.name] = build_vendor_gate(
                    spec, config, meter, where=f"{group}[{i}]", window_s=window_s
                )
    return budgets
