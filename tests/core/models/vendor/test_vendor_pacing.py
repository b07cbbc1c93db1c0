"""No call to a model starts while a Retry-After pause of that model is in effect.

Each call passes the gate's pause check (`VendorGate.ready`) just before it is sent; the
tests record, on the client's clock, when every pause began and ended and when every check
let a call go, and prove that no check let a call go inside a pause and that every request
the vendor received went through a check. Those are facts of the client alone, so they
hold however late a busy machine delivers a reply or a request (the vendor's arrival times
only confirm them: what arrives during a pause was let go before it began).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from vendor_campaign import probe_config, run_engine
from vendor_fakes import FakeVendor, RecordedRequest
from vendor_support import base_url, spec_for

from harness.models.gates import CallGate
from harness.models.providers import VendorGate, build_budgets, build_gate
from harness.plugins.assembly import build_model
from harness.running.calls import CallLoop
from harness.running.campaign import Limits
from harness.running.retry import RetryPolicy
from harness.vocabulary.errors import ModelError
from harness.vocabulary.events import Event
from harness.vocabulary.model import GenerationParams, Message, Reply
from harness.vocabulary.relation import Ask


class PauseRecord:
    """When each pause of ``gate`` began and ended, and when each pause check let a call
    go (time.monotonic, the clock of the gate and of the in-process fake vendor)."""

    def __init__(self, gate: CallGate) -> None:
        assert isinstance(gate, VendorGate)
        self.pauses: list[tuple[float, float]] = []
        self.let_go: list[float] = []
        ready, release = gate.ready, gate.release

        async def recorded_ready() -> None:
            await ready()
            self.let_go.append(time.monotonic())

        def recorded_release(reply: Reply | None, error: ModelError | None) -> None:
            before = gate._paused_until
            release(reply, error)
            if gate._paused_until != before:
                self.pauses.append((time.monotonic(), gate._paused_until))

        gate.ready = recorded_ready  # type: ignore[method-assign]
        gate.release = recorded_release  # type: ignore[method-assign]

    def check(self, requests: list[RecordedRequest], pauses: int) -> None:
        assert len(self.pauses) == pauses
        assert len(self.let_go) == len(requests)  # every request passed a pause check
        inside = [t for t in self.let_go if any(s <= t < e for s, e in self.pauses)]
        assert inside == [], f"{len(inside)} of {len(self.let_go)} calls let go in a pause"
        for start, end in self.pauses:
            arrived = sum(1 for r in requests if r.at < end)
            assert arrived <= sum(1 for t in self.let_go if t < start)


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
    gates = budgets.call_gates()
    record = PauseRecord(gates[model.name])
    try:
        summary = await run_engine(config, tmp_path / "pace.db", {model.name: model}, gates)
    finally:
        await model.aclose()
    assert summary.status == "completed"
    record.check(list(vendor.requests), pauses=len(throttled_at))


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
    record = PauseRecord(gate)
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
    record.check(requests, pauses=len(throttled_at))
