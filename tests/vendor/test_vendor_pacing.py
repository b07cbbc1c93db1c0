"""No call to a model starts while a Retry-After pause of that model is in effect."""

from __future__ import annotations

import asyncio
from pathlib import Path

from vendor_campaign import probe_config, run_engine
from vendor_fakes import FakeVendor
from vendor_support import base_url, spec_for

from harness.calls import CallLoop
from harness.campaign import Limits
from harness.events import Event
from harness.model import GenerationParams, Message, build_model
from harness.providers import build_budgets, build_gate
from harness.relation import Ask
from harness.retry import RetryPolicy

# Server-side slack for a 429 still travelling to the client, and requests already on the
# wire when the client learnt of the pause.
SLACK_S = 0.03


async def test_no_send_inside_a_retry_after_pause(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    throttled_at = {25, 140, 260}
    vendor.chooser = lambda n: "429" if n in throttled_at else "ok"
    vendor.retry_after_s = 1.0
    vendor.latency_s = 0.01
    config = probe_config(
        [
            {
                "name": "openai:gpt-4o-mini",
                "max_in_flight": 8,
                "options": {"base_url": base_url("openai", vendor), "adaptive": False},
            }
        ],
        cases=150,
        max_attempts=4,
    )
    budgets = build_budgets(config)
    model = build_model(config.models[0])
    try:
        summary = await run_engine(
            config, tmp_path / "pace.db", {model.name: model}, budgets.call_gates()
        )
    finally:
        await model.aclose()
    assert summary.status == "completed"
    requests = list(vendor.requests)
    pauses = [
        (r.at + vendor.latency_s + SLACK_S, r.at + vendor.latency_s + vendor.retry_after_s)
        for r in requests
        if r.fault == "429"
    ]
    assert len(pauses) == len(throttled_at)
    inside = [r for r in requests if any(start < r.at < end for start, end in pauses)]
    assert inside == [], f"{len(inside)} of {len(requests)} sends inside a pause window"


async def test_calls_waiting_for_a_slot_wait_out_the_pause(
    vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    """More callers than slots: the callers queued for a slot when a 429 arrives must not
    go out as the slots free up while the model is paused."""
    throttled_at = {40, 160, 280}
    vendor.chooser = lambda n: "429" if n in throttled_at else "ok"
    vendor.retry_after_s = 1.0
    vendor.latency_s = 0.01
    spec = spec_for("openai", vendor, max_in_flight=4, adaptive=False)
    model = build_model(spec)
    gate = build_gate(spec, Limits())
    loop = CallLoop(RetryPolicy(max_attempts=3), timeout_s=10, stop=asyncio.Event())

    async def append(event: Event) -> None:
        await asyncio.sleep(0.002)  # a commit takes a moment

    async def sender(i: int) -> None:
        for j in range(12):
            ask = Ask(thread="t", prompt=f"{i}-{j}")
            messages = [Message(role="user", content=ask.prompt)]
            await loop.send(append, model, gate, ask, 0, messages, GenerationParams())

    try:
        await asyncio.gather(*(sender(i) for i in range(32)))
    finally:
        await model.aclose()
    requests = list(vendor.requests)
    assert len(requests) == 32 * 12 + len(throttled_at)
    pauses = [
        (r.at + vendor.latency_s + SLACK_S, r.at + vendor.latency_s + vendor.retry_after_s)
        for r in requests
        if r.fault == "429"
    ]
    inside = [r for r in requests if any(start < r.at < end for start, end in pauses)]
    assert inside == [], f"{len(inside)} of {len(requests)} sends inside a pause window"
