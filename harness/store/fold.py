"""Fold a case's events into its state: the transcript so far, open turns, verdicts.

The engine (to resume), replay (to verify) and show/report all read cases through this
one fold, so "what happened in a case" has a single definition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from harness.store.reader import StoredEvent
from harness.vocabulary.errors import EventDecodeError
from harness.vocabulary.events import (
    AskFailed,
    AskSent,
    CaseClosed,
    CaseOpened,
    ReplyReceived,
    VerdictReached,
)
from harness.vocabulary.model import Message
from harness.vocabulary.relation import Ask, Case, Transcript, Turn, Verdict

# Decisions after which a turn has its final outcome (a failure the relation sees).
_FINAL_DECISIONS = frozenset({"give_up", "abort"})


@dataclass
class TurnState:
    turn: int
    ask: Ask
    sent: list[AskSent] = field(default_factory=list)
    reply: ReplyReceived | None = None
    failures: list[AskFailed] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """A reply, or a failure the engine decided not to retry (given up or aborted).

        A turn whose last failure was *suspended* (transient failures past ``max_attempts``)
        is open: "failed, retryable", sent again by resume."""
        if self.reply is not None:
            return True
        return (
            bool(self.failures)
            and self.failures[-1].decision in _FINAL_DECISIONS
            and (len(self.failures) >= len(self.sent))
        )

    @property
    def suspended(self) -> bool:
        """Open because its transient failures outlasted ``max_attempts`` (failed, retryable)."""
        return (
            self.reply is None
            and bool(self.failures)
            and self.failures[-1].decision == "suspend"
            and len(self.failures) >= len(self.sent)
        )

    @property
    def counted_attempts(self) -> int:
        """Attempts that count toward ``max_attempts``: those that got a vendor error
        since the turn was last suspended.

        An attempt cancelled at a stop, or sent and lost in a crash, never reached an
        outcome from the model, so interruptions do not use up a turn's retries; a resume
        of a suspended turn starts its count afresh (docs/resume-replay.md).
        """
        counted = 0
        for f in self.failures:
            if f.decision == "suspend":
                counted = 0
            elif f.error_kind != "cancelled":
                counted += 1
        return counted

    @property
    def in_flight(self) -> bool:
        """Sent and no outcome for the last attempt: the call was under way at a crash."""
        if self.finished or not self.sent:
            return False
        last_attempt = self.sent[-1].attempt
        return not any(f.attempt == last_attempt for f in self.failures)

    def as_turn(self) -> Turn:
        if self.reply is not None:
            return Turn(index=self.turn, ask=self.ask, reply=self.reply.reply.text)
        last = self.failures[-1] if self.failures else None
        error = f"{last.error_kind}: {last.message}" if last else "no outcome"
        return Turn(index=self.turn, ask=self.ask, error=error)


@dataclass
class CaseState:
    case: Case
    next_seq: int = 1
    turns: dict[int, TurnState] = field(default_factory=dict)
    verdicts: list[tuple[str, Verdict]] = field(default_factory=list)  # (source, verdict)
    closed: bool = False

    def transcript(self) -> Transcript:
        """Finished turns, in turn order: what ``step`` saw (or will see)."""
        done = [t.as_turn() for _, t in sorted(self.turns.items()) if t.finished]
        return Transcript(turns=tuple(done))

    def open_turns(self) -> list[TurnState]:
        """Turns started and not finished (in flight at a crash, or awaiting a retry)."""
        return [t for _, t in sorted(self.turns.items()) if not t.finished]

    @property
    def verdict(self) -> Verdict | None:
        own = [v for source, v in self.verdicts if source == "relation"]
        return own[-1] if own else None


def fold_case(events: Iterable[StoredEvent]) -> CaseState:
    state: CaseState | None = None
    for stored in events:
        ev = stored.event
        if isinstance(ev, CaseOpened):
            state = CaseState(case=ev.case)
        if state is None:
            raise ValueError(f"case {stored.case_id} has events before its CaseOpened")
        state.next_seq = max(state.next_seq, stored.seq + 1)
        if isinstance(ev, AskSent):
            ts = state.turns.setdefault(ev.turn, TurnState(turn=ev.turn, ask=ev.ask))
            ts.sent.append(ev)
        elif isinstance(ev, ReplyReceived):
            state.turns[ev.turn].reply = ev
        elif isinstance(ev, AskFailed):
            state.turns[ev.turn].failures.append(ev)
        elif isinstance(ev, VerdictReached):
            state.verdicts.append((ev.source, ev.verdict))
        elif isinstance(ev, CaseClosed):
            state.closed = True
    if state is None:
        raise ValueError("no CaseOpened event")
    return state


def messages_for(ask: Ask, transcript: Transcript) -> list[Message]:
    """The full request for ``ask``: its thread's history (or the forked one's), then the prompt.

    Failed turns are left out of the history: the model never saw an answer to them.
    """
    history = transcript.thread(ask.thread)
    source = history
    if not history and ask.fork_of is not None:
        source = transcript.thread(ask.fork_of)
    system = source[0].ask.system if source else ask.system
    messages: list[Message] = []
    if system:
        messages.append(Message(role="system", content=system))
    for turn in source:
        if turn.reply is None:
            continue
        messages.append(Message(role="user", content=turn.ask.prompt))
        messages.append(Message(role="assistant", content=turn.reply))
    messages.append(Message(role="user", content=ask.prompt))
    return messages


def fold_or_raise(case_id: str, events: Sequence[object]) -> CaseState:
    """`fold_case`, with a malformed event sequence reported as a store error."""
    try:
        return fold_case(events)  # type: ignore[arg-type]
    except (KeyError, ValueError) as exc:
        raise EventDecodeError(f"case {case_id}: events do not fold into a case ({exc})") from exc
