"""Batch mode: a model's requests sent in waves through its vendor's batch API, every step
of a batch recorded in the log before and after it is taken (docs/batch.md).

A `BatchModel` stands in for a model in ``mode = "batch"``: the engine calls it as it calls
any model (AskSent before, ReplyReceived or AskFailed after, the same retry rules), but a
call only queues its request. A wave is sent when it holds ``batch.wave_size`` requests or
its oldest is ``batch.wave_age_s`` old; when the batch ends, each waiting call returns its
reply (or the error a direct call would have raised), so a case's next step joins the next
wave and a 3-turn relation takes about 3 waves.

What the log records of a wave, as `Note` events of the campaign (case id ""):
``batch.wave`` (its tag, every request's ``custom_id``, the request key, and the time it
was queued) before the upload; ``batch.submitted`` (the vendor's file and batch ids) once created;
``batch.ended`` (its state and counts) when it ends. A resumed run reads them back
(`known_waves`): a re-sent turn whose request is in a known wave re-attaches to that batch
(found by its tag when its id was never recorded, or by its requests for a vendor that
keeps no tag) instead of paying for it again; a
finished batch's results are ingested once, because a turn with a recorded reply is never
asked again; a request the batch left without a result is sent in a new wave.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

import harness.models.sim_batch  # noqa: F401  (registers the sim's batch client)
from harness.models.batch import BatchClient, BatchRequest, BatchResult, BatchStatus
from harness.models.gates import CallGate, estimate_tokens
from harness.running.campaign import BatchOptions
from harness.store.protocol import EventSink
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import (
    BatchUnansweredError,
    ConcurrencyError,
    ModelError,
    TargetConfigError,
)
from harness.vocabulary.events import Note
from harness.vocabulary.model import GenerationParams, Message, Model, Reply, request_key

WAVE_TOPIC = "batch.wave"
SUBMITTED_TOPIC = "batch.submitted"
ENDED_TOPIC = "batch.ended"


class _NoteData(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # The process that took this step of the batch (its worker's lease owner) when the
    # campaign runs on PostgreSQL; absent from a SQLite log's notes, which stay as before.
    owner: str | None = None


class WaveQueued(_NoteData):
    """A wave about to be uploaded: recorded before anything reaches the vendor."""

    tag: str
    model: str
    custom_ids: list[str]
    # When it was queued (unix time; absent in older logs): a vendor that keeps no tag looks
    # for the wave's batch among those created since (`find_by_requests`).
    queued_at: float | None = None


class WaveSubmitted(_NoteData):
    """The vendor's ids of a wave's batch, once it exists."""

    tag: str
    model: str
    file_id: str | None
    batch_id: str


class WaveEnded(_NoteData):
    """A wave's batch finished (``state``: ended, expired, failed or cancelled)."""

    tag: str
    model: str
    state: str
    total: int
    completed: int
    failed: int


@dataclass
class KnownWave:
    """What the log says of one wave."""

    tag: str
    model: str
    custom_ids: tuple[str, ...]
    file_id: str | None = None
    batch_id: str | None = None
    state: str | None = None  # None: not recorded as ended
    owner: str | None = None  # the worker that queued it (PostgreSQL)
    queued_at: float | None = None


def known_waves(notes: Iterable[Note]) -> dict[str, KnownWave]:
    """The waves a log's notes record, by tag, in the order they were queued."""
    waves: dict[str, KnownWave] = {}
    for note in notes:
        if note.topic == WAVE_TOPIC:
            queued = WaveQueued.model_validate(note.data)
            waves[queued.tag] = KnownWave(
                queued.tag,
                queued.model,
                tuple(queued.custom_ids),
                owner=queued.owner,
                queued_at=queued.queued_at,
            )
        elif note.topic == SUBMITTED_TOPIC:
            submitted = WaveSubmitted.model_validate(note.data)
            if (wave := waves.get(submitted.tag)) is not None:
                wave.file_id, wave.batch_id = submitted.file_id, submitted.batch_id
        elif note.topic == ENDED_TOPIC:
            ended = WaveEnded.model_validate(note.data)
            if (wave := waves.get(ended.tag)) is not None:
                wave.state = ended.state
    return waves


class BatchRecorder:
    """Appends a campaign's batch notes, one at a time (each takes the next sequence number
    of the campaign's own events), and returns once each is committed. ``owner``: the
    worker that owns the batches (PostgreSQL), named in every note it records."""

    # Another process (a worker joining or ending) may take the sequence number read: the
    # store's commit refuses the second (ConcurrencyError) and the note takes the next one.
    ATTEMPTS = 20

    def __init__(self, store: EventSink, campaign_id: str, owner: str | None = None) -> None:
        self.store = store
        self.campaign_id = campaign_id
        self.owner = owner
        self._lock = asyncio.Lock()

    async def record(self, topic: str, data: _NoteData) -> None:
        if self.owner is not None:
            data = data.model_copy(update={"owner": self.owner})
        payload = data.model_dump(mode="json")
        if payload["owner"] is None:
            del payload["owner"]
        note = Note(topic=topic, data=payload)
        async with self._lock:
            for attempt in range(self.ATTEMPTS):
                seq = await self.store.next_seq(self.campaign_id, "")
                try:
                    await self.store.append([PendingEvent(self.campaign_id, "", seq, note)])
                    return
                except ConcurrencyError:
                    if attempt == self.ATTEMPTS - 1:
                        raise
                    await asyncio.sleep(0.01 * (attempt + 1))


@dataclass
class WaveProgress:
    """One batch as the progress line shows it."""

    tag: str
    submitted: int
    started: float  # monotonic
    state: str = "queued"
    completed: int = 0
    failed: int = 0
    counted: bool = True  # False: the vendor tells the counts only at the end


@dataclass
class _Waiting:
    """A request some call awaits."""

    request: BatchRequest
    future: asyncio.Future[tuple[BatchResult, str]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class BatchModel:
    """A model in batch mode (see the module's docstring). ``known``: the waves of the log
    being resumed, whose batches a re-sent request re-attaches to.

    With workers (PostgreSQL), ``refresh`` reads the waves the log holds now and
    ``live_owners`` the workers running the campaign now: before a wave is sent, requests
    another worker queued since this one started (a case taken over from a dead worker)
    re-attach to that worker's batch instead; and a batch whose id was never recorded is
    sent again only once its owner is gone (while it lives, it may still create it)."""

    batched = True  # the call loop sets no per-call deadline: a batch takes its time

    def __init__(
        self,
        inner: Model,
        client: BatchClient,
        options: BatchOptions,
        recorder: BatchRecorder,
        known: Mapping[str, KnownWave] | None = None,
        refresh: Callable[[], Awaitable[Mapping[str, KnownWave]]] | None = None,
        live_owners: Callable[[], Awaitable[set[str]]] | None = None,
    ) -> None:
        self.name = inner.name
        self.inner = inner
        self.client = client
        self.options = options
        self.recorder = recorder
        self._waiting: dict[str, _Waiting] = {}  # custom_id -> the call(s) awaiting it
        # custom_id -> the tag of the one batch its waiting call awaits (absent while it is
        # queued): a resumed log may hold a request in several batches (an older one that
        # failed it or was never created, a newer one that holds it), and only the batch it
        # awaits may answer it or send it again, else it would be paid twice.
        self._wave_of: dict[str, str] = {}
        self._queue: list[BatchRequest] = []
        self._timer: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._tags: dict[str, str] = {}  # custom_id -> tag, until the call loop reads it
        # Re-attaching: the latest known wave of each request, and results of re-attached
        # batches not yet asked for (a resumed case may reach its turn later).
        self._known: dict[str, KnownWave] = {}
        for wave in (known or {}).values():
            if wave.model == self.name:
                for custom_id in wave.custom_ids:
                    self._known[custom_id] = wave
        self._attached: set[str] = set()
        # Every batch id of this model the log or this run knows: a batch found by its
        # requests is never one of them.
        self._batch_ids = {
            w.batch_id for w in (known or {}).values() if w.model == self.name and w.batch_id
        }
        self._kept: dict[str, tuple[BatchResult, str]] = {}
        self._refresh = refresh
        self._live_owners = live_owners
        self._seen: set[str] = set((known or {}).keys())  # waves read from the log
        self._own: set[str] = set()  # waves this model queued
        # The vendor's limit on tokens enqueued in batches in flight (the client's
        # ``enqueued_tokens``, from the model's ``batch_enqueued_tokens`` option; None: no
        # limit). Each request counts its worst case, as the budget reserves it; a wave is cut
        # to what fits and the rest is held until a batch in flight ends.
        self.enqueued_limit: int | None = getattr(client, "enqueued_tokens", None)
        # tag -> tokens of a batch sent (or re-attached to), not yet ended; and the tags of
        # batches that ended (a request re-attaching to one then is not in flight).
        self._in_flight: dict[str, int] = {}
        self._gone: set[str] = set()
        self._held = False  # requests wait in the queue for a batch in flight to end
        self.progress: dict[str, WaveProgress] = {}
        self.waves_sent = 0

    # --- what the engine calls ---------------------------------------------------------

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        custom_id = request_key(self.name, messages, params)
        kept = self._kept.pop(custom_id, None)
        if kept is None:
            waiting = self._waiting.get(custom_id)
            if waiting is None:
                request = BatchRequest(custom_id, tuple(messages), params)
                waiting = self._waiting[custom_id] = _Waiting(request)
                wave = self._known.pop(custom_id, None)
                if wave is not None:
                    self._wave_of[custom_id] = wave.tag
                    self._count_attached(wave, request)
                    self._reattach(wave)
                else:
                    self._enqueue(request)
            # Shielded: a cancelled call (a stop) leaves the batch to the others awaiting it.
            kept = await asyncio.shield(waiting.future)
        result, tag = kept
        if result.reply is not None:
            self._tags[custom_id] = tag
            return result.reply
        raise result.error or BatchUnansweredError(f"batch {tag} returned nothing for it")

    def batch_tag_of(self, custom_id: str) -> str | None:
        """The tag of the batch the reply to ``custom_id`` just returned came through."""
        return self._tags.pop(custom_id, None)

    async def aclose(self) -> None:
        self._held = False  # nothing is sent any more, even if a cancelled batch frees room
        for task in [*self._tasks, *([self._timer] if self._timer else [])]:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        closer = getattr(self.client, "aclose", None)
        if closer is not None:
            await closer()
        await self.inner.aclose()

    def progress_lines(self) -> list[str]:
        """Per batch under way: submitted, completed, failed and age."""
        now = time.monotonic()
        return [
            f"{self.name} batch {p.tag}: {p.state}, "
            + (
                f"{p.completed}/{p.submitted} done, {p.failed} failed"
                if p.counted
                else f"{p.submitted} submitted, counts at the end"
            )
            + f", {now - p.started:.0f}s old"
            for p in self.progress.values()
        ]

    # --- waves -------------------------------------------------------------------------

    def _enqueue(self, request: BatchRequest) -> None:
        self._wave_of.pop(request.custom_id, None)
        self._queue.append(request)
        if len(self._queue) >= self.options.wave_size:
            self._flush()
        elif self._timer is None and not self._held:
            self._timer = asyncio.create_task(self._flush_when_old(), name=f"wave-age-{self.name}")

    def enqueued(self) -> int:
        """The tokens (worst case) of the batches in flight, as the limit counts them."""
        return sum(self._in_flight.values())

    def _take(self) -> list[BatchRequest]:
        """The queued requests of the next wave: up to ``wave_size``, and, under an enqueued
        token limit, only as many (in queue order) as fit beside the batches in flight; the
        rest stay queued (held) until one of them ends. A request whose worst case alone is
        over the limit can never be sent: its call fails as a wrong option, which aborts the
        campaign with the case left open (a verdict would close it for a setting of ours)."""
        limit = self.enqueued_limit
        size = self.options.wave_size
        if limit is None:
            whole, self._queue = self._queue[:size], self._queue[size:]
            return whole
        room = limit - self.enqueued()
        wave: list[BatchRequest] = []
        rest: list[BatchRequest] = []
        for request in self._queue:
            tokens = _worst_case(request)
            if tokens > limit:
                self._deliver(
                    BatchResult(
                        request.custom_id,
                        None,
                        TargetConfigError(
                            f"this request's worst case ({tokens} tokens: its input and "
                            f"max_tokens) is over {self.name}'s batch_enqueued_tokens "
                            f"({limit}): raise the option or lower max_tokens"
                        ),
                    ),
                    None,
                )
            elif len(wave) < size and tokens <= room:
                wave.append(request)
                room -= tokens
            else:
                rest.append(request)
        self._queue = rest
        self._held = bool(rest)
        return wave

    async def _flush_when_old(self) -> None:
        await asyncio.sleep(self.options.wave_age_s)
        self._timer = None
        self._flush()

    def _flush(self) -> None:
        if self._timer is not None and self._timer is not asyncio.current_task():
            self._timer.cancel()
        self._timer = None
        requests = self._take()
        if requests:
            self.waves_sent += 1
            tag = f"{self.recorder.campaign_id}-{uuid.uuid4().hex[:12]}"
            self._own.add(tag)
            for request in requests:
                self._wave_of[request.custom_id] = tag
            if self.enqueued_limit is not None:
                self._in_flight[tag] = sum(_worst_case(r) for r in requests)
            self._spawn(self._send(tag, requests), tag)
        if self._queue and not self._held and self._timer is None:
            # More than a wave was queued: the rest goes at its own size or age.
            self._timer = asyncio.create_task(self._flush_when_old(), name=f"wave-age-{self.name}")

    def _landed(self, tag: str) -> None:
        """A batch is no longer in flight (ended, or never sent): its tokens free room for
        the requests held for it."""
        self._gone.add(tag)
        if self._in_flight.pop(tag, None) is not None and self._held:
            self._flush()

    def _count_attached(self, wave: KnownWave, request: BatchRequest) -> None:
        """Count a request re-attaching to a known batch in flight, until that batch ends.
        The log keeps no request sizes, but a resumed run sends each request again before it
        re-attaches, so its worst case is known then; new waves keep beside it under the
        limit. (A request of that batch not asked again yet is not counted.)"""
        if self.enqueued_limit is None or wave.state is not None or wave.tag in self._gone:
            return
        self._in_flight[wave.tag] = self._in_flight.get(wave.tag, 0) + _worst_case(request)

    def _spawn(self, work: object, tag: str) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work, name=f"batch-{tag}")  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _learn(self) -> None:
        """Read the waves other workers recorded since this model last looked."""
        if self._refresh is None:
            return
        for wave in (await self._refresh()).values():
            if wave.tag in self._seen or wave.model != self.name:
                continue
            self._seen.add(wave.tag)
            if wave.tag not in self._own:
                for custom_id in wave.custom_ids:
                    self._known[custom_id] = wave

    async def _divert(self, tag: str, requests: list[BatchRequest]) -> list[BatchRequest]:
        """The requests of wave ``tag`` that no other worker's batch holds; the others
        re-attach to that batch (a case taken over from a dead worker)."""
        await self._learn()
        mine: list[BatchRequest] = []
        for request in requests:
            custom_id = request.custom_id
            wave = self._known.pop(custom_id, None)
            if wave is not None and self._wave_of.get(custom_id) == tag:
                self._wave_of[custom_id] = wave.tag
                self._count_attached(wave, request)
                self._reattach(wave)
            else:
                mine.append(request)
        return mine

    async def _owner_lives(self, wave: KnownWave) -> bool:
        """Whether another worker that queued ``wave`` still runs (it may yet create it)."""
        if self._live_owners is None or wave.owner is None:
            return False
        if wave.owner == self.recorder.owner:
            return False  # this process: a wave of its own is never re-attached to
        return wave.owner in await self._live_owners()

    async def _send(self, tag: str, requests: list[BatchRequest]) -> None:
        if self._refresh is not None:
            try:
                requests = await self._divert(tag, requests)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self._fail([r.custom_id for r in requests], tag, exc)
                self._landed(tag)
                return
            if not requests:
                self._landed(tag)
                return
            if tag in self._in_flight:
                # Requests another worker's batch holds are not enqueued again by this one
                # (they count toward that batch now): the room they leave may take held ones.
                self._in_flight[tag] = sum(_worst_case(r) for r in requests)
                if self._held:
                    self._flush()
        ids = [r.custom_id for r in requests]
        self.progress[tag] = WaveProgress(tag, len(ids), time.monotonic())
        try:
            queued_at = time.time()
            await self.recorder.record(
                WAVE_TOPIC,
                WaveQueued(tag=tag, model=self.name, custom_ids=ids, queued_at=queued_at),
            )
            file_id = await self.client.upload(requests)
            try:
                batch_id = await self.client.create(requests, file_id, tag)
            except ModelError:
                # The vendor may have created it before the error reached us: never twice.
                found = await self._find(tag, ids, queued_at)
                if found is None:
                    raise
                batch_id = found
            self._batch_ids.add(batch_id)
            submitted = WaveSubmitted(tag=tag, model=self.name, file_id=file_id, batch_id=batch_id)
            await self.recorder.record(SUBMITTED_TOPIC, submitted)
            await self._follow(tag, batch_id, ids, ended=None)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._fail(ids, tag, exc)
        finally:
            self.progress.pop(tag, None)
            self._landed(tag)

    def _reattach(self, wave: KnownWave) -> None:
        """Follow a batch the log knows (once), for a request a resumed run sends again."""
        if wave.tag in self._attached:
            return
        self._attached.add(wave.tag)
        self._spawn(self._follow_known(wave), wave.tag)

    async def _follow_known(self, wave: KnownWave) -> None:
        ids = list(wave.custom_ids)
        self.progress[wave.tag] = WaveProgress(wave.tag, len(ids), time.monotonic(), "attached")
        try:
            batch_id, ended = wave.batch_id, wave.state
            while batch_id is None and await self._owner_lives(wave):
                # Its owner may still create it and record its id: wait for one or the other.
                if (batch_id := await self.client.find(wave.tag)) is not None:
                    break
                await asyncio.sleep(self.options.poll_s)
                fresh = (await self._refresh()).get(wave.tag) if self._refresh else None
                if fresh is not None and fresh.batch_id is not None:
                    batch_id, ended = fresh.batch_id, fresh.state
            if batch_id is None:
                batch_id = await self._find(wave.tag, ids, wave.queued_at)
                if batch_id is None:  # never created: its requests go in a new wave
                    self._landed(wave.tag)  # (nothing of it was in flight)
                    for custom_id in ids:
                        waiting = self._waiting.get(custom_id)
                        if self._known.get(custom_id) is wave:
                            del self._known[custom_id]
                        # Only the calls awaiting this batch: a request a newer batch holds
                        # is answered there (sending it again would pay for it twice).
                        if (
                            waiting is not None
                            and not waiting.future.done()
                            and self._wave_of.get(custom_id) == wave.tag
                        ):
                            self._enqueue(waiting.request)
                    return
                submitted = WaveSubmitted(
                    tag=wave.tag, model=self.name, file_id=wave.file_id, batch_id=batch_id
                )
                await self.recorder.record(SUBMITTED_TOPIC, submitted)
            self._batch_ids.add(batch_id)
            await self._follow(wave.tag, batch_id, ids, ended=ended)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._fail(ids, wave.tag, exc)
        finally:
            self.progress.pop(wave.tag, None)
            self._landed(wave.tag)

    async def _find(self, tag: str, ids: list[str], queued_at: float | None) -> str | None:
        """The batch of a wave whose id was never recorded: by its tag, or, for a vendor
        that keeps none (``find_by_requests``), by the requests it holds."""
        by_requests = getattr(self.client, "find_by_requests", None)
        if by_requests is None or queued_at is None:
            return await self.client.find(tag)
        if self._refresh is not None:
            # Other workers' recorded batches are theirs: never one found by its requests.
            # But this wave's own id, if its owner recorded it since this model read the log,
            # is the answer (excluding it would send the wave again: paid twice).
            log = await self._refresh()
            if (own := log.get(tag)) is not None and own.batch_id is not None:
                return own.batch_id
            self._batch_ids.update(
                w.batch_id for w in log.values() if w.model == self.name and w.batch_id
            )
        found: str | None = await by_requests(tag, ids, queued_at, frozenset(self._batch_ids))
        return found

    async def _follow(self, tag: str, batch_id: str, ids: list[str], ended: str | None) -> None:
        """Poll the batch until it ends (with backoff), record its end, hand out results."""
        wait = self.options.poll_s
        while True:
            status = await self.client.status(batch_id)
            self._show(tag, status)
            if status.state != "pending":
                break
            await asyncio.sleep(wait)
            wait = min(wait * 1.5, self.options.poll_max_s)
        self._landed(tag)
        if ended is None:
            end = WaveEnded(
                tag=tag,
                model=self.name,
                state=status.state,
                total=status.total,
                completed=status.completed,
                failed=status.failed,
            )
            await self.recorder.record(ENDED_TOPIC, end)
        results = await self.client.results(batch_id) if status.state != "failed" else []
        by_id = {r.custom_id: r for r in results}
        for custom_id in ids:
            result = by_id.get(custom_id) or BatchResult(
                custom_id,
                None,
                BatchUnansweredError(f"batch {tag} ended {status.state} without answering it"),
            )
            self._deliver(result, tag)

    def _show(self, tag: str, status: BatchStatus) -> None:
        shown = self.progress.get(tag)
        if shown is not None:
            shown.state, shown.completed, shown.failed, shown.counted = (
                status.vendor_state,
                status.completed,
                status.failed,
                status.counted,
            )

    def _deliver(self, result: BatchResult, tag: str | None) -> None:
        """Hand a result to the call awaiting it from batch ``tag`` (None: a request failed
        while still queued, before any batch)."""
        custom_id = result.custom_id
        waiting = self._waiting.get(custom_id)
        if waiting is None:
            known = self._known.get(custom_id)
            if known is not None and known.tag == tag:
                # A re-attached batch's result no call has asked for yet, from the latest
                # batch the log holds it in (an older one's would be stale: the newer one
                # holds it and answers it).
                del self._known[custom_id]
                self._kept[custom_id] = (result, tag)
            return
        if self._wave_of.get(custom_id) != tag:
            return  # an older batch of the same request: the one its call awaits answers it
        del self._waiting[custom_id]
        self._wave_of.pop(custom_id, None)
        if not waiting.future.done():
            waiting.future.set_result((result, tag or ""))

    def _fail(self, ids: list[str], tag: str, exc: BaseException) -> None:
        """A wave that could not be sent or followed: each of its calls fails as a direct
        call would (a vendor error, retried by the engine's rules)."""
        error = (
            exc
            if isinstance(exc, ModelError)
            else ModelError(f"batch {tag}: untranslated {type(exc).__name__}: {exc}")
        )
        for custom_id in ids:
            self._deliver(BatchResult(custom_id, None, error), tag)


def _worst_case(request: BatchRequest) -> int:
    """A request's tokens as an enqueued-token limit counts them: its estimated input and
    its max_tokens, the worst case the budget reserves for it."""
    chars = sum(len(m.content) for m in request.messages)
    return estimate_tokens(chars, request.params.max_tokens)


class BatchGate:
    """The gate of a model in batch mode: no rate limit and no in-flight limit (the vendor
    queues a batch; the engine's workers bound a wave), but the spending ceiling holds per
    request, so a wave is admitted only if its worst case fits: each request reserves its
    worst case before it joins a wave, and settles at the cost the batch client reports
    (the batch rate). ``vendor``: the model's direct gate, whose meter it uses; ``price``:
    the batch price (the batch client's), so the worst case is reserved in batch terms
    (else the direct gate's list price, which over-reserves)."""

    def __init__(self, name: str, vendor: CallGate | None = None, price: Any = None) -> None:
        self.name = name
        self.model = name  # as a vendor gate names it (the shared ceiling wraps either)
        self.meter: Any = getattr(vendor, "meter", None)
        self.price: Any = price if price is not None else getattr(vendor, "price", None)
        self._reserved: contextvars.ContextVar[float] = contextvars.ContextVar(
            f"batch-reserved-{name}", default=0.0
        )

    async def acquire(self, estimated_tokens: int) -> None:
        if self.meter is None:
            return
        reserve = 0.0
        if self.price is not None and self.meter.ceiling_usd is not None:
            reserve = float(self.price.worst_case(estimated_tokens))
        self.meter.reserve(self.name, reserve)  # raises BudgetExceededError
        self._reserved.set(reserve)

    async def ready(self) -> None:
        return None

    def release(self, reply: Reply | None, error: ModelError | None) -> None:
        if self.meter is None:
            return
        reserved = self._reserved.get()
        self._reserved.set(0.0)
        cost = 0.0
        if reply is not None:
            cost = reply.cost_usd if reply.cost_usd is not None else 0.0
            if reply.cost_usd is None and self.price is not None:
                cost = float(self.price.cost(reply.usage))
        self.meter.settle(self.name, reserved, cost)


def batch_progress(models: Iterable[object]) -> str:
    """The progress lines of every batch under way (empty when none)."""
    lines: list[str] = []
    for model in models:
        if isinstance(model, BatchModel):
            lines.extend(model.progress_lines())
    return "; ".join(lines[:4]) + (f" (+{len(lines) - 4} more)" if len(lines) > 4 else "")
