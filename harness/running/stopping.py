"""Stopping when decided, in a run: which relations have reached their decision, and the
looks that decide it (`harness.reporting.sequential` holds the statistics).

A look of a relation and model is taken when its first ``look_every * L`` planned cases (in
the relation's own order: index, then repeat) are all closed, whatever order they closed in;
so a look counts a fixed set of cases and the same verdicts give the same looks in a run,
after a resume and in a replay. A decided relation's cases not yet opened are not drawn;
cases already open finish (they are paid for, and no case is lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.reporting.sequential import (
    BettingSequence,
    GroupSequence,
    decide,
    family_alpha,
    look_fractions,
    obf_bounds,
    pair_value,
)
from harness.running.campaign import Stopping
from harness.running.plan import Plan
from harness.vocabulary.events import StoppingLook, VerdictReached


@dataclass
class _Unit:
    """One relation and model: its sequence, the closed prefix and the looks taken."""

    size: int  # planned cases, repeats counted
    sequence: BettingSequence | GroupSequence
    counted: int = 0  # the closed prefix fed to the sequence
    pending: dict[int, int | None] = field(default_factory=dict)  # closed beyond the prefix
    recorded: int = 0  # looks the log holds already (not taken again)
    decided: StoppingLook | None = None


class StoppingMonitor:
    """The looks of one campaign's relations (one monitor per engine or replay)."""

    def __init__(self, spec: Stopping, plan: Plan) -> None:
        self.spec = spec
        self.repeats = plan.config.repeats
        self._sizes = {name: count * self.repeats for name, _, count in plan.relations}
        self.models = [m.name for m in plan.config.models]
        self.alpha = family_alpha(spec.alpha, len(self._sizes) * len(self.models))
        self._units: dict[tuple[str, str], _Unit] = {}
        self.not_drawn = 0  # cases this run left out because their relation was decided

    def _unit(self, relation: str, model: str) -> _Unit:
        unit = self._units.get((relation, model))
        if unit is None:
            size = self._sizes.get(relation, 0)
            sequence: BettingSequence | GroupSequence
            if self.spec.method == "group-sequential" and size > 0:
                bounds = obf_bounds(look_fractions(size, self.spec.look_every), self.alpha)
                sequence = GroupSequence(alpha=self.alpha, bounds=bounds)
            else:
                sequence = BettingSequence(alpha=self.alpha)
            unit = _Unit(size, sequence)
            self._units[(relation, model)] = unit
        return unit

    def decision(self, relation: str, model: str) -> StoppingLook | None:
        """The look that decided this relation and model (None: undecided)."""
        unit = self._units.get((relation, model))
        return unit.decided if unit is not None else None

    def skips(self, case_id: str) -> bool:
        """True for a case of a decided relation (counted in ``not_drawn``)."""
        relation = case_id.partition("/")[0]
        model = case_id.rpartition("@")[2]
        if self.decision(relation, model) is None:
            return False
        self.not_drawn += 1
        return True

    def restore(self, looks: Iterable[StoppingLook]) -> None:
        """The looks a log holds (resume): a decided relation stays decided, and looks taken
        already are not taken again when its closed cases are fed back."""
        for look in looks:
            unit = self._unit(look.relation, look.model)
            unit.recorded = max(unit.recorded, look.look)
            if look.decision in self.spec.stop_on and unit.decided is None:
                unit.decided = look

    def closed(
        self,
        relation: str,
        model: str,
        index: int,
        repeat: int,
        outcome: str,
        evidence: dict[str, Any],
    ) -> list[StoppingLook]:
        """A case closed with this verdict: the looks it completes (new ones only)."""
        unit = self._unit(relation, model)
        if unit.decided is not None and unit.recorded >= unit.decided.look:
            return []  # decided by a look the log holds: nothing more to read
        unit.pending[index * self.repeats + repeat] = pair_value(outcome, evidence)
        looks: list[StoppingLook] = []
        every = self.spec.look_every
        while unit.counted in unit.pending and unit.decided is None:
            d = unit.pending.pop(unit.counted)
            unit.counted += 1
            if d is not None:
                unit.sequence.add(d)
            if unit.counted % every and unit.counted < unit.size:
                continue
            number = -(-unit.counted // every)  # the last look may count fewer cases
            look = self._look(relation, model, unit, number)
            if look is None:
                continue
            if look.decision in self.spec.stop_on:
                unit.decided = look
                unit.pending.clear()
            if number > unit.recorded:
                looks.append(look)
        return looks

    def _look(self, relation: str, model: str, unit: _Unit, number: int) -> StoppingLook | None:
        sequence = unit.sequence
        if sequence.pairs == 0:
            return None  # no control (or no valid pair yet): nothing to read
        interval = sequence.interval(number)
        low, high = interval if interval is not None else (sequence.low, sequence.high)
        return StoppingLook(
            relation=relation,
            model=model,
            look=number,
            cases=unit.counted,
            pairs=sequence.pairs,
            excess=sequence.excess,
            low=low,
            high=high,
            alpha=self.alpha,
            decision=decide(interval, self.spec.smallest_effect),
        )


def _case_place(case_id: str) -> tuple[str, int, int, str] | None:
    """(relation, index, repeat, model) of a planned case id (`harness.running.plan`)."""
    relation, _, rest = case_id.partition("/")
    index, _, rest = rest.partition("/r")
    repeat, _, model = rest.partition("@")
    if not (index.isdigit() and repeat.isdigit() and model):
        return None
    return relation, int(index), int(repeat), model


class StoppingLog(Protocol):
    """What the looks are read from: a log's events of some kinds, in commit order."""

    def events(
        self, campaign: str | None = None, *, kinds: Iterable[str] | None = None
    ) -> Iterator[Any]: ...


def recorded_looks(log: StoppingLog, campaign: str) -> list[StoppingLook]:
    """The looks a log holds, in commit order."""
    return [
        e.event
        for e in log.events(campaign, kinds=("StoppingLook",))
        if isinstance(e.event, StoppingLook)
    ]


def feed_verdicts(monitor: StoppingMonitor, log: StoppingLog, campaign: str) -> list[StoppingLook]:
    """Every case's verdict (the relation's own, not a re-judging) given to ``monitor``;
    the looks it takes that it had not restored."""
    looks: list[StoppingLook] = []
    for stored in log.events(campaign, kinds=("VerdictReached",)):
        event = stored.event
        if not isinstance(event, VerdictReached) or event.source != "relation":
            continue
        place = _case_place(stored.case_id)
        if place is None:
            continue
        relation, index, repeat, model = place
        verdict = event.verdict
        looks += monitor.closed(
            relation, model, index, repeat, verdict.outcome.value, verdict.evidence
        )
    return looks


def monitor_from_log(
    spec: Stopping, plan: Plan, log: StoppingLog, campaign: str
) -> tuple[StoppingMonitor, list[StoppingLook]]:
    """The monitor of a resumed campaign: the decisions its log records, and its closed
    cases' verdicts fed back so the undecided relations' sequences go on where they were.
    Also the looks the log lacks (a crash between a case's close and its look): the resume
    records them first."""
    monitor = StoppingMonitor(spec, plan)
    monitor.restore(recorded_looks(log, campaign))
    return monitor, feed_verdicts(monitor, log, campaign)


def recomputed_looks(
    spec: Stopping, plan: Plan, log: StoppingLog, campaign: str
) -> list[tuple[str, str, str]]:
    """Replay's check: the looks recomputed from the recorded verdicts against the looks
    the log records; (which look, as logged, as recomputed) for each difference (none: the
    same decisions)."""
    monitor = StoppingMonitor(spec, plan)
    fresh = {(x.relation, x.model, x.look): x for x in feed_verdicts(monitor, log, campaign)}
    logged = {(x.relation, x.model, x.look): x for x in recorded_looks(log, campaign)}
    found = []
    for key in sorted(set(fresh) | set(logged)):
        now, then = fresh.get(key), logged.get(key)
        if now != then:
            found.append(
                (
                    f"stopping look {key[2]} of {key[0]}@{key[1]}",
                    _shown(then),
                    _shown(now),
                )
            )
    return found


def _shown(look: StoppingLook | None) -> str:
    if look is None:
        return "(none)"
    return (
        f"{look.decision} at {look.cases} cases ({look.pairs} pairs, excess {look.excess:+.4f} "
        f"[{look.low:+.4f}, {look.high:+.4f}])"
    )
