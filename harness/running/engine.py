"""The campaign engine: drives cases through their relations, one committed step at a time.

Per model, a fixed pool of case workers pulls cases lazily from the plan, so memory grows
with the calls in flight and never with the size of the campaign. A case's next step is
computed only after every event of the previous step is committed (invariant 1); how few
commits a case waits for, and why that is safe, is `harness.running.case_log`'s business.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from harness.models.gates import CallGate, InFlightGate
from harness.running.cache import cache_key
from harness.running.calls import CallLoop, CallOutcome
from harness.running.campaign import CampaignConfig
from harness.running.case_log import CaseLog
from harness.running.plan import Plan
from harness.running.reachability import (
    OutageAbort,
    OutagePause,
    OutageWatch,
    ReachabilityWatch,
)
from harness.running.resume_step import InterruptedStep, interrupted_step
from harness.running.retry import RetryDecision, RetryPolicy, failure_event
from harness.running.stopping import StoppingMonitor
from harness.runtime.gc_pause import gc_infrequent
from harness.store.fold import CaseState, TurnState, messages_for
from harness.store.protocol import EventSink
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import (
    BudgetExceededError,
    CampaignAbortedError,
    ConcurrencyError,
    ConfigError,
    HarnessError,
    ModelError,
    RelationError,
    redact,
)
from harness.vocabulary.events import (
    AskSent,
    CampaignFinished,
    CaseClosed,
    Event,
    ReplyReceived,
    StoppingLook,
    VerdictReached,
)
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    Model,
    ModelSpec,
    Reply,
    conversation_scope,
    scope_of,
)
from harness.vocabulary.refusal import as_recorded
from harness.vocabulary.relation import (
    Ask,
    Case,
    Outcome,
    Relation,
    Transcript,
    Turn,
    Verdict,
    seed_deriver,
)

Closing = asyncio.Future[list[int]]
"""The commit of a case's closing events (`CaseLog.close_soon`)."""


class ProgressSink(Protocol):
    def case_started(self, case: Case) -> None: ...
    def case_closed(self, case: Case, verdict: Verdict) -> None: ...
    def call_ended(self, model: str, reply: Reply | None, error: ModelError | None) -> None: ...
    def retry_scheduled(self, model: str, wait_s: float) -> None: ...


class NullProgress:
    def case_started(self, case: Case) -> None:
        pass

    def case_closed(self, case: Case, verdict: Verdict) -> None:
        pass

    def call_ended(self, model: str, reply: Reply | None, error: ModelError | None) -> None:
        pass

    def retry_scheduled(self, model: str, wait_s: float) -> None:
        pass


@dataclass
class RunSummary:
    campaign: str
    status: str = "completed"
    reason: str = ""
    cases_closed: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    failures: int = 0
    resent_in_flight: int = 0  # turns in flight at the crash or stop that this run re-sent
    resent: int = 0  # every logged turn this run sent again (in flight, cancelled, retryable)
    cached: int = 0
    # Cases left open because a turn's transient failures outlasted max_attempts ("failed,
    # retryable"): not closed, not INVALID; `harness resume` sends those turns again.
    retryable: int = 0
    elapsed_s: float = 0.0
    ceiling_usd: float | None = None  # set when the spending ceiling stopped the run
    # Cases of relations decided at a look (the campaign's [stopping]) this run did not draw.
    not_drawn: int = 0


class CaseLease(Protocol):
    """Cases shared with other processes (`harness.running.worker`): a case runs only while this
    process holds its lease. ``claim`` grants it (with the case's state folded from the log
    when another worker began it) or refuses (held elsewhere, or closed); ``release`` gives
    it back, for good when closed (``committed``: the case's CaseClosed was committed by this
    process's store, which may have released the lease in that commit). None (the default):
    this process runs every case."""

    async def claim(self, case_id: str) -> tuple[bool, CaseState | None]: ...

    async def release(self, case_id: str, *, closed: bool, committed: bool = False) -> None: ...


class AnswerCache(Protocol):
    """Answers reused across campaigns (see harness.running.cache); None disables reuse.

    ``key`` is `harness.running.cache.cache_key`: the request key without the per-turn sampling seed
    the engine derives itself (a repeat index stands in for it).
    """

    def lookup(self, key: str, repeat: int) -> Reply | None: ...


class CallContext(NamedTuple):
    """Which turn a model call belongs to, for backends that answer by turn (replay).

    A named tuple, not a frozen dataclass: one is built for every call, and a frozen
    dataclass's ``__init__`` (one ``object.__setattr__`` a field) cost twice as much."""

    case_id: str
    turn: int
    repeat: int


def turn_seeder(campaign_seed: int) -> Callable[[str, int], int]:
    """``derive_seed(campaign_seed, case_id, turn)``, the sampling seed of a turn, as a
    function of (case_id, turn) with the campaign's part joined once: it runs every turn."""
    seed = seed_deriver(campaign_seed)

    def turn_seed(case_id: str, turn: int) -> int:
        return seed(f"{case_id}\x1f{turn}")  # derive_seed joins its parts with \x1f

    return turn_seed


_NO_TURNS = Transcript()  # a new case's (frozen: shared)

_OUTAGE_FIX = (
    "The campaign stopped; no case was closed by the outage (its unanswered turns stay open, "
    "failed, retryable): once the vendor answers, run harness resume LOG (a wrong URL: "
    "harness resume LOG --base-url '{model}=URL')"
)

current_call: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "current_call", default=None
)


class Engine:
    def __init__(
        self,
        store: EventSink,
        config: CampaignConfig,
        campaign_id: str,
        models: Mapping[str, Model],
        judges: list[Model],
        *,
        gates: Mapping[str, CallGate] | None = None,
        progress: ProgressSink | None = None,
        resume: Mapping[str, CaseState] | None = None,
        skip: Callable[[str], bool] | None = None,
        cache: AnswerCache | None = None,
        plan: Plan | None = None,
        lease: CaseLease | None = None,
        stopping: StoppingMonitor | None = None,
    ) -> None:
        """``plan``: the campaign's plan, built once by the caller (default: built here).
        ``skip``: ids of cases not to run (closed ones, on resume); they are never generated.
        ``lease``: share the cases with other workers (then the workers, not this engine,
        record the campaign's end: `harness.running.worker`).
        ``stopping``: the looks of a campaign that stops when decided, restored from the log
        (resume); a new one is built here when the campaign has a ``[stopping]`` table.
        """
        self.store = store
        self.config = config
        self.campaign_id = campaign_id
        self.models = dict(models)
        self.judges = list(judges)
        specs = {s.name: s for s in [*config.models, *config.judges]}
        self.specs: dict[str, ModelSpec] = specs
        # The subjects' own specs: a judge of the same name must not take a subject's place.
        self._subjects: dict[str, ModelSpec] = {s.name: s for s in config.models}
        self._merged_params: dict[str, GenerationParams] = {}
        self._turn_seed = turn_seeder(config.seed)
        self.gates: dict[str, CallGate] = dict(gates or {})
        for model in [*self.models.values(), *self.judges]:
            self.gates.setdefault(model.name, InFlightGate(specs[model.name].max_in_flight))
        self.progress: ProgressSink = progress or NullProgress()
        self.plan = plan if plan is not None else Plan(config)
        self._resume = dict(resume or {})
        self._skip = skip
        self.cache = cache
        self.lease = lease
        self.retry = RetryPolicy(max_attempts=config.limits.max_attempts, seed=config.seed)
        self.summary = RunSummary(campaign=campaign_id)
        self._stop = asyncio.Event()
        self.calls = CallLoop(self.retry, config.limits.call_timeout_s, self._stop, observer=self)
        self._force_stop = asyncio.Event()
        self._cancelled_at_stop = False
        self._stop_reason = ""
        self._abort: BaseException | None = None
        self.reachability = ReachabilityWatch()
        self.outages = OutageWatch(
            first_pause_s=config.limits.outage_pause_s, max_pauses=config.limits.outage_pauses
        )
        self._closing: set[Closing] = set()  # closing commits not yet resolved
        self._suspended: set[str] = set()  # cases left failed, retryable (RunSummary.retryable)
        if config.stopping is not None and lease is not None:
            # The looks count one process's closes; workers sharing a campaign do not share them.
            raise ConfigError(
                "a campaign that stops when decided runs in one process",
                field="stopping",
                fix="run it with harness run (or resume), or remove the [stopping] table",
            )
        if stopping is None and config.stopping is not None:
            stopping = StoppingMonitor(config.stopping, self.plan)
        self.decisions = stopping
        self._look_lock = asyncio.Lock()

    # --- control ---------------------------------------------------------------------

    def request_stop(self, reason: str = "stopped by user") -> None:
        """Start no new case or turn; calls under way finish (or time out) and are logged."""
        if not self._stop.is_set():
            self._stop_reason = reason
            self._stop.set()

    def signal_stop(self, reason: str = "stopped by user") -> None:
        """A signal handler: the first stops gracefully, a second cancels calls at once."""
        if self._stop.is_set():
            self._force_stop.set()
        self.request_stop(reason)

    async def _cancel_after_grace(self, workers: list[asyncio.Task[None]]) -> None:
        # Calls under way get stop_grace_s to finish and be logged; then they are cancelled,
        # which logs them as AskFailed(cancelled, retry) so resume re-sends them.
        await self._stop.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._force_stop.wait(), timeout=self.config.limits.stop_grace_s)
        self._cancelled_at_stop = True
        for task in workers:
            task.cancel()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # --- running ---------------------------------------------------------------------

    async def run(self) -> RunSummary:
        with gc_infrequent():  # why: harness.runtime.gc_pause
            return await self._run()

    async def _run(self) -> RunSummary:
        started = time.monotonic()
        workers: list[asyncio.Task[None]] = []
        skip = self._skip
        if self.decisions is not None:
            skip = self._skip_decided
        for spec in self.config.models:
            cases = self.plan.cases_for(spec.name, skip=skip)
            # In batch mode a worker waits a whole wave for each turn: as many workers as a
            # wave holds, so a wave fills with every case's next step.
            workers_of = self.config.batch.wave_size if spec.mode == "batch" else spec.max_in_flight
            for i in range(workers_of):
                workers.append(
                    asyncio.create_task(self._worker(cases), name=f"case-worker-{spec.name}-{i}")
                )
        watchdog = asyncio.create_task(self._cancel_after_grace(workers), name="stop-grace")
        try:
            await asyncio.gather(*workers)
        except asyncio.CancelledError:
            if not self._cancelled_at_stop:
                raise
        finally:
            watchdog.cancel()
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            # Closes a cancelled worker left unawaited: committed before CampaignFinished.
            await asyncio.gather(*self._closing, return_exceptions=True)
        self.summary.elapsed_s = time.monotonic() - started
        if self.decisions is not None:
            self.summary.not_drawn = self.decisions.not_drawn
        if self._abort is None and not self._stop.is_set() and self.summary.retryable:
            self._abort_if_never_answered()
        if self._abort is not None:
            self.summary.status = "aborted"
            self.summary.reason = redact(str(self._abort))
        elif self._stop.is_set():
            self.summary.status = "stopped"
            self.summary.reason = self._stop_reason
        elif self.summary.retryable:
            self.summary.reason = (
                f"{self.summary.retryable} cases failed, retryable (transient vendor failures); "
                "harness resume sends them again"
            )
        if self.lease is not None:  # one worker's end is not the campaign's
            if self._abort is not None:
                raise CampaignAbortedError(self.summary.reason) from self._abort
            return self.summary
        await self.store.append(
            [
                PendingEvent(
                    self.campaign_id,
                    "",
                    await self.store.next_seq(self.campaign_id, ""),
                    CampaignFinished(
                        status=self._finished_status(),
                        reason=self.summary.reason,
                        cases_closed=self.summary.cases_closed,
                    ),
                )
            ]
        )
        if self._abort is not None:
            raise CampaignAbortedError(self.summary.reason) from self._abort
        return self.summary

    def _skip_decided(self, case_id: str) -> bool:
        """The resume's skip, and the cases of a decided relation not opened yet (an open
        one finishes: it is paid for in part, and no case is lost)."""
        if self._skip is not None and self._skip(case_id):
            return True
        assert self.decisions is not None
        return case_id not in self._resume and self.decisions.skips(case_id)

    async def _record_looks(self, looks: list[StoppingLook]) -> None:
        """Looks a closing case completed, appended after its closing events (queued
        first, so committed first): one at a time, in the campaign's own stream."""
        async with self._look_lock:
            seq = await self.store.next_seq(self.campaign_id, "")
            await self.store.append(
                [PendingEvent(self.campaign_id, "", seq + i, look) for i, look in enumerate(looks)]
            )

    def _finished_status(self) -> Literal["completed", "unfinished", "stopped", "aborted"]:
        """The status CampaignFinished records: a run that went to its end with cases left
        failed, retryable is ``unfinished``, never ``completed`` (CampaignFinished v2)."""
        if self.summary.status == "aborted":
            return "aborted"
        if self.summary.status == "stopped":
            return "stopped"
        return "unfinished" if self.summary.retryable else "completed"

    async def _worker(self, cases: Iterator[tuple[Case, Relation]]) -> None:
        # The previous case's closing commit is awaited after the next case ran: by then it
        # is long committed (the store commits in queue order), and a failed commit still
        # fails this worker, as it did when every close was awaited at once.
        previous: Closing | None = None
        try:
            # The iterator is shared by the model's workers; next() never awaits: it is safe.
            while not self._stop.is_set():
                try:
                    case, relation = next(cases)
                except StopIteration:
                    return
                if self.lease is not None:
                    await self._run_leased(case, relation)
                    continue
                try:
                    closing = await self._run_case(case, relation)
                    if previous is not None:
                        done, previous = previous, None
                        await done
                    previous = closing
                except (BudgetExceededError, CampaignAbortedError) as exc:
                    self._stop_for(exc)
        finally:
            if previous is not None:
                await asyncio.shield(previous)

    def _stop_for(self, exc: BudgetExceededError | CampaignAbortedError) -> None:
        """A case ended the campaign: the spending ceiling, or an abort."""
        if isinstance(exc, BudgetExceededError):
            self.summary.ceiling_usd = self.config.limits.spend_ceiling_usd
            self.request_stop(f"spending ceiling reached: {exc}")
        else:
            self._abort = exc
            self.request_stop(str(exc))

    def left_retryable(self, case_id: str) -> bool:
        """True when this engine left ``case_id`` failed, retryable (`RunSummary.retryable`)."""
        return case_id in self._suspended

    async def _run_leased(self, case: Case, relation: Relation) -> None:
        assert self.lease is not None
        if case.case_id in self._suspended:
            return  # not again in this process: the outage that suspended it may last
        granted, state = await self.lease.claim(case.case_id)
        if not granted:
            return  # another worker runs it, or it is closed
        if state is not None:
            self._resume[case.case_id] = state
        closed = committed = False
        try:
            closing = await self._run_case(case, relation)
            if closing is not None:
                await closing  # released as closed only once CaseClosed is committed
                committed = True
            # A case left failed, retryable is open: its lease is given back, not closed.
            closed = not self._stop.is_set() and case.case_id not in self._suspended
        except ConcurrencyError:
            return  # lost the lease: another worker holds the case and appended first
        except (BudgetExceededError, CampaignAbortedError) as exc:
            self._stop_for(exc)
        finally:
            self._resume.pop(case.case_id, None)
            with contextlib.suppress(HarnessError):
                await self.lease.release(case.case_id, closed=closed, committed=committed)

    async def _run_case(self, case: Case, relation: Relation) -> Closing | None:
        """Run one case until its verdict is queued, or until a stop.

        Returns the commit of the case's closing events, not awaited (`CaseLog.close_soon`),
        or None when the case did not close here.
        """
        state = self._resume.pop(case.case_id, None)
        if state is None:  # a new case: nothing logged to finish first
            log = CaseLog.opened(self.store, self.campaign_id, CaseState(case=case))
            self.progress.case_started(case)
            transcript = _NO_TURNS
        elif state.closed:
            return None
        else:
            # A case opened before cases recorded their reading rules continues with the
            # rules it was opened with (as replay re-derives it), not today's.
            data = as_recorded(state.case.data, case.data)
            if data is not case.data:
                case = case.model_copy(update={"data": data})
            log = CaseLog(self.store, self.campaign_id, state)
            self.progress.case_started(case)
            self._carry_conversations(state)
            resumed = await self._finish_logged_turns(log, case, relation)
            if resumed is None:
                return None
            transcript = resumed
        while True:
            if self._stop.is_set():
                return None
            result = self._step(relation, case, transcript)
            if isinstance(result, Verdict):
                closing = log.close_soon(
                    VerdictReached(verdict=result), CaseClosed(outcome=result.outcome.value)
                )
                log.state.closed = True
                self._closing.add(closing)
                closing.add_done_callback(functools.partial(self._closed, case, result))
                if self.decisions is not None:
                    looks = self.decisions.closed(
                        case.relation,
                        case.model,
                        case.index,
                        case.repeat,
                        result.outcome.value,
                        result.evidence,
                    )
                    if looks:
                        await self._record_looks(looks)
                return closing
            if not result:
                raise RelationError(f"{case.relation} returned no asks and no verdict")
            first = len(transcript.turns)
            if len(result) == 1:  # the common case, without a task per ask
                ask = result[0]
                new_turns = [await self._ask(log, ask, first, messages_for(ask, transcript))]
            else:
                # Concurrent asks append their AskSent in separate batches: CaseOpened must
                # be committed before any of them, or one could be written without it.
                await log.append()
                new_turns = await asyncio.gather(
                    *(
                        self._ask(log, ask, first + i, messages_for(ask, transcript))
                        for i, ask in enumerate(result)
                    )
                )
            if any(t is None for t in new_turns):
                return None  # stopped mid-step; resume finishes it
            transcript = transcript.extend([t for t in new_turns if t is not None])

    async def _finish_logged_turns(
        self, log: CaseLog, case: Case, relation: Relation
    ) -> Transcript | None:
        """The transcript of a case resumed from the log, once the turns it left open are
        finished (None: stopped before they were)."""
        transcript = log.state.transcript()
        interrupted = interrupted_step(functools.partial(self._step, relation, case), log.state)
        if interrupted is not None:
            # A step cut short by a crash or a stop is finished as the relation asked it.
            turns = await asyncio.gather(
                *(self._finish(log, interrupted, i, ask) for i, ask in enumerate(interrupted.asks))
            )
            if any(t is None for t in turns):
                return None
            transcript = interrupted.before.extend([t for t in turns if t is not None])
        # Otherwise (the log does not follow the relation's steps), turns under way at a
        # crash (or awaiting a retry) are finished first, with the exact request logged.
        elif reopened := log.state.open_turns():
            self.summary.resent_in_flight += sum(1 for t in reopened if t.in_flight)
            turns = await asyncio.gather(*(self._resend(log, t) for t in reopened))
            if any(t is None for t in turns):
                return None
            # The fold in ``state`` predates the re-sends: add their turns to it, else the
            # relation would ask the finished turns again.
            done = {t.index: t for t in transcript.turns}
            done.update({t.index: t for t in turns if t is not None})
            transcript = Transcript(turns=tuple(done[i] for i in sorted(done)))
        return transcript

    def _carry_conversations(self, state: CaseState) -> None:
        """The endpoint conversation ids a resumed case recorded (an ``http:`` target with
        ``conversation = "id"``), handed back to its model so its threads go on."""
        remember = getattr(self.models.get(state.case.model), "remember", None)
        if remember is None:
            return
        for turn in state.turns.values():
            received = turn.reply
            if received is not None and received.reply.conversation_id and turn.sent:
                answer = Message(role="assistant", content=received.reply.text)
                scope = scope_of(state.case.case_id, turn.ask.thread)
                remember([*turn.sent[-1].messages, answer], received.reply.conversation_id, scope)

    def _step(self, relation: Relation, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        try:
            return relation.step(case, transcript)
        except HarnessError:
            raise
        except Exception as exc:  # a relation bug must not kill the campaign
            return Verdict(
                outcome=Outcome.INVALID,
                reason=f"relation raised {type(exc).__name__}: {exc}",
                evidence={"relation_error": True},
            )

    def _closed(self, case: Case, verdict: Verdict, closing: Closing) -> None:
        """Counts a case once its closing events are committed."""
        self._closing.discard(closing)
        if closing.cancelled() or closing.exception() is not None:
            return  # the worker that awaits it reports the failure
        self.summary.cases_closed += 1
        self.summary.outcomes[verdict.outcome.value] += 1
        self.progress.case_closed(case, verdict)

    def _model_for(self, case: Case, ask: Ask) -> Model:
        if ask.role == "judge":
            if ask.judge >= len(self.judges):
                raise RelationError(f"{case.relation} asked for judge {ask.judge}; none configured")
            return self.judges[ask.judge]
        return self.models[case.model]

    def _params_for(self, model: Model, case: Case, ask: Ask, turn: int) -> GenerationParams:
        merged = self._merged_params.get(model.name)
        if merged is None:  # the campaign's defaults under the model's own, once per model
            base = self.specs[model.name].params
            merged = self.config.defaults.model_copy(update=base.model_dump(exclude_none=True))
            self._merged_params[model.name] = merged
        updates: dict[str, object] = {}
        if ask.max_tokens is not None:
            updates["max_tokens"] = ask.max_tokens
        spec = self.specs[model.name]
        if ask.answer is not None and self.config.answer_format_of(spec) == "structured":
            updates["answer_shape"] = ask.answer  # recorded in AskSent.params: the format used
        if merged.seed is None:
            # Seeded per turn so repeats differ while the whole campaign stays reproducible.
            updates["seed"] = self._turn_seed(case.case_id, turn) % (2**31)
        return merged.model_copy(update=updates) if updates else merged

    def _seed_is_derived(self, model: Model) -> bool:
        """True when the sampling seed of ``model``'s calls is the engine's per-turn one."""
        return self.specs[model.name].params.seed is None and self.config.defaults.seed is None

    async def _resend(self, log: CaseLog, turn: TurnState) -> Turn | None:
        """Send a logged turn again, exactly as it was sent (in flight at a crash, cancelled
        at a stop, awaiting a retry, or failed, retryable). ``RunSummary.resent`` counts it
        when its AskSent is appended: the count is of calls that went out again, whatever
        left the turn open, and a stop before the call went out is not counted."""
        last = turn.sent[-1]
        counted = False

        def append(event: Event) -> asyncio.Future[list[int]]:
            nonlocal counted
            committed = log.append(event)
            if not counted and isinstance(event, AskSent):
                counted = True
                self.summary.resent += 1
            return committed

        return await self._call(
            log,
            turn.ask,
            turn.turn,
            last.messages,
            last.params,
            first_attempt=last.attempt + 1,
            counted_attempts=turn.counted_attempts,
            append=append,
        )

    async def _finish(self, log: CaseLog, step: InterruptedStep, i: int, ask: Ask) -> Turn | None:
        """Turn ``i`` of an interrupted step: kept if answered, re-sent as logged if open
        (in flight at a crash, or awaiting a retry), asked if the log never got its AskSent."""
        index = step.first + i
        logged = log.state.turns.get(index)
        if logged is None:
            return await self._ask(log, ask, index, messages_for(ask, step.before))
        if logged.finished:
            return logged.as_turn()
        self.summary.resent_in_flight += int(logged.in_flight)
        return await self._resend(log, logged)

    async def _ask(self, log: CaseLog, ask: Ask, turn: int, messages: list[Message]) -> Turn | None:
        case = log.state.case
        model = self._model_for(case, ask)
        if ask.role != "judge":  # the subject's application wraps its requests; a judge's never
            messages = self._subjects[case.model].dress(messages)
        params = self._params_for(model, log.state.case, ask, turn)
        return await self._call(log, ask, turn, messages, params, first_attempt=1)

    async def _call(
        self,
        log: CaseLog,
        ask: Ask,
        turn: int,
        messages: list[Message],
        params: GenerationParams,
        *,
        first_attempt: int,
        counted_attempts: int = 0,
        append: Callable[[Event], asyncio.Future[list[int]]] | None = None,
    ) -> Turn | None:
        """``append``: how the turn's attempts are appended (default: the case's log)."""
        case = log.state.case
        model = self._model_for(case, ask)
        current_call.set(CallContext(case.case_id, turn, case.repeat))
        conversation_scope.set(scope_of(case.case_id, ask.thread))
        lookup = None
        if self.cache is not None:
            cache, seed_derived = self.cache, self._seed_is_derived(model)

            def lookup() -> Reply | None:
                key = cache_key(
                    model.name, messages, params, seed_derived=seed_derived, thread=ask.thread
                )
                return cache.lookup(key, case.repeat)

        outcome = await self.calls.send(
            append or log.append,
            model,
            self.gates[model.name],
            ask,
            turn,
            messages,
            params,
            first_attempt=first_attempt,
            counted_attempts=counted_attempts,
            cached=lookup,
        )
        if outcome is None:
            return None  # stopped; resume finishes the turn
        outcome = await self._record(log, outcome)
        if outcome.reply is not None:
            self.summary.cached += int(outcome.cached)
            return Turn(index=turn, ask=ask, reply=outcome.reply.text)
        assert outcome.error is not None and outcome.decision is not None
        error = outcome.error
        if outcome.decision.action == "suspend":
            # Failed, retryable: the case stays open (not INVALID); resume sends the turn again.
            self._suspended.add(case.case_id)
            self.summary.retryable = len(self._suspended)
            return None
        if outcome.decision.action == "abort":
            raise CampaignAbortedError(
                f"{model.name}: {error} — the campaign stopped; fix the cause and run "
                "'harness resume' on the same log"
            )
        return Turn(index=turn, ask=ask, error=f"{error.kind}: {error}")

    async def _record(self, log: CaseLog, outcome: CallOutcome) -> CallOutcome:
        """Commit a turn's outcome. A reply the log cannot encode (a backend that let
        unencodable content through `recordable_reply`) is recorded as a failure with its
        reason, suspended: the turn stays open (failed, retryable), since what the vendor
        or the encoding did is never a verdict. Not retried in this run (a crash here would
        have had every resume send and pay for it again, in a loop); `harness resume` sends
        it once more, as any suspended turn: nothing of the reply was recorded to reuse."""
        try:
            committed = log.append(outcome.event)
        except (ValueError, TypeError, UnicodeError) as exc:  # the event did not encode
            if not isinstance(outcome.event, ReplyReceived):
                raise
            error = ModelError(f"the reply cannot be recorded ({type(exc).__name__}: {exc})")
            decision = RetryDecision("suspend", 0.0, "a reply that cannot be recorded")
            failed = failure_event(outcome.event.turn, outcome.event.attempt, error, decision)
            failed = failed.model_copy(update={"error_kind": "unrecordable_reply"})
            outcome = CallOutcome(failed, error=error, decision=decision)
            committed = log.append(failed)
        await committed
        return outcome

    # --- what the call loop reports ---------------------------------------------------

    def call_ended(self, model: str, reply: Reply | None, error: ModelError | None) -> None:
        self.summary.calls += 1
        self.progress.call_ended(model, reply, error)
        if error is not None:
            self.summary.failures += 1
        unreachable = self.reachability.observe(model, reply, error)
        if unreachable is not None and self._abort is None:
            self._abort = CampaignAbortedError(unreachable)
            self.request_stop(unreachable)
        outage = self.outages.observe(model, reply, error)
        if isinstance(outage, OutagePause):
            self.calls.pause(model, outage.seconds)
            self.progress.retry_scheduled(model, outage.seconds)
        elif isinstance(outage, OutageAbort) and self._abort is None:
            message = f"{outage.message}; {self._where(model)}. " + _OUTAGE_FIX.format(model=model)
            self._abort = CampaignAbortedError(message)
            self.request_stop(message)

    def _abort_if_never_answered(self) -> None:
        """Cases were left failed, retryable by a model that answered no call at all: that
        is an outage (exit 3), however few calls the run had to make."""
        for name in [*self.models, *(j.name for j in self.judges)]:
            silent = self.outages.never_answered(name)
            if silent is not None:
                message = f"{silent}; {self._where(name)}. " + _OUTAGE_FIX.format(model=name)
                self._abort = CampaignAbortedError(message)
                return

    def _where(self, model: str) -> str:
        """Where ``model``'s calls go (a vendor's base URL without credentials, and the URL
        shape its SDK expects), for an abort message."""
        backend = self.models.get(model) or next((j for j in self.judges if j.name == model), None)
        endpoint = getattr(backend, "endpoint", None)
        describe = getattr(endpoint, "describe", None)
        return f"calls go to {describe()}" if callable(describe) else f"model {model}"

    def retry_scheduled(self, model: str, wait_s: float) -> None:
        self.progress.retry_scheduled(model, wait_s)
