"""The append side of one running case: its events numbered in order and written to the log.

What for: the engine writes a case's events in as few commits as invariant 1 allows, because
every commit a case waits for costs a latency-bound campaign throughput directly.

- A new case's CaseOpened is held back (`CaseLog.opening`) and written in one atomic batch
  with the case's first step (its first AskSent, or its verdict). Nothing is sent to a model
  before that batch is committed, so the call still waits for everything it depends on; a
  crash before the commit leaves no trace of the case, and resume starts it afresh.
- The closing batch (VerdictReached and CaseClosed) is queued at once but not awaited
  (`CaseLog.close_soon`): the verdict is a pure function of events already committed (every
  reply the verdict step saw), so if a crash loses it, resume recomputes it without a call.
  Whoever needs it durable (the worker before its next case's result, a lease before its
  release, the run before CampaignFinished) awaits the returned future.
"""

from __future__ import annotations

import asyncio

from harness.store.fold import CaseState
from harness.store.protocol import EventSink
from harness.store.writer import PendingEvent
from harness.vocabulary.events import CaseOpened, Event


class CaseLog:
    """Numbers and appends the events of one case (``state.next_seq`` moves with them)."""

    def __init__(self, store: EventSink, campaign_id: str, state: CaseState) -> None:
        self.store = store
        self.campaign_id = campaign_id
        self.state = state
        self.opening: CaseOpened | None = None  # not written yet: goes with the first batch

    @classmethod
    def opened(cls, store: EventSink, campaign_id: str, state: CaseState) -> CaseLog:
        """A new case: its CaseOpened waits to be written with the case's first step."""
        log = cls(store, campaign_id, state)
        log.opening = CaseOpened(case=state.case)
        return log

    def _numbered(self, events: tuple[Event, ...]) -> list[PendingEvent]:
        if self.opening is not None:
            events = (self.opening, *events)
            self.opening = None
        case_id, state = self.state.case.case_id, self.state
        pending = []
        for ev in events:
            pending.append(PendingEvent(self.campaign_id, case_id, state.next_seq, ev))
            state.next_seq += 1
        return pending

    def append(self, *events: Event) -> asyncio.Future[list[int]]:
        """Append ``events`` (after the held-back CaseOpened, if any); the future resolves
        once they are committed.

        A plain function that queues the batch at the call and returns the store's future,
        not a coroutine: a turn awaits two appends, and a coroutine around each was one
        more frame to create, resume and leave every time its commit woke the case.
        """
        opening, next_seq = self.opening, self.state.next_seq
        pending = self._numbered(events)
        if pending:
            try:
                return self.store.append_soon(pending)
            except BaseException:
                # Not queued (an event that does not encode): its positions stay free, so
                # what the caller appends instead leaves no gap in the case's stream.
                self.opening, self.state.next_seq = opening, next_seq
                raise
        nothing: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        nothing.set_result([])
        return nothing

    def close_soon(self, *events: Event) -> asyncio.Future[list[int]]:
        """Queue the case's closing ``events``; the future resolves once they are committed.

        The batch is numbered now, so nothing appended to this case later can take its
        positions. No other case depends on it, so its place in the store's queue among
        other cases' batches does not matter.
        """
        return self.store.append_soon(self._numbered(events))
