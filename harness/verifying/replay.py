"""Offline replay: prove from the log alone that today's code asks and decides what was logged.

Two ways to replay, neither opens a network connection:

- `verify_log` re-derives every case purely: ``make_case(index, seed)`` must give the
  recorded case data, and ``step(case, transcript prefix)`` must give exactly the recorded
  asks (and the requests built from them) at every step and exactly the recorded verdict at
  the end, compared byte for byte as JSON. After a relation changes it lists precisely which
  asks and verdicts differ, case by case, without the engine and without writing a log.
- `replay_into` re-runs the campaign through the engine into a new log with `ReplayModel`
  standing in for every model: recorded outcomes are served by (case, turn), else by request
  key. Its report must equal the live run's.

Turns of re-judging (threads named ``rejudge:<model>``) are not part of a relation's
conversation and are left out of both.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.running.campaign import CampaignConfig, parse_recorded_campaign
from harness.store import case_digest
from harness.store.fold import CaseState, TurnState, fold_case, fold_or_raise, messages_for
from harness.store.log import Log, LogLike
from harness.store.open import open_reader
from harness.store.protocol import EventLog
from harness.store.reader import EventReader, StoredEvent
from harness.verifying._replay_parallel import split_point, verify_in_two
from harness.verifying._replay_quick import Row, quick_verify, raw_cases, step_safely
from harness.vocabulary.errors import (
    ModelError,
    ReplayMissError,
    StoreError,
)
from harness.vocabulary.events import (
    AskFailed,
    AskSent,
    CampaignStarted,
    CaseClosed,
    CaseOpened,
    ReplyReceived,
    VerdictReached,
    decode_event,
)
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    Model,
    ModelSpec,
    Reply,
    request_key,
)
from harness.vocabulary.refusal import as_recorded
from harness.vocabulary.relation import Relation, Transcript, Verdict, derive_seed

if TYPE_CHECKING:
    from harness.models.gates import CallGate
    from harness.running.engine import CallContext, RunSummary

# The engine, its gates and the writer are imported by `ReplayModel` and `replay_into` on
# first use: `verify_log` (``replay --verify``) needs none of them, and importing them was
# about a fifth of that command's start-up.

REJUDGE_THREAD_PREFIX = "rejudge:"


def is_rejudge_thread(thread: str) -> bool:
    return thread.startswith(REJUDGE_THREAD_PREFIX)


def relation_turns(state: CaseState) -> list[TurnState]:
    """The case's own turns, in turn order (re-judging turns left out)."""
    return [t for _, t in sorted(state.turns.items()) if not is_rejudge_thread(t.ask.thread)]


def recorded_config(log: EventReader, campaign: str) -> tuple[CampaignStarted, CampaignConfig]:
    started = next(
        (s for cid, s in log.campaigns() if cid == campaign),
        None,
    )
    if started is None:
        raise StoreError(f"{log.path} has no campaign {campaign!r}")
    return started, parse_recorded_campaign(
        started.config, source=f"{log.path} (recorded campaign)"
    )


# --- pure verification -----------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    case_id: str
    what: str  # "case data" | "ask" | "request" | "verdict" | "steps"
    turn: int | None
    recorded: str
    replayed: str


@dataclass
class VerifyResult:
    campaign: str
    cases: int = 0
    asks: int = 0
    verdicts: int = 0
    open_cases: int = 0
    elapsed_s: float = 0.0
    differences: list[Mismatch] = field(default_factory=list)
    # Cases checked against the digest chain committed with their events, and cases
    # without one (begun before digests existed: checked by re-derivation alone).
    digested: int = 0
    undigested: int = 0

    @property
    def differing_cases(self) -> list[str]:
        return list(dict.fromkeys(m.case_id for m in self.differences))


def _json(messages: Sequence[Message]) -> str:
    return "[" + ",".join(m.model_dump_json() for m in messages) + "]"


def verify_case(
    state: CaseState,
    relation: Relation,
    campaign_seed: int,
    counts: VerifyResult,
    order: dict[int, tuple[int, int]] | None = None,
    dress: ModelSpec | None = None,
) -> list[Mismatch]:
    """Re-derive one case from its recorded transcript; stop at its first difference (what
    follows would depend on replies to asks that were never sent).

    A closed case must fold into its recorded outcome: a turn without its outcome or a
    missing verdict is a difference, not "still open" (an event was deleted). ``order``
    (turn -> seq of its first AskSent, seq of its last outcome; `turn_positions`): each
    step's asks must have been sent after the outcomes of the step before were recorded.
    """
    case = state.case
    cid = case.case_id
    seed = derive_seed(campaign_seed, case.relation, case.index)
    try:
        data = as_recorded(case.data, relation.make_case(case.index, seed))
    except Exception as exc:
        data = {"error": f"make_case raised {type(exc).__name__}: {exc}"}
    replayed_case = case.model_copy(update={"seed": seed, "data": data})
    if replayed_case.model_dump_json() != case.model_dump_json():
        return [
            Mismatch(
                cid, "case data", None, case.model_dump_json(), replayed_case.model_dump_json()
            )
        ]
    turns = relation_turns(state)
    transcript = Transcript()
    pos = 0
    while True:
        result = step_safely(relation, case, transcript)
        if isinstance(result, Verdict):
            if pos < len(turns):
                extra = turns[pos]
                return [
                    Mismatch(
                        cid,
                        "steps",
                        extra.turn,
                        f"turn {extra.turn} asked: {extra.ask.model_dump_json()}",
                        f"verdict instead: {result.model_dump_json()}",
                    )
                ]
            recorded = state.verdict
            if recorded is None:
                if state.closed:  # closed without the verdict that closed it: deleted
                    return [
                        Mismatch(
                            cid,
                            "verdict",
                            None,
                            "(no verdict, yet the case is closed: an event is missing)",
                            result.model_dump_json(),
                        )
                    ]
                counts.open_cases += 1  # stopped after its last reply, before the verdict
                return []
            counts.verdicts += 1
            if recorded.model_dump_json() != result.model_dump_json():
                return [
                    Mismatch(
                        cid, "verdict", None, recorded.model_dump_json(), result.model_dump_json()
                    )
                ]
            return []
        asks = list(result) if isinstance(result, list) else []
        if not asks:
            return [Mismatch(cid, "steps", None, "(a step)", "no asks and no verdict")]
        step_turns: list[TurnState] = []
        for i, ask in enumerate(asks):
            number = len(transcript.turns) + i
            if pos + i >= len(turns):
                if not state.closed:
                    counts.open_cases += 1  # stopped before this step was sent
                    return []
                return [Mismatch(cid, "ask", number, "(no such turn)", ask.model_dump_json())]
            rec = turns[pos + i]
            counts.asks += 1
            if rec.ask.answer is None:
                # Logged before asks declared answer shapes: a shape changes no free request.
                ask = ask.model_copy(update={"answer": None})
            if rec.turn != number or rec.ask.model_dump_json() != ask.model_dump_json():
                return [
                    Mismatch(
                        cid,
                        "ask",
                        rec.turn,
                        rec.ask.model_dump_json(),
                        ask.model_dump_json(),
                    )
                ]
            wanted = messages_for(ask, transcript)
            if dress is not None and ask.role != "judge":
                wanted = dress.dress(wanted)
            if rec.sent and _json(rec.sent[0].messages) != _json(wanted):
                return [
                    Mismatch(cid, "request", rec.turn, _json(rec.sent[0].messages), _json(wanted))
                ]
            step_turns.append(rec)
        unfinished = [t for t in step_turns if not t.finished]
        if unfinished:
            if state.closed:  # a closed case whose turn has no outcome: one was deleted
                turn = unfinished[0]
                return [
                    Mismatch(
                        cid,
                        "events",
                        turn.turn,
                        "(no reply or final failure, yet the case is closed: an event is missing)",
                        "the turn's outcome",
                    )
                ]
            counts.open_cases += 1  # in flight at a crash: resume finishes it
            return []
        if order is not None and pos > 0:
            earlier = max(order[t.turn][1] for t in turns[:pos] if t.turn in order)
            first_sent = min(order[t.turn][0] for t in step_turns if t.turn in order)
            if first_sent < earlier:
                return [
                    Mismatch(
                        cid,
                        "events",
                        step_turns[0].turn,
                        f"asked at event #{first_sent}, before the earlier step's outcome "
                        f"at #{earlier}",
                        "asked after the outcomes it depends on (events reordered)",
                    )
                ]
        transcript = transcript.extend([t.as_turn() for t in step_turns])
        pos += len(asks)


def relations_of(config: CampaignConfig) -> dict[str, Relation]:
    from harness.running.plan import Plan

    return {name: relation for name, relation, _ in Plan(config).relations}


def verify_log(db: LogLike, campaign: str | None = None) -> VerifyResult:
    """Re-derive every case of ``campaign`` (default: the latest) from the log alone (a large
    SQLite log on two processes: `harness.verifying._replay_parallel`)."""
    started_at = time.monotonic()
    db = Log.at(db)
    with db.reader() as log:
        campaign = log.campaign_id(campaign)
        _, config = recorded_config(log, campaign)
        boundary = split_point(db, log.connection, campaign) or ""
    relations = relations_of(config)
    found = campaign

    def verify_range(first: str | None, end: str | None) -> VerifyResult:
        with db.reader() as log:
            return _verify_cases(log, db.shown, found, config, relations, first, end)

    split = boundary != ""
    result = verify_in_two(verify_range, boundary) if split else verify_range(None, None)
    if config.stopping is not None:  # the looks, recomputed from the recorded verdicts
        from harness.running.plan import Plan
        from harness.running.stopping import recomputed_looks

        with db.reader() as log:
            for where, logged, now in recomputed_looks(
                config.stopping, Plan(config), log, campaign
            ):
                result.differences.append(Mismatch(where, "decision", None, logged, now))
    result.elapsed_s = time.monotonic() - started_at
    return result


def _verify_cases(
    log: EventLog,
    shown: str,
    campaign: str,
    config: CampaignConfig,
    relations: dict[str, Relation],
    first: str | None,
    end: str | None,
) -> VerifyResult:
    """Verifies the cases whose ids are in [first, end) (None: unbounded)."""
    result = VerifyResult(campaign)
    specs = {spec.name: spec for spec in config.models}
    dressed = frozenset(name for name, spec in specs.items() if spec.dressed)
    chains = _Chains(log.connection, campaign, shown, first, end)
    for case_id, rows in raw_cases(log.connection, campaign, shown, first, end):
        result.cases += 1
        broken = chains.check(case_id, rows, result)
        if broken is not None:
            result.differences.append(broken)
            continue
        quick = quick_verify(rows, relations, config.seed, dressed)
        if quick is not None:
            result.asks += quick.asks
            result.verdicts += quick.verdicts
            continue
        events = [
            StoredEvent(r.gseq, campaign, case_id, r.seq, r.ts, decode_event(*r.encoded))
            for r in rows
        ]
        fault = order_fault(events)
        if fault is not None:
            result.differences.append(fault)
            continue
        state = fold_case(events)
        relation = relations.get(state.case.relation)
        if relation is None:
            result.differences.append(
                Mismatch(case_id, "case data", None, state.case.relation, "(not in the plan)")
            )
            continue
        order = turn_positions(events)
        result.differences.extend(
            verify_case(state, relation, config.seed, result, order, specs.get(state.case.model))
        )
    result.differences.extend(chains.without_events())
    return result


class _Chains:
    """The recorded digest chains of a range of cases, read alongside the cases (both in
    case id order): each case is checked against its own before anything else."""

    def __init__(
        self, connection: Any, campaign: str, shown: str, first: str | None, end: str | None
    ) -> None:
        self.campaign = campaign
        self.shown = shown
        self._chains: Iterator[tuple[str, int, bytes]] = iter(())
        try:
            if case_digest.has_chains(connection):
                self._chains = case_digest.recorded_chains(connection, campaign, first, end)
        except sqlite3.Error as exc:
            raise StoreError(f"reading {shown} failed: {exc}") from exc
        self._next: tuple[str, int, bytes] | None = None
        self._orphans: list[Mismatch] = []
        self._advance()

    def _advance(self) -> None:
        try:
            self._next = next(self._chains, None)
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.shown} failed: {exc}") from exc

    def check(self, case_id: str, rows: Sequence[Row], counts: VerifyResult) -> Mismatch | None:
        # Chains of cases with no event left come before this one in id order.
        while self._next is not None and self._next[0] < case_id:
            self._orphans.append(_all_deleted(*self._next))
            self._advance()
        if self._next is None or self._next[0] != case_id:
            counts.undigested += 1
            return None
        _, last_seq, links = self._next
        self._advance()
        counts.digested += 1
        broken = case_digest.verify_chain(
            self.campaign,
            case_id,
            [(r.seq, r.kind, r.version, r.turn, r.attempt, r.payload) for r in rows],
            links,
            last_seq,
        )
        if broken is None:
            return None
        return Mismatch(
            case_id,
            "committed events",
            None,
            f"{len(links) // case_digest.LINK_BYTES} events chained when committed",
            broken.what,
        )

    def without_events(self) -> list[Mismatch]:
        while self._next is not None:
            self._orphans.append(_all_deleted(*self._next))
            self._advance()
        return self._orphans


def _all_deleted(case_id: str, last_seq: int, links: bytes) -> Mismatch:
    return Mismatch(
        case_id,
        "committed events",
        None,
        f"{len(links) // case_digest.LINK_BYTES} events chained when committed, the last "
        f"#{last_seq}",
        "no event of the case is left in the log",
    )


_OUTCOMES = (ReplyReceived, AskFailed)


def order_fault(events: Sequence[StoredEvent]) -> Mismatch | None:
    """The first event of a case out of the order the engine writes, as a difference (None:
    the order is one the engine can write). The engine writes a case's CaseOpened first,
    each attempt's outcome after its AskSent, its relation's verdict after every turn of the
    relation and CaseClosed after that verdict; after CaseClosed come only re-judging turns
    and verdicts. A log edited out of that order (sequence numbers swapped, events deleted)
    cannot be folded into what was recorded."""
    if not events:
        return None
    cid = events[0].case_id
    sent: set[tuple[int, int]] = set()
    own_sent: set[tuple[int, int]] = set()  # the relation's turns (not re-judging)
    verdict_at: int | None = None
    closed_at: int | None = None

    def fault(stored: StoredEvent, what: str) -> Mismatch:
        kind = type(stored.event).__name__
        return Mismatch(cid, "events", getattr(stored.event, "turn", None),
                        f"{kind} #{stored.seq}: {what}", "the order the engine writes")  # fmt: skip

    if not isinstance(events[0].event, CaseOpened):
        return fault(events[0], "comes before the case's CaseOpened")
    for stored in events[1:]:
        ev = stored.event
        own = not is_rejudge_thread(getattr(getattr(ev, "ask", None), "thread", ""))
        if isinstance(ev, _OUTCOMES):
            own = (ev.turn, ev.attempt) in own_sent
        if isinstance(ev, CaseOpened):
            return fault(stored, "a second CaseOpened")
        if isinstance(ev, AskSent):
            sent.add((ev.turn, ev.attempt))
            if own:
                own_sent.add((ev.turn, ev.attempt))
            if own and verdict_at is not None:
                return fault(stored, f"a turn asked after the verdict #{verdict_at}")
        elif isinstance(ev, _OUTCOMES):
            if (ev.turn, ev.attempt) not in sent:
                return fault(stored, "an outcome before its AskSent")
            if own and verdict_at is not None:
                return fault(stored, f"a turn's outcome after the verdict #{verdict_at}")
        elif isinstance(ev, VerdictReached) and ev.source == "relation":
            if closed_at is not None:
                return fault(stored, f"the relation's verdict after CaseClosed #{closed_at}")
            verdict_at = stored.seq
        elif isinstance(ev, CaseClosed):
            if verdict_at is None:
                return fault(stored, "CaseClosed before the relation's verdict")
            closed_at = stored.seq
    return None


def turn_positions(events: Sequence[StoredEvent]) -> dict[int, tuple[int, int]]:
    """Per turn: the seq of its first AskSent and of its last outcome (what `verify_case`
    checks the order of steps with)."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for stored in events:
        ev = stored.event
        if isinstance(ev, AskSent):
            first.setdefault(ev.turn, stored.seq)
        elif isinstance(ev, _OUTCOMES):
            last[ev.turn] = stored.seq
    return {turn: (seq, last.get(turn, seq)) for turn, seq in first.items()}


# --- the replay model ------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedOutcome:
    key: str
    reply: Reply | None
    error_kind: str = ""
    message: str = ""


class RecordedFailure(ModelError):
    """A failure the log recorded as final (never retried: it was already given up on)."""

    retryable = False

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class ReplayIndex:
    """The final outcome of every finished turn of a campaign, by (case, turn) and by key."""

    by_turn: dict[tuple[str, int], RecordedOutcome] = field(default_factory=dict)
    by_key: dict[str, RecordedOutcome] = field(default_factory=dict)

    @classmethod
    def from_log(cls, db: LogLike, campaign: str) -> ReplayIndex:
        index = cls()
        with open_reader(db) as log:
            for case_id, events in log.cases(campaign):
                state = fold_or_raise(case_id, events)
                for turn in state.turns.values():
                    outcome = _outcome(turn)
                    if outcome is not None:
                        index.by_turn[(case_id, turn.turn)] = outcome
                        index.by_key.setdefault(outcome.key, outcome)
        return index


def _outcome(turn: TurnState) -> RecordedOutcome | None:
    if not turn.finished or not turn.sent:
        return None
    key = turn.sent[-1].request_key
    if turn.reply is not None:
        return RecordedOutcome(key, turn.reply.reply)
    last = turn.failures[-1]
    return RecordedOutcome(key, None, last.error_kind, last.message)


class ReplayModel:
    """Serves recorded outcomes: by the turn being asked when it matches the recorded
    request, else by request key. Anything else is a `ReplayMissError`."""

    def __init__(self, name: str, index: ReplayIndex, *, stands_in_for: str | None = None) -> None:
        """``name``: the model's name in the campaign (what the engine knows it by);
        ``stands_in_for``: the recorded model whose request keys it answers (default: the
        same name)."""
        self.name = name
        self.recorded = stands_in_for or name
        self.index = index
        self.served = 0
        self.misses = 0

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        from harness.running.engine import current_call

        key = request_key(self.recorded, messages, params)
        ctx: CallContext | None = current_call.get()
        found = self.index.by_turn.get((ctx.case_id, ctx.turn)) if ctx is not None else None
        if found is None or found.key != key:
            found = self.index.by_key.get(key)
        if found is None:
            self.misses += 1
            raise ReplayMissError(f"the log has no reply to this request (key {key})")
        self.served += 1
        if found.reply is None:
            raise RecordedFailure(found.error_kind, found.message)
        return found.reply

    async def aclose(self) -> None:
        return None


def build_replay(spec: ModelSpec) -> ReplayModel:
    """``replay:<log path>``: answers recorded in that log (latest campaign, or
    ``options.campaign``); ``options.model`` names the recorded model it stands in for."""
    db = spec.identifier
    with open_reader(db) as log:
        campaign = str(spec.options.get("campaign") or log.latest_campaign())
    # Named as the campaign names it: the engine finds a model's gate and parameters by
    # that name (naming it after the recorded model crashed the engine: KeyError).
    return ReplayModel(
        spec.name,
        ReplayIndex.from_log(db, campaign),
        stands_in_for=str(spec.options.get("model") or spec.name),
    )


# --- re-running through the engine -----------------------------------------------------


@dataclass
class ReplayRun:
    summary: RunSummary
    served: int
    misses: int


async def replay_into(db: LogLike, out: str | Path, campaign: str | None = None) -> ReplayRun:
    """Re-run ``campaign`` of ``db`` through the engine into the new log ``out``, every model
    answered from the log. The new log keeps the campaign id."""
    from harness.models.gates import InFlightGate
    from harness.running.engine import Engine
    from harness.store.open import open_writer
    from harness.store.writer import PendingEvent

    out = Path(out)
    if out.exists():
        raise StoreError(f"{out} exists; replay writes a new log (choose another path)")
    with open_reader(db) as log:
        campaign = log.campaign_id(campaign)
        started, config = recorded_config(log, campaign)
    index = ReplayIndex.from_log(db, campaign)
    # Replies are instant: more case workers make a replay fast; requests do not change.
    config = config.model_copy(
        update={
            "models": [
                s.model_copy(update={"max_in_flight": max(s.max_in_flight, 32)})
                for s in config.models
            ]
        }
    )
    models = {s.name: ReplayModel(s.name, index) for s in config.models}
    judges: list[Model] = [ReplayModel(s.name, index) for s in config.judges]
    # Plain in-flight gates: a replay spends nothing and must not wait for vendor rate limits.
    gates: dict[str, CallGate] = {
        s.name: InFlightGate(max(s.max_in_flight, 32)) for s in [*config.models, *config.judges]
    }
    async with await open_writer(out) as store:
        await store.append([PendingEvent(campaign, "", 1, started)])
        engine = Engine(store, config, campaign, models, judges, gates=gates)
        summary = await engine.run()
    replayers = [m for m in [*models.values(), *judges] if isinstance(m, ReplayModel)]
    return ReplayRun(summary, sum(m.served for m in replayers), sum(m.misses for m in replayers))


def _digest_note(result: VerifyResult) -> str:
    """What the digest chains covered: old logs (no digests) are verified as before, and
    the summary says so."""
    if result.undigested and not result.digested:
        return "; written before digests: committed events not checked against them"
    if result.undigested:
        return (
            f"; {result.digested} cases checked against their digests, {result.undigested} "
            "begun before digests were not"
        )
    return "; every case checked against its digest" if result.digested else ""


def describe(result: VerifyResult, limit: int = 50) -> Iterator[str]:
    """Human-readable lines: the summary, then the differences case by case."""
    n = len(result.differences)
    yield (
        f"replayed {result.cases} cases of campaign {result.campaign} offline: "
        f"{result.asks} asks and {result.verdicts} verdicts re-derived"
        + (f", {result.open_cases} cases still open" if result.open_cases else "")
        + f" in {result.elapsed_s:.2f}s: {n} difference{'s' if n != 1 else ''}"
        + (f" in {len(result.differing_cases)} cases" if n else "")
        + _digest_note(result)
    )
    for m in result.differences[:limit]:
        where = f"turn {m.turn} " if m.turn is not None else ""
        yield f"{m.case_id}: {where}{m.what} differs"
        yield f"  recorded: {m.recorded}"
        yield f"  replayed: {m.replayed}"
    if n > limit:
        yield f"... and {n - limit} more (use --limit)"
