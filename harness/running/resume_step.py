"""Where a resumed case's relation left off: the step that a crash or a stop interrupted.

What for: the asks of one step are sent concurrently and each appends its own AskSent, so a
crash can fall between those commits, and at a stop an ask still waiting for a gate slot
is never sent at all. The log then holds some of the step's asks and not the others. Resume
must finish that step (absent asks asked, open ones re-sent, answered ones kept) before the
relation sees the transcript again; shown the half-done step, the relation would take the
missing asks for failed ones and reach a different verdict than an uninterrupted run.

A relation's step is a pure function of the case and the transcript (replay relies on the
same), so stepping it over the logged turns finds the interrupted step and its asks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.store.fold import CaseState
from harness.vocabulary.relation import Ask, Transcript, Verdict


@dataclass(frozen=True)
class InterruptedStep:
    """A step the log holds only part of: ask ``i`` is turn ``len(before.turns) + i``."""

    before: Transcript  # the turns the step was computed from
    asks: Sequence[Ask]

    @property
    def first(self) -> int:
        return len(self.before.turns)


def interrupted_step(
    step: Callable[[Transcript], Sequence[Ask] | Verdict], state: CaseState
) -> InterruptedStep | None:
    """The step of ``state`` that has some turns logged and is not finished, or None.

    None also when the log does not follow the relation's steps (a turn the replayed steps
    never ask, or a verdict before the logged turns end): the caller then falls back to
    re-sending the open turns as logged.
    """
    if not state.turns:
        return None
    finished = {t.index: t for t in state.transcript().turns}
    last_logged = max(state.turns)
    transcript = Transcript()
    while True:
        result = step(transcript)
        if isinstance(result, Verdict) or not result:
            return None
        first = len(transcript.turns)
        indices = range(first, first + len(result))
        if last_logged >= indices.stop:
            if not all(i in finished for i in indices):
                return None  # a later step was logged while this one is unfinished
            transcript = transcript.extend([finished[i] for i in indices])
            continue
        if all(i in finished for i in indices):
            return None  # the last logged step is complete: the next one is not started
        return InterruptedStep(transcript, list(result))
