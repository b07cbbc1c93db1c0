"""While a campaign runs the collector runs rarely (it cost 14 % of a turn's CPU on `sim`),
yet still runs, and the process's settings are restored when the run ends."""

from __future__ import annotations

import gc
from pathlib import Path

from harness.plugins.assembly import build_model
from harness.running.campaign import parse_campaign
from harness.running.engine import Engine
from harness.runtime.gc_pause import gc_infrequent
from harness.store.writer import EventWriter, PendingEvent
from harness.testing import FakeModel
from harness.vocabulary.events import CampaignStarted

CONFIG = {
    "name": "gc",
    "seed": 1,
    "models": [{"name": "sim:gc", "max_in_flight": 4}],
    "relations": [{"name": "metaquerier.mr1", "cases": 6}],
}


async def test_a_run_collects_rarely_and_restores_the_settings(tmp_path: Path) -> None:
    config = parse_campaign(CONFIG, source="test")
    before, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    # The sim model, noting the collector's settings at every call.
    seen: list[tuple[int, int]] = []  # (young threshold, frozen objects)
    model = FakeModel(
        name=config.models[0].name,
        wraps=build_model(config.models[0]),
        on_call=lambda m, p: seen.append((gc.get_threshold()[0], gc.get_freeze_count())),
    )
    async with await EventWriter.open(tmp_path / "gc.db") as store:
        started = CampaignStarted(
            name="gc", config={}, config_hash="", code_version="", harness_version=""
        )
        await store.append([PendingEvent("gc", "", 1, started)])
        summary = await Engine(store, config, "gc", {model.name: model}, []).run()
    assert summary.cases_closed == 6 and seen
    assert all(young >= 20_000 and frozen > frozen_before for young, frozen in seen)
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen_before


def test_nested_blocks_restore_only_at_the_outermost_end() -> None:
    before, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    with gc_infrequent():
        with gc_infrequent(young=50_000):
            assert gc.get_threshold()[0] == max(20_000, before[0])
        assert gc.get_threshold()[0] == max(20_000, before[0]) and gc.get_freeze_count() > 0
        assert gc.collect() >= 0  # still collects on request
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen_before
