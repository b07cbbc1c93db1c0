"""Budgets: rate windows, adaptive concurrency, the cost meter and ceiling, Retry-After."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.models.gates import InFlightGate
from harness.models.providers import (
    AdaptiveConcurrency,
    CostMeter,
    Price,
    VendorGate,
    build_gate,
    meter_for,
    retry_after_from_body,
    retry_after_from_headers,
)
from harness.running.campaign import Limits
from harness.vocabulary.errors import (
    BadRequestError,
    BudgetExceededError,
    ConfigError,
    ModelTimeoutError,
    RateLimitedError,
)
from harness.vocabulary.model import ModelSpec, Reply, Usage


async def test_adaptive_concurrency_shrinks_on_429_and_grows_back() -> None:
    conc = AdaptiveConcurrency(8, cooldown_s=0.05)
    conc.on_throttled()
    conc.on_throttled()  # same burst of 429s: counted once
    assert conc.limit == 4
    await asyncio.sleep(0.06)
    conc.on_throttled()
    assert conc.limit == 2 and conc.shrinks == 2
    for _ in range(2 + 3 + 4 + 5 + 6 + 7):
        conc.on_success()
    assert conc.limit == 8 and conc.grows == 6
    conc.on_success()  # at its maximum the limit stays
    assert conc.limit == 8 and conc.grows == 6


async def test_adaptive_concurrency_holds_calls_beyond_the_limit() -> None:
    conc = AdaptiveConcurrency(4, cooldown_s=0)
    conc.on_throttled()  # limit 2
    peak = 0

    async def call() -> None:
        nonlocal peak
        await conc.acquire()
        peak = max(peak, conc.in_flight)
        await asyncio.sleep(0.01)
        conc.release()

    await asyncio.gather(*(call() for _ in range(20)))
    assert peak == 2 and conc.in_flight == 0


def test_fixed_concurrency_when_not_adaptive() -> None:
    conc = AdaptiveConcurrency(4, adaptive=False)
    conc.on_throttled()
    assert conc.limit == 4


def _reply(tokens_in: int, tokens_out: int, cost: float | None = None) -> Reply:
    return Reply(
        text="x", usage=Usage(input_tokens=tokens_in, output_tokens=tokens_out), cost_usd=cost
    )


async def test_ceiling_stops_before_the_next_call_could_exceed_it() -> None:
    meter = CostMeter(ceiling_usd=0.01)
    gate = VendorGate("openai:gpt-4o", max_in_flight=4, price=Price(2.5, 10.0), meter=meter)
    spent_calls = 0
    with pytest.raises(BudgetExceededError) as caught:
        while True:
            await gate.acquire(300)  # worst case 300 tokens at $10/M = $0.003
            gate.release(_reply(200, 100), None)  # actual $0.0015
            spent_calls += 1
    assert meter.spent_usd <= 0.01
    assert meter.spent_usd + 0.003 > 0.01  # it stopped only when the next call could exceed
    assert spent_calls == 5
    assert "--spend-ceiling" in str(caught.value)
    assert meter.reserved_usd == 0 and gate.concurrency.in_flight == 0


async def test_ceiling_counts_calls_in_flight() -> None:
    meter = CostMeter(ceiling_usd=0.001)
    gate = VendorGate("m", max_in_flight=8, price=Price(1.0, 1.0), meter=meter)
    await gate.acquire(600)  # $0.0006 reserved
    with pytest.raises(BudgetExceededError):
        await gate.acquire(600)
    gate.release(None, BadRequestError("x"))
    assert meter.reserved_usd == 0 and meter.spent_usd == 0
    await gate.acquire(600)


async def test_retry_after_pauses_every_call_to_the_model() -> None:
    gate = VendorGate("m", max_in_flight=4)
    await gate.acquire(10)
    gate.release(None, RateLimitedError("slow down", status=429, retry_after=0.3))
    assert gate.concurrency.limit == 2
    started = time.monotonic()
    await gate.acquire(10)
    assert time.monotonic() - started >= 0.28
    gate.release(_reply(5, 5), None)
    snap = gate.snapshot()
    assert (snap.rate_limited, snap.retries, snap.replies, snap.failures) == (1, 1, 1, 1)
    assert snap.tokens_in == 5 and snap.tokens_out == 5


async def test_tokens_are_reconciled_per_call_even_when_calls_overlap() -> None:
    gate = VendorGate("m", max_in_flight=8, tpm=60_000)  # burst 1,200: no call waits
    assert gate.tokens is not None

    async def call(estimate: int, used: int, delay: float) -> None:
        await gate.acquire(estimate)
        await asyncio.sleep(delay)
        gate.release(_reply(used, 0), None)

    await asyncio.gather(call(100, 10, 0.02), call(50, 50, 0.01), call(80, 0, 0.03))
    assert gate._outstanding_tokens == 0
    assert gate.tokens.booked() == 60  # each call's own estimate corrected: 10 + 50 + 0


async def test_timeouts_keep_their_tokens_booked() -> None:
    gate = VendorGate("m", max_in_flight=2, tpm=100_000, window_s=60.0)
    assert gate.tokens is not None
    await gate.acquire(500)
    gate.release(None, ModelTimeoutError("t"))
    assert gate.tokens.booked() == 500  # the vendor may have processed it
    await gate.acquire(500)
    gate.release(None, BadRequestError("b"))
    assert gate.tokens.booked() == 500  # refused: given back


def test_build_gate_for_vendor_and_other_schemes() -> None:
    class Config:
        limits = Limits(spend_ceiling_usd=5.0)

    config = Config()
    a = build_gate(ModelSpec(name="openai:gpt-4o-mini", options={"rpm": 60}), config)
    b = build_gate(ModelSpec(name="anthropic:claude-haiku-4-5"), config)
    assert isinstance(a, VendorGate) and isinstance(b, VendorGate)
    assert a.meter is b.meter is meter_for(config)  # one ceiling for the whole campaign
    assert a.requests is not None and a.requests.per_window == 60
    assert isinstance(build_gate(ModelSpec(name="sim:default"), config), InFlightGate)


def test_ceiling_with_unknown_price_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        build_gate(
            ModelSpec(name="openai-compat:llama", options={"base_url": "http://x/v1"}),
            Limits(spend_ceiling_usd=1.0),
            where="models[2]",
        )
    assert caught.value.field == "models[2].options.price_in_per_mtok"
    gate = build_gate(
        ModelSpec(
            name="openai-compat:llama",
            options={"base_url": "http://x/v1", "price_in_per_mtok": 0, "price_out_per_mtok": 0},
        ),
        Limits(spend_ceiling_usd=1.0),
    )
    assert isinstance(gate, VendorGate)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "Wed, 01 Jan 2031 00:00:10 GMT"}, 10.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"x-ratelimit-reset-requests": "1m30s", "x-ratelimit-reset-tokens": "20ms"}, 90.0),
        ({"x-ratelimit-reset-tokens": "6m0s"}, 360.0),
        ({"anthropic-ratelimit-requests-reset": "2031-01-01T00:00:04Z"}, 4.0),
        ({"anthropic-ratelimit-tokens-reset": "2031-01-01T00:00:02.500+00:00"}, 2.5),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    now = 1924992000.0  # 2031-01-01T00:00:00Z
    got = retry_after_from_headers(headers, now=now)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_retry_after_from_gemini_retry_info() -> None:
    body = {
        "error": {
            "code": 429,
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
            ],
        }
    }
    assert retry_after_from_body(body) == 37.0
    assert retry_after_from_body({"error": {"details": "nope"}}) is None
    assert retry_after_from_body("not json") is None


def test_cost_estimate_before_the_first_call() -> None:
    from vendor_campaign import probe_config

    from harness.models.providers import estimate_cost, format_estimate
    from harness.running.plan import Plan

    config = probe_config(
        [
            {"name": "openai:gpt-4o-mini", "params": {"max_tokens": 100}},
            {"name": "openai-compat:llama", "options": {"base_url": "http://127.0.0.1:1/v1"}},
            {"name": "sim:default"},
        ],
        cases=100,
    )
    plan = Plan(config)
    openai_est, compat_est, sim_est = estimate_cost(config, plan)
    assert (openai_est.calls, openai_est.input_tokens, openai_est.output_tokens) == (
        200,
        200 * 300,
        200 * 100,
    )
    assert openai_est.usd == pytest.approx(200 * (300 * 0.15 + 100 * 0.60) / 1e6)
    assert compat_est.usd is None and sim_est.usd == 0.0
    table = format_estimate([openai_est, compat_est, sim_est])
    assert "openai:gpt-4o-mini" in table and "unknown" in table and "+unknown" in table
    doubled = estimate_cost(config, plan, turns_per_case=4)[0]
    assert doubled.calls == 400


async def test_snapshot_rates_keep_one_entry_per_second_not_per_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The progress display takes a snapshot at every refresh: its cost and the gate's
    # memory must not grow with the calls of the last minute.
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    gate = VendorGate("m", max_in_flight=4)
    for second in range(70):
        clock[0] = 1000.0 + second
        for _ in range(300):
            await gate.acquire(10)
            gate.release(_reply(3, 2), None)
    assert len(gate._recent) <= 61, len(gate._recent)
    snap = gate.snapshot()
    assert snap.calls_per_s == 300.0  # 3,000 calls completed in the last 10 s
    assert snap.tokens_per_min == 60 * 300 * 5
    clock[0] += 120  # a quiet two minutes
    snap = gate.snapshot()
    assert (snap.calls_per_s, snap.tokens_per_min) == (0.0, 0.0)
