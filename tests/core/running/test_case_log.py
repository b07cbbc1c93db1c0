"""`CaseLog.close_soon`: the closing batch is queued in the store at the call, numbered after
everything the case appended, and committed even when nobody awaits it before the store
closes (the engine's run closes the store after gathering its closings; a batch queued only
later, by a task, would then fail with StoreClosedError and the case would stay open)."""

from __future__ import annotations

from pathlib import Path

from harness.running.case_log import CaseLog
from harness.store.fold import CaseState
from harness.store.reader import EventReader
from harness.store.writer import EventWriter
from harness.vocabulary.events import CaseClosed, VerdictReached
from harness.vocabulary.relation import Outcome, Verdict
from tests.core.store.test_store_contract import CAMPAIGN, case, reply, sent


async def test_closing_batch_is_queued_at_the_call(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    c = case()
    async with await EventWriter.open(db) as store:
        log = CaseLog.opened(store, CAMPAIGN, CaseState(case=c))
        await log.append(sent(0))
        await log.append(reply(0, "[nurse]"))
        closing = log.close_soon(
            VerdictReached(verdict=Verdict(outcome=Outcome.HELD, reason="r")),
            CaseClosed(outcome="held"),
        )
        # No await between the call and the close: the batch is already in the queue.
    assert closing.done() and len(closing.result()) == 2
    with EventReader(db) as reader:
        kinds = [(s.seq, s.event.kind) for s in reader.case_events(CAMPAIGN, c.case_id)]
    assert kinds == [
        (1, "CaseOpened"),
        (2, "AskSent"),
        (3, "ReplyReceived"),
        (4, "VerdictReached"),
        (5, "CaseClosed"),
    ]
