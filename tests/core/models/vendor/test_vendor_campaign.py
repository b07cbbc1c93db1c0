"""Campaigns of thousands of calls against a vendor that throttles and fails."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import pytest
from vendor_campaign import attempts_by_turn, probe_config, read_events, run_engine
from vendor_fakes import FakeVendor
from vendor_support import base_url

from harness.models.providers import VendorGate, build_budgets, spent_so_far
from harness.plugins.assembly import build_model
from harness.store.reader import EventReader
from harness.vocabulary.errors import CampaignAbortedError
from harness.vocabulary.events import AskFailed, AskSent, CampaignFinished, ReplyReceived

FAULT_MIX = [
    ("500", 0.02),
    ("503", 0.015),
    ("529", 0.01),
    ("reset", 0.01),
    ("malformed", 0.01),
    ("empty", 0.005),
    ("400", 0.01),
    ("404", 0.005),
    ("refusal", 0.005),
    ("429", 0.01),
    ("429-ms", 0.01),
]
NOT_RETRIED = {"bad_request", "not_found", "content_refused"}


def _chooser(seed: int):
    def choose(n: int) -> str:
        roll = random.Random(seed * 1_000_003 + n).random()
        for fault, share in FAULT_MIX:
            if roll < share:
                return fault
            roll -= share
        return "ok"

    return choose


@pytest.mark.slow
async def test_thousands_of_calls_against_a_throttling_failing_vendor(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    vendor.chooser = _chooser(7)
    vendor.max_in_flight = 10  # beyond that the vendor answers 429 + retry-after-ms
    vendor.throttle_retry_ms = 40
    vendor.retry_after_s = 0.2
    vendor.retry_after_ms = 150
    vendor.latency_s = 0.004
    config = probe_config(
        [
            {
                "name": "openai:gpt-4o-mini",
                "max_in_flight": 24,
                "options": {
                    "base_url": base_url("openai", vendor),
                    "rpm": 300_000,
                    "tpm": 50_000_000,
                },
            }
        ],
        cases=1500,
        max_attempts=6,
        call_timeout_s=10,
    )
    budgets = build_budgets(config)
    gate = budgets.gates["openai:gpt-4o-mini"]
    model = build_model(config.models[0])
    limits_seen: list[int] = []

    async def sample() -> None:
        while True:
            limits_seen.append(gate.concurrency.limit)
            await asyncio.sleep(0.01)

    sampler = asyncio.create_task(sample())
    db = tmp_path / "campaign.db"
    try:
        summary = await run_engine(config, db, {model.name: model}, budgets.call_gates())
    finally:
        sampler.cancel()
        await model.aclose()

    assert summary.status == "completed" and summary.cases_closed == 1500
    events = read_events(db)
    sent = [e for e in events if isinstance(e.event, AskSent)]
    assert len(sent) >= 3000
    # Every call the vendor saw is an AskSent (no hidden SDK retries), and vice versa.
    assert len(vendor.requests) == len(sent)

    kinds: Counter[str] = Counter()
    for (case_id, turn), items in attempts_by_turn(events).items():
        by_attempt: dict[int, list[object]] = {}
        for stored in items:
            by_attempt.setdefault(stored.event.attempt, []).append(stored)  # type: ignore[union-attr]
        for attempt, group in sorted(by_attempt.items()):
            outcomes = [s for s in group if not isinstance(s.event, AskSent)]  # type: ignore[attr-defined]
            assert len(group) - len(outcomes) == 1, (case_id, turn, attempt)
            assert len(outcomes) == 1, f"{case_id} turn {turn} attempt {attempt}: no single outcome"
            outcome = outcomes[0].event  # type: ignore[attr-defined]
            if isinstance(outcome, AskFailed):
                kinds[outcome.error_kind] += 1
                later = [a for a in by_attempt if a > attempt]
                if outcome.error_kind in NOT_RETRIED:
                    assert outcome.decision == "give_up" and not later
                if outcome.decision == "retry":
                    assert later, "a retry decision with no retry"
                    if outcome.retry_after is not None:
                        assert outcome.wait_s == pytest.approx(outcome.retry_after)
                        resent = next(
                            s for s in by_attempt[attempt + 1] if isinstance(s.event, AskSent)
                        )  # type: ignore[attr-defined]
                        waited = resent.ts - outcomes[0].ts  # type: ignore[attr-defined]
                        assert waited >= outcome.retry_after - 0.02, (case_id, turn, waited)
        last = items[-1].event
        assert isinstance(last, ReplyReceived | AskFailed)

    for kind in (
        "rate_limited",
        "server_error",
        "overloaded",
        "connection",
        "malformed_response",
        "bad_request",
        "not_found",
        "content_refused",
    ):
        assert kinds[kind] > 0, f"no {kind} failure was exercised: {kinds}"
    assert vendor.peak_in_flight <= 24
    # Calls in flight shrank on 429s and grew back afterwards. The limit only grows below
    # its maximum, that is after a shrink; the gate counts its own steps, because a 10 ms
    # sampler can miss the last growth when a late 429 lands near the campaign's end.
    assert gate.concurrency.shrinks >= 1 and gate.concurrency.grows >= 1
    assert min(limits_seen) < 24
    snap = budgets.snapshot()
    assert snap.models[0].rate_limited == kinds["rate_limited"]
    assert snap.spent_usd == pytest.approx(spent_so_far(EventReader(db), "c1"))


async def test_authentication_error_stops_the_campaign_at_once(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    vendor.chooser = lambda n: "401"
    config = probe_config(
        [
            {
                "name": "anthropic:claude-haiku-4-5",
                "max_in_flight": 8,
                "options": {"base_url": base_url("anthropic", vendor)},
            }
        ],
        cases=2000,
    )
    from harness.running.runner import run_campaign

    db = tmp_path / "auth.db"
    with pytest.raises(CampaignAbortedError) as caught:
        await run_campaign(config, db)
    assert len(vendor.requests) <= 8, "kept calling after the first 401"
    message = str(caught.value)
    assert "authentication" in message.lower() or "401" in message
    assert canary_keys["ANTHROPIC_API_KEY"] not in message
    with EventReader(db) as log:
        finished = [e.event for e in log.events(kinds=("CampaignFinished",))]
        failed = [e.event for e in log.events(kinds=("AskFailed",))]
    assert isinstance(finished[-1], CampaignFinished) and finished[-1].status == "aborted"
    assert failed and all(isinstance(f, AskFailed) and f.decision == "abort" for f in failed)


async def test_spending_ceiling_stops_cleanly(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    config = probe_config(
        [
            {
                "name": "google:gemini-2.0-flash",
                "max_in_flight": 4,
                "options": {
                    "base_url": base_url("google", vendor),
                    "price_in_per_mtok": 1000,
                    "price_out_per_mtok": 1000,
                },
            }
        ],
        cases=200,
        spend_ceiling_usd=0.5,
    )
    budgets = build_budgets(config)
    model = build_model(config.models[0])
    db = tmp_path / "ceiling.db"
    try:
        summary = await run_engine(config, db, {model.name: model}, budgets.call_gates())
    finally:
        await model.aclose()
    assert summary.status == "stopped" and "ceiling" in summary.reason
    assert summary.ceiling_usd == 0.5
    assert "--spend-ceiling" in summary.reason
    assert 0 < summary.cases_closed < 200
    with EventReader(db) as log:
        spent = spent_so_far(log, "c1")
    assert 0.4 < spent <= 0.5
    assert budgets.meter.spent_usd == pytest.approx(spent)
    assert isinstance(budgets.gates[model.name], VendorGate)
    # Every call that was sent before the stop has its outcome in the log.
    events = read_events(db)
    for items in attempts_by_turn(events).values():
        assert not isinstance(items[-1].event, AskSent)
