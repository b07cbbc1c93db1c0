"""Re-judging: send recorded conversations to a new judge model and append its verdicts.

What a judge is asked depends on the relation family: each `Family` may name a
`JudgeRubric` (`harness.vocabulary.rubric`). A rubric turns a case and its transcript into the
judge's prompt and the judge's reply into a `Verdict`; bad judge output is data (INVALID with its
reason), never a crash.

Judge turns are turns like any other: AskSent / ReplyReceived (or AskFailed) in the case's
thread ``rejudge:<judge model>``, followed by VerdictReached(source="judge:<model>"). The
relation's own verdict stays. Re-judging is resumable: a case with a verdict from this
judge is skipped, a judge reply already logged is parsed again instead of paid again, and
a judge call in flight at a crash is re-sent with its recorded request.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass

from harness.models.gates import CallGate
from harness.plugins.assembly import build_model
from harness.plugins.family_parts import family_of, judge_rubric
from harness.reporting.tables import REJUDGE_TOPIC
from harness.running.calls import CallLoop
from harness.running.retry import RetryPolicy
from harness.store.fold import CaseState, fold_or_raise
from harness.store.log import LogLike
from harness.store.open import open_reader, open_writer
from harness.store.protocol import EventSink
from harness.store.writer import PendingEvent
from harness.verifying.replay import REJUDGE_THREAD_PREFIX, recorded_config, relation_turns
from harness.vocabulary.answer_shape import AnswerFormat
from harness.vocabulary.errors import CampaignAbortedError, ConfigError, ModelError
from harness.vocabulary.events import Note, VerdictReached
from harness.vocabulary.model import GenerationParams, Message, Model, ModelSpec, Reply
from harness.vocabulary.relation import Ask, Outcome, Transcript, Verdict
from harness.vocabulary.rubric import JudgeRubric


def rubric_for(relation: str) -> JudgeRubric | None:
    """The judge rubric of the family that registered ``relation`` (None: not judgeable)."""
    family = family_of(relation)
    return judge_rubric(family.name) if family is not None else None


# --- running a re-judge ------------------------------------------------------------------


@dataclass
class RejudgeSummary:
    judge: str
    source: str
    judged: int = 0
    already: int = 0  # cases this judge had judged before
    no_rubric: int = 0
    nothing_to_judge: int = 0
    calls: int = 0
    reparsed: int = 0  # judge replies found in the log, not paid again
    resent_in_flight: int = 0
    failures: int = 0
    retryable: int = 0  # judge turns left open by transient failures: rejudge again
    elapsed_s: float = 0.0
    outcomes: dict[str, int] | None = None


def judge_spec(
    name: str,
    options: dict[str, object] | None = None,
    max_in_flight: int | None = None,
    answer_format: AnswerFormat | None = None,
) -> ModelSpec:
    """Judges run at temperature 0 with room for a short JSON answer. A model on this
    machine (``local:``) answers one call at a time, so it gets one call in flight.
    ``answer_format``: "structured" constrains the judge to the rubric's JSON verdict
    (None: the recorded campaign's format)."""
    if max_in_flight is None:
        max_in_flight = 1 if name.startswith("local:") else 8
    return ModelSpec(
        name=name,
        params=GenerationParams(temperature=0.0, max_tokens=200, seed=0),
        options=dict(options or {}),
        max_in_flight=max_in_flight,
        answer_format=answer_format,
    )


class _Rejudge:
    def __init__(
        self,
        store: EventSink,
        campaign: str,
        model: Model,
        gate: CallGate,
        retry: RetryPolicy,
        params: GenerationParams,
        timeout_s: float,
        summary: RejudgeSummary,
        *,
        structured: bool = False,
    ) -> None:
        self.store = store
        self.campaign = campaign
        self.model = model
        self.gate = gate
        self.retry = retry
        self.params = params
        self.timeout_s = timeout_s
        self.summary = summary
        self.thread = REJUDGE_THREAD_PREFIX + model.name
        self.structured = structured
        self.stop = asyncio.Event()
        self.calls = CallLoop(retry, timeout_s, self.stop, observer=self)
        self.outcomes: dict[str, int] = {}

    async def _append(self, state: CaseState, *events: object) -> None:
        pending = []
        for ev in events:
            pending.append(PendingEvent(self.campaign, state.case.case_id, state.next_seq, ev))  # type: ignore[arg-type]
            state.next_seq += 1
        await self.store.append(pending)

    async def worker(self, jobs: Iterator[CaseState]) -> None:
        while not self.stop.is_set():
            try:
                state = next(jobs)
            except StopIteration:
                return
            await self.judge_case(state)

    async def judge_case(self, state: CaseState) -> None:
        case = state.case
        rubric = rubric_for(case.relation)
        if rubric is None:
            self.summary.no_rubric += 1
            return
        mine = [t for _, t in sorted(state.turns.items()) if t.ask.thread == self.thread]
        transcript = Transcript(
            turns=tuple(t.as_turn() for t in relation_turns(state) if t.finished)
        )
        previous = mine[-1] if mine else None
        if previous is not None and previous.reply is not None:
            self.summary.reparsed += 1
            await self._decide(state, rubric, previous.reply.reply.text, extra=())
            return
        if previous is not None and previous.sent and not previous.finished:
            last = previous.sent[-1]
            self.summary.resent_in_flight += int(previous.in_flight)
            await self._call(
                state,
                rubric,
                previous.turn,
                last.ask,
                last.messages,
                last.attempt + 1,
                counted_attempts=previous.counted_attempts,
            )
            return
        task = rubric.task(case, transcript)
        if task is None:
            self.summary.nothing_to_judge += 1
            return
        ask = Ask(
            thread=self.thread,
            prompt=task.prompt,
            role="judge",
            system=task.system,
            answer=task.answer,
        )
        messages = [
            Message(role="system", content=task.system),
            Message(role="user", content=task.prompt),
        ]
        turn = max(state.turns, default=-1) + 1
        await self._call(state, rubric, turn, ask, messages, 1)

    async def _call(
        self,
        state: CaseState,
        rubric: JudgeRubric,
        turn: int,
        ask: Ask,
        messages: list[Message],
        attempt: int,
        *,
        counted_attempts: int = 0,
    ) -> None:
        params = self.params
        if self.structured and ask.answer is not None:
            params = params.model_copy(update={"answer_shape": ask.answer})  # logged in AskSent
        outcome = await self.calls.send(
            functools.partial(self._append, state),
            self.model,
            self.gate,
            ask,
            turn,
            messages,
            params,
            first_attempt=attempt,
            counted_attempts=counted_attempts,
        )
        if outcome is None:
            return  # stopped: a later rejudge re-sends the turn
        if outcome.reply is not None:
            await self._decide(state, rubric, outcome.reply.text, extra=(outcome.event,))
            return
        assert outcome.error is not None and outcome.decision is not None
        error = outcome.error
        if outcome.decision.action == "abort":
            await self._append(state, outcome.event)
            self.stop.set()
            raise CampaignAbortedError(f"{self.model.name}: {error}")
        if outcome.decision.action == "suspend":
            # A judge outage is not a verdict either: the turn stays open, and the next
            # rejudge of this log sends it again (its attempts counted afresh).
            await self._append(state, outcome.event)
            self.summary.retryable += 1
            return
        verdict = Verdict(
            outcome=Outcome.INVALID, reason=f"judge call failed: {error.kind}: {error}"
        )
        await self._append(
            state, outcome.event, VerdictReached(verdict=verdict, source=self.summary.source)
        )
        self._count(verdict)

    # --- what the call loop reports ---------------------------------------------------

    def call_ended(self, model: str, reply: Reply | None, error: ModelError | None) -> None:
        self.summary.calls += 1
        self.summary.failures += int(error is not None)

    def retry_scheduled(self, model: str, wait_s: float) -> None:
        pass

    async def _decide(
        self, state: CaseState, rubric: JudgeRubric, text: str, extra: tuple[object, ...]
    ) -> None:
        verdict = rubric.parse(text)
        # The reply and the verdict read from it are committed together.
        await self._append(
            state, *extra, VerdictReached(verdict=verdict, source=self.summary.source)
        )
        self._count(verdict)

    def _count(self, verdict: Verdict) -> None:
        self.summary.judged += 1
        self.outcomes[verdict.outcome.value] = self.outcomes.get(verdict.outcome.value, 0) + 1


def _jobs(
    db: LogLike, campaign: str, source: str, summary: RejudgeSummary, limit: int | None
) -> Iterator[CaseState]:
    taken = 0
    with open_reader(db) as log:
        for case_id, events in log.cases(campaign):
            state = fold_or_raise(case_id, events)
            if not state.closed:
                continue
            if any(src == source for src, _ in state.verdicts):
                summary.already += 1
                continue
            if limit is not None and taken >= limit:
                return
            taken += 1
            yield state


async def rejudge(
    db: LogLike,
    judge: ModelSpec,
    *,
    campaign: str | None = None,
    model: Model | None = None,
    limit: int | None = None,
    handle_signals: bool = False,
    allow_self_judging: bool = False,
) -> RejudgeSummary:
    """Ask ``judge`` about every closed case of ``campaign`` (default: the latest) that it
    has not judged yet; append its verdicts with source ``judge:<name>``. A judge that is
    a subject of the campaign (same backend and model) is refused before any call unless
    ``allow_self_judging``; then the run's note records it."""
    from harness.models.providers import build_gate

    started = time.monotonic()
    with open_reader(db) as log:
        campaign = campaign or log.latest_campaign()
        _, config = recorded_config(log, campaign)
    subject = next((m for m in config.models if m.target == judge.target), None)
    if subject is not None and not allow_self_judging:
        raise ConfigError(
            f"judge {judge.name!r} is the subject model {subject.name!r} of campaign "
            f"{campaign} ({judge.target}): it would grade its own answers",
            field="--judge",
            fix="name another judge model, or add --allow-self-judging (the run is then "
            "recorded as self-judging)",
        )
    config = config.model_copy(update={"judges": [*config.judges, judge]})
    judge_model = model or build_model(judge)
    summary = RejudgeSummary(judge=judge.name, source=f"judge:{judge.name}")
    params = config.defaults.model_copy(update=judge.params.model_dump(exclude_none=True))
    async with await open_writer(db, create=False) as store:
        runner = _Rejudge(
            store,
            campaign,
            judge_model,
            build_gate(judge, config),
            RetryPolicy(max_attempts=config.limits.max_attempts, seed=config.seed),
            params,
            config.limits.call_timeout_s,
            summary,
            structured=config.answer_format_of(judge) == "structured",
        )
        if handle_signals:
            from harness.running.runner import install_stop_handlers

            install_stop_handlers(lambda reason: runner.stop.set())
        data: dict[str, object] = {"judge": judge.name, "params": params.model_dump()}
        if subject is not None:
            data["self_judging"] = subject.name
        note = Note(topic=REJUDGE_TOPIC, data=data)
        await store.append([PendingEvent(campaign, "", await store.next_seq(campaign, ""), note)])
        jobs = _jobs(db, campaign, summary.source, summary, limit)
        try:
            await asyncio.gather(*(runner.worker(jobs) for _ in range(judge.max_in_flight)))
        finally:
            await judge_model.aclose()
        summary.outcomes = dict(sorted(runner.outcomes.items()))
        summary.elapsed_s = time.monotonic() - started
        done = Note(
            topic="rejudge_finished",
            data={
                "judge": judge.name,
                "judged": summary.judged,
                "calls": summary.calls,
                "outcomes": summary.outcomes,
                "stopped": runner.stop.is_set(),
            },
        )
        await store.append([PendingEvent(campaign, "", await store.next_seq(campaign, ""), done)])
    return summary
