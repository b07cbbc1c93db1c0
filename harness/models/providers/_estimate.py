"""Cost estimate before the first call, and spend already recorded in a log (for resume).

Every call is assumed to use its full ``max_tokens`` allowance. The calls are the plan's:
each relation declares the calls a case makes (`harness.vocabulary.relation.PlannedCalls`:
subject calls, calls per judge, expected and at most); ``most=True`` counts every repair
turn as taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.models.providers._endpoint import endpoint_for
from harness.models.providers._options import VENDOR_SCHEMES, parse_options
from harness.models.providers._pricing import (
    LISTED_SCHEMES,
    batch_price_of,
    listed_models,
    price_for,
)
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import ModelSpec

DEFAULT_PROMPT_TOKENS = 300  # a prompt plus the history it carries, on average
DEFAULT_REPLY_TOKENS = 256  # matches harness.models.gates.estimate_tokens' allowance


class PlannedRelations(Protocol):
    """What the estimate reads of a `harness.running.plan.Plan`: its relations (name,
    relation, cases) and its call totals (subject calls per model, calls per judge)."""

    @property
    def relations(self) -> Sequence[tuple[str, Any, int]]: ...

    def call_totals(self, most: bool = False) -> tuple[int, tuple[int, ...]]: ...


@dataclass(frozen=True)
class CostEstimate:
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None  # None: price unknown (set price_in_per_mtok / price_out_per_mtok)
    base_url: str | None = None  # vendor models: effective base URL, credentials removed
    base_url_source: str | None = None  # options.base_url, an environment variable, default


def _reply_tokens(spec: ModelSpec, config: Any) -> int:
    return spec.params.max_tokens or config.defaults.max_tokens or DEFAULT_REPLY_TOKENS


def _estimate(
    spec: ModelSpec, config: Any, calls: int, prompt_tokens: int, where: str
) -> CostEstimate:
    reply = _reply_tokens(spec, config)
    usd: float | None = 0.0
    endpoint = None
    if spec.scheme in VENDOR_SCHEMES:
        options = parse_options(spec, where)
        endpoint = endpoint_for(spec, options)
        price = price_for(
            spec.scheme, spec.identifier, options.price_in_per_mtok, options.price_out_per_mtok
        )
        if spec.mode == "batch":  # estimated at the batch rate its replies are billed at
            price = batch_price_of(spec, options)
        usd = (
            None
            if price is None
            else (calls * (prompt_tokens * price.in_per_mtok + reply * price.out_per_mtok) / 1e6)
        )
    return CostEstimate(
        spec.name,
        calls,
        calls * prompt_tokens,
        calls * reply,
        usd,
        base_url=endpoint.shown if endpoint is not None else None,
        base_url_source=endpoint.source if endpoint is not None else None,
    )


def estimate_cost(
    config: Any,
    plan: PlannedRelations,
    *,
    turns_per_case: float | None = None,
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
    most: bool = False,
) -> list[CostEstimate]:
    """Estimated calls, tokens and USD per model and judge of a campaign.

    ``plan`` is the campaign's `harness.running.plan.Plan` (built once per run by the caller);
    its relations declare the calls per case. ``turns_per_case`` overrides the subject calls
    of every case (what-if); ``most`` counts every repair turn as taken.
    """
    subject_calls, judge_calls = plan.call_totals(most=most)
    if turns_per_case is not None:
        per_model = sum(count for _, _, count in plan.relations) * config.repeats
        subject_calls = round(per_model * turns_per_case)
    out = [
        _estimate(spec, config, subject_calls, prompt_tokens, f"models[{i}]")
        for i, spec in enumerate(config.models)
    ]
    out += [
        _estimate(spec, config, judge_calls[j], prompt_tokens * 2, f"judges[{j}]")
        for j, spec in enumerate(config.judges)
    ]
    return out


def check_priced(config: Any, *, allow_unpriced: bool) -> list[str]:
    """The vendor models (and judges) whose vendor has a price list that does not list them
    and whose options give no price, named before the first call: a mistyped name
    (``gpt-4o-mimi``) would otherwise run unpriced, its spend unmetered. A `ConfigError`
    naming the first, unless ``allow_unpriced`` (then their names, priced "unknown").
    OpenAI-compatible servers have no list: their price is the options' or unknown."""
    unpriced: list[tuple[str, ModelSpec]] = []
    for group in ("models", "judges"):
        for i, spec in enumerate(getattr(config, group)):
            if spec.scheme not in LISTED_SCHEMES:
                continue
            options = parse_options(spec, f"{group}[{i}]")
            price_in, price_out = options.price_in_per_mtok, options.price_out_per_mtok
            if price_for(spec.scheme, spec.identifier, price_in, price_out) is None:
                unpriced.append((f"{group}[{i}]", spec))
    if unpriced and not allow_unpriced:
        where, spec = unpriced[0]
        listed = ", ".join(listed_models(spec.scheme))
        raise ConfigError(
            f"{spec.target} is not in the {spec.scheme} price list ({listed}), and no price "
            "is given for it",
            field=f"{where}({spec.name}).options.price_in_per_mtok",
            fix="check the model's name; or set price_in_per_mtok and price_out_per_mtok "
            "(USD per million tokens); or pass --allow-unpriced to run it priced 'unknown'",
        )
    return [spec.name for _, spec in unpriced]


def format_estimate(estimates: list[CostEstimate]) -> str:
    """A small table for the CLI to print before the first call."""
    rows = [f"{'model':<36} {'calls':>8} {'tokens in':>11} {'tokens out':>11} {'USD':>10}"]
    total = 0.0
    unknown = False
    for e in estimates:
        usd = "unknown" if e.usd is None else f"{e.usd:.2f}"
        rows.append(
            f"{e.model:<36} {e.calls:>8} {e.input_tokens:>11} {e.output_tokens:>11} {usd:>10}"
        )
        total += e.usd or 0.0
        unknown |= e.usd is None
    rows.append(
        f"{'total':<36} {'':>8} {'':>11} {'':>11} {total:>10.2f}{' +unknown' if unknown else ''}"
    )
    # Where each vendor model's calls go, so a leftover OPENAI_BASE_URL is seen before
    # anything is sent.
    for e in estimates:
        if e.base_url is not None:
            rows.append(f"{e.model} -> {e.base_url} (from {e.base_url_source})")
    return "\n".join(rows)


def spent_so_far(log: Any, campaign: str) -> float:
    """USD recorded in a log's ReplyReceived events (cached answers cost nothing)."""
    total = 0.0
    for stored in log.events(campaign, kinds=("ReplyReceived",)):
        reply = stored.event.reply
        if not stored.event.cached and reply.cost_usd:
            total += reply.cost_usd
    return total
