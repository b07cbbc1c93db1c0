"""A log whose case events cannot be folded is refused with a store error, not a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.running.runner import load_resume_point
from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.errors import StoreError
from harness.vocabulary.events import CampaignStarted, ReplyReceived
from harness.vocabulary.model import Reply

CONFIG = {
    "name": "m",
    "models": [{"name": "sim:planted"}],
    "relations": [{"name": "metaquerier.mr1", "cases": 1}],
}


async def test_reply_without_its_case_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "bad.db"
    async with await EventWriter.open(db) as store:
        started = CampaignStarted(
            name="m", config=CONFIG, config_hash="x", code_version="x", harness_version="x"
        )
        orphan = ReplyReceived(turn=0, reply=Reply(text="[]"))
        await store.append([PendingEvent("c1", "", 1, started)])
        await store.append([PendingEvent("c1", "metaquerier.mr1/0/r0@sim:planted", 1, orphan)])
    with pytest.raises(StoreError, match="malformed event sequence"):
        load_resume_point(db)
