"""Resume decodes only the open cases: the first call of a resumed campaign must not wait
for every event of a long log to be decoded and folded."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness.store.reader as reader_module
from harness.models.providers import spent_so_far
from harness.running.campaign import parse_campaign
from harness.running.runner import load_resume_point, run_campaign
from harness.store.fold import fold_case
from harness.store.reader import EventReader

CONFIG = {
    "name": "fold-open-only",
    "seed": 3,
    "models": [{"name": "sim:planted", "max_in_flight": 4}],
    "relations": [{"name": "metaquerier.mr1", "cases": 12}],
}


async def test_closed_cases_are_not_decoded_and_the_point_is_the_full_folds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "log.db"
    await run_campaign(parse_campaign(CONFIG, source="test"), db)
    with EventReader(db) as log:
        campaign = log.latest_campaign()
        states = {cid: fold_case(events) for cid, events in log.cases(campaign)}
        spent = spent_so_far(log, campaign)
        events = sum(1 for _ in log.events(campaign))

    decoded = []
    real = reader_module.decode_event

    def counting(kind: str, version: int, payload: str | bytes):  # type: ignore[no-untyped-def]
        decoded.append(kind)
        return real(kind, version, payload)

    monkeypatch.setattr(reader_module, "decode_event", counting)
    point = load_resume_point(db)
    assert point.closed == {cid for cid, s in states.items() if s.closed}
    assert len(point.closed) == 12
    assert point.open_cases == {}
    assert point.spent_usd == pytest.approx(spent)
    # The campaign's CampaignStarted (looked up twice), nothing of its 12 closed cases.
    assert len(decoded) <= 3 < events, decoded
