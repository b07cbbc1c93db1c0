"""A two-turn probe relation and helpers to run campaigns against the fake vendors."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.models.gates import CallGate
from harness.plugins.registry import Family, register_family
from harness.running.campaign import CampaignConfig, parse_campaign
from harness.running.engine import Engine, RunSummary
from harness.store.reader import EventReader, StoredEvent
from harness.store.writer import EventWriter
from harness.vocabulary.events import AskFailed, AskSent, ReplyReceived
from harness.vocabulary.model import Model
from harness.vocabulary.relation import (
    Ask,
    Case,
    Outcome,
    RelationBase,
    Transcript,
    Verdict,
)


class VendorProbe(RelationBase):
    """Asks a question, then a follow-up in the same thread; holds if both are echoed."""

    name = "test-vendor-probe"
    family = "test"
    summary = "two echoed turns (vendor tests only)"
    turns_per_case = 2

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {"n": index}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        failed = transcript.first_error()
        if failed is not None:
            return Verdict(outcome=Outcome.INVALID, reason=f"turn failed: {failed.error}")
        turns = transcript.thread("t")
        if not turns:
            return [
                Ask(
                    thread="t",
                    prompt=f"case {case.data['n']} first",
                    system="Be brief.",
                    max_tokens=32,
                )
            ]
        if len(turns) == 1:
            return [Ask(thread="t", prompt=f"case {case.data['n']} second", max_tokens=32)]
        held = all(t.reply and t.reply.startswith("echo: case") for t in turns)
        return Verdict(outcome=Outcome.HELD if held else Outcome.VIOLATED, reason="echo check")


register_family(
    Family(name="test", summary="vendor test relations", relations=(VendorProbe,)),
    origin=__name__,
)


def probe_config(models: list[dict[str, Any]], cases: int, **limits: Any) -> CampaignConfig:
    return parse_campaign(
        {
            "name": "vendor-probe",
            "models": models,
            "relations": [{"name": VendorProbe.name, "cases": cases}],
            "limits": limits,
        }
    )


async def run_engine(
    config: CampaignConfig,
    db: Path,
    models: dict[str, Model],
    gates: dict[str, CallGate],
    campaign: str = "c1",
) -> RunSummary:
    async with await EventWriter.open(db) as store:
        engine = Engine(store, config, campaign, models, [], gates=gates)
        engine.retry = type(engine.retry)(
            max_attempts=config.limits.max_attempts, base_s=0.05, cap_s=5.0, seed=config.seed
        )
        engine.calls.retry = engine.retry  # the call loop holds the policy it decides with
        return await engine.run()


def attempts_by_turn(events: list[StoredEvent]) -> dict[tuple[str, int], list[StoredEvent]]:
    turns: dict[tuple[str, int], list[StoredEvent]] = defaultdict(list)
    for stored in events:
        if isinstance(stored.event, AskSent | ReplyReceived | AskFailed):
            turns[(stored.case_id, stored.event.turn)].append(stored)
    return turns


def read_events(db: Path, campaign: str = "c1") -> list[StoredEvent]:
    with EventReader(db) as log:
        return list(log.events(campaign))
