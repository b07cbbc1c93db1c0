"""Unit tests of the wave scheduler (`harness.running.batch_waves`) with an in-memory batch
client: waves by size and by age, one request per custom_id, the log's notes before and after
each step, re-attaching to the batches a log knows, errors as a direct call's, the ceiling."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from harness.models.batch import BatchRequest, BatchResult, BatchState, BatchStatus
from harness.models.gates import estimate_tokens
from harness.models.providers._budget import CostMeter
from harness.running.batch_waves import (
    BatchGate,
    BatchModel,
    BatchRecorder,
    KnownWave,
    known_waves,
)
from harness.running.campaign import BatchOptions
from harness.running.retry import RetryPolicy
from harness.store.writer import PendingEvent
from harness.testing import FakeModel
from harness.vocabulary.errors import (
    BatchUnansweredError,
    BudgetExceededError,
    ServerError,
    TargetConfigError,
)
from harness.vocabulary.events import Note
from harness.vocabulary.model import GenerationParams, Message, Reply, request_key

FAST = BatchOptions(wave_size=3, wave_age_s=0.05, poll_s=0.01, poll_max_s=0.02)
WHOLE = BatchOptions(wave_size=3, wave_age_s=60, poll_s=0.01)  # sent only when full
AGED = BatchOptions(wave_size=100, wave_age_s=0.05, poll_s=0.01)  # sent only by age


class Store:
    """The two calls `BatchRecorder` makes, kept in a list."""

    def __init__(self, journal: list[str]) -> None:
        self.events: list[PendingEvent] = []
        self.journal = journal

    async def next_seq(self, campaign: str, case_id: str) -> int:
        return len(self.events) + 1

    async def append(self, events: Sequence[PendingEvent]) -> list[int]:
        self.events.extend(events)
        for pending in events:
            assert isinstance(pending.event, Note)
            self.journal.append(pending.event.topic)
        return [len(self.events)]


@dataclass
class Client:
    """A batch API in memory: every batch ends after ``polls`` polls, answering each request
    with its last message reversed, except the ids in ``fail`` (an error) and ``drop`` (no
    result)."""

    journal: list[str]
    polls: int = 1
    state: BatchState = "ended"
    fail: set[str] = field(default_factory=set)
    fail_in: set[tuple[str, str]] = field(default_factory=set)  # (batch id, custom_id)
    drop: set[str] = field(default_factory=set)
    create_error: bool = False
    batches: dict[str, tuple[str, list[BatchRequest]]] = field(default_factory=dict)
    polled: dict[str, int] = field(default_factory=dict)
    name: str = "m"
    enqueued_tokens: int | None = None  # the limit the engine must keep to
    flying: dict[str, int] = field(default_factory=dict)  # batch id -> worst-case tokens
    peak: int = 0  # most tokens ever in flight

    async def upload(self, requests: Sequence[BatchRequest]) -> str | None:
        self.journal.append("upload")
        return f"file-{len(self.batches)}"

    async def create(self, requests: Sequence[BatchRequest], file_id: str | None, tag: str) -> str:
        self.journal.append("create")
        batch_id = f"b{len(self.batches)}"
        self.batches[batch_id] = (tag, list(requests))
        self.flying[batch_id] = sum(
            estimate_tokens(sum(len(m.content) for m in r.messages), r.params.max_tokens)
            for r in requests
        )
        self.peak = max(self.peak, sum(self.flying.values()))
        if self.create_error:
            raise ServerError("the connection dropped after the batch was made")
        return batch_id

    async def find(self, tag: str) -> str | None:
        self.journal.append("find")
        return next((b for b, (t, _) in self.batches.items() if t == tag), None)

    async def status(self, batch_id: str) -> BatchStatus:
        self.journal.append("status")
        self.polled[batch_id] = self.polled.get(batch_id, 0) + 1
        total = len(self.batches[batch_id][1])
        if self.polled[batch_id] <= self.polls:
            return BatchStatus("pending", "in_progress", total, 0, 0)
        self.flying.pop(batch_id, None)
        return BatchStatus(self.state, self.state, total, total, 0)

    async def results(self, batch_id: str) -> list[BatchResult]:
        self.journal.append("results")
        out = []
        for request in self.batches[batch_id][1]:
            if request.custom_id in self.drop:
                continue
            if request.custom_id in self.fail or (batch_id, request.custom_id) in self.fail_in:
                out.append(BatchResult(request.custom_id, None, ServerError("overloaded")))
            else:
                text = request.messages[-1].content[::-1]
                out.append(BatchResult(request.custom_id, Reply(text=text), None))
        return out


def batch_model(
    client: Client, journal: list[str], options: BatchOptions = FAST, **known: KnownWave
) -> tuple[BatchModel, Store]:
    store = Store(journal)
    recorder = BatchRecorder(store, "camp")  # type: ignore[arg-type]
    return BatchModel(FakeModel(name="m"), client, options, recorder, known), store


def ask(text: str) -> tuple[list[Message], GenerationParams]:
    return [Message(role="user", content=text)], GenerationParams(seed=1)


async def test_a_full_wave_goes_at_once_and_its_notes_bracket_every_step() -> None:
    journal: list[str] = []
    client = Client(journal)
    model, store = batch_model(
        client, journal, BatchOptions(wave_size=3, wave_age_s=60, poll_s=0.01)
    )
    replies = await asyncio.wait_for(
        asyncio.gather(*(model.complete(*ask(t)) for t in ("abc", "de", "f"))), timeout=5
    )
    assert [r.text for r in replies] == ["cba", "ed", "f"]
    assert len(client.batches) == 1 and model.waves_sent == 1
    assert journal == [
        "batch.wave",
        "upload",
        "create",
        "batch.submitted",
        "status",
        "status",
        "batch.ended",
        "results",
    ]
    waves = known_waves(e.event for e in store.events if isinstance(e.event, Note))
    (wave,) = waves.values()
    assert wave.batch_id == "b0" and wave.state == "ended" and len(wave.custom_ids) == 3
    messages, params = ask("abc")
    key = request_key("m", messages, params)
    assert key in wave.custom_ids
    assert model.batch_tag_of(key) == wave.tag and model.batch_tag_of(key) is None


async def test_a_wave_that_does_not_fill_goes_at_its_age() -> None:
    journal: list[str] = []
    client = Client(journal)
    model, _ = batch_model(
        client, journal, BatchOptions(wave_size=100, wave_age_s=0.05, poll_s=0.01)
    )
    replies = await asyncio.wait_for(
        asyncio.gather(model.complete(*ask("xy")), model.complete(*ask("xy"))), timeout=5
    )
    assert [r.text for r in replies] == ["yx", "yx"]
    # The same request twice is one request of the batch (custom ids are unique in it).
    ((_, requests),) = client.batches.values()
    assert len(requests) == 1


async def test_next_steps_form_the_next_wave() -> None:
    journal: list[str] = []
    client = Client(journal)
    model, _ = batch_model(client, journal)

    async def case(name: str) -> str:
        first = await model.complete(*ask(name))
        second = await model.complete(*ask(first.text + "!"))
        return second.text

    answers = await asyncio.wait_for(asyncio.gather(*(case(c) for c in "pqr")), timeout=5)
    assert answers == ["!p", "!q", "!r"]
    assert len(client.batches) == 2  # two turns of three cases: two waves, not six


async def test_errors_and_missing_results_fail_the_call_as_a_direct_call_would() -> None:
    journal: list[str] = []
    messages, params = ask("gone")
    failing, _ = ask("bad")
    client = Client(
        journal,
        drop={request_key("m", messages, params)},
        fail={request_key("m", failing, params)},
    )
    model, _ = batch_model(client, journal)
    outcomes = await asyncio.gather(
        model.complete(messages, params),
        model.complete(failing, params),
        model.complete(*ask("ok")),
        return_exceptions=True,
    )
    assert isinstance(outcomes[0], BatchUnansweredError) and outcomes[0].retryable
    assert isinstance(outcomes[1], ServerError)
    assert isinstance(outcomes[2], Reply) and outcomes[2].text == "ko"


async def test_a_failed_batch_leaves_every_request_unanswered() -> None:
    journal: list[str] = []
    client = Client(journal, state="failed")
    model, _ = batch_model(client, journal)
    with pytest.raises(BatchUnansweredError, match="ended failed"):
        await model.complete(*ask("a"))
    assert "results" not in journal


async def test_a_creation_that_errs_after_the_vendor_made_it_is_found_not_made_twice() -> None:
    journal: list[str] = []
    client = Client(journal, create_error=True)
    model, _ = batch_model(client, journal)
    reply = await asyncio.wait_for(model.complete(*ask("ab")), timeout=5)
    assert reply.text == "ba" and len(client.batches) == 1 and "find" in journal


async def test_a_resumed_request_re_attaches_to_its_batch_instead_of_paying_again() -> None:
    journal: list[str] = []
    client = Client(journal)
    messages, params = ask("kept")
    key = request_key("m", messages, params)
    client.batches["b0"] = ("old-tag", [BatchRequest(key, tuple(messages), params)])
    known = KnownWave("old-tag", "m", (key,), batch_id="b0")
    model, store = batch_model(client, journal, wave=known)
    reply = await asyncio.wait_for(model.complete(messages, params), timeout=5)
    assert reply.text == "tpek" and len(client.batches) == 1
    assert "upload" not in journal and "create" not in journal
    assert [e.event.topic for e in store.events] == ["batch.ended"]  # type: ignore[union-attr]
    assert model.batch_tag_of(key) == "old-tag"


async def test_a_batch_whose_id_was_never_recorded_is_found_by_its_tag() -> None:
    journal: list[str] = []
    client = Client(journal)
    messages, params = ask("lost id")
    key = request_key("m", messages, params)
    client.batches["b0"] = ("old-tag", [BatchRequest(key, tuple(messages), params)])
    model, store = batch_model(client, journal, wave=KnownWave("old-tag", "m", (key,)))
    reply = await asyncio.wait_for(model.complete(messages, params), timeout=5)
    assert reply.text == "di tsol" and len(client.batches) == 1 and journal[0] == "find"
    topics = [e.event.topic for e in store.events]  # type: ignore[union-attr]
    assert topics == ["batch.submitted", "batch.ended"]


async def test_a_batch_never_created_is_sent_in_a_new_wave() -> None:
    journal: list[str] = []
    client = Client(journal)
    messages, params = ask("never sent")
    key = request_key("m", messages, params)
    model, _ = batch_model(client, journal, wave=KnownWave("old-tag", "m", (key,)))
    reply = await asyncio.wait_for(model.complete(messages, params), timeout=5)
    assert reply.text == "tnes reven" and len(client.batches) == 1
    ((tag, _),) = client.batches.values()
    assert tag != "old-tag"


async def test_an_ended_batch_s_results_wait_for_a_case_that_asks_later() -> None:
    journal: list[str] = []
    client = Client(journal)
    first, params = ask("one")
    second, _ = ask("two")
    keys = (request_key("m", first, params), request_key("m", second, params))
    pairs = zip(keys, (first, second), strict=True)
    requests = [BatchRequest(k, tuple(m), params) for k, m in pairs]
    client.batches["b0"] = ("old-tag", requests)
    known = KnownWave("old-tag", "m", keys, batch_id="b0", state="ended")
    model, store = batch_model(client, journal, wave=known)
    assert (await asyncio.wait_for(model.complete(first, params), timeout=5)).text == "eno"
    assert (await asyncio.wait_for(model.complete(second, params), timeout=5)).text == "owt"
    assert len(client.batches) == 1 and journal.count("results") == 1
    assert not store.events  # its end was recorded before: not again


def held_twice(client: Client) -> dict[str, int]:
    """The requests the client's batches hold more than once (each would be paid twice)."""
    held = Counter(r.custom_id for _, requests in client.batches.values() for r in requests)
    return {key: n for key, n in held.items() if n > 1}


@pytest.mark.parametrize("first", ["newer", "older"])
async def test_a_request_a_newer_batch_holds_is_not_sent_again_for_an_older_never_created_one(
    first: str,
) -> None:
    """Regression (a kill-test run paid one request twice): a wave never created held X and
    Y; a resume sent X in a new batch and was killed before Y was asked; the next resume
    asks both. X must be answered by the batch that holds it, never sent in a third."""
    journal: list[str] = []
    client = Client(journal, polls=3)
    (x, params), (y, _) = ask("ex"), ask("why")
    kx, ky = request_key("m", x, params), request_key("m", y, params)
    client.batches["b0"] = ("newer", [BatchRequest(kx, tuple(x), params)])
    older = KnownWave("older", "m", (kx, ky))  # queued, never created
    newer = KnownWave("newer", "m", (kx,), batch_id="b0")
    model, _ = batch_model(client, journal, older=older, newer=newer)
    order = [(x, kx), (y, ky)] if first == "newer" else [(y, ky), (x, kx)]
    replies = await asyncio.wait_for(
        asyncio.gather(*(model.complete(m, params) for m, _ in order)), timeout=5
    )
    assert sorted(r.text for r in replies) == ["xe", "yhw"]
    assert held_twice(client) == {} and len(client.batches) == 2
    assert model.batch_tag_of(kx) == "newer"


@pytest.mark.parametrize("together", [True, False])
async def test_an_older_batch_s_failure_never_answers_a_request_a_newer_batch_holds(
    together: bool,
) -> None:
    """A resumed log holds X in an older ended batch that failed it and in the newer batch
    its retry went to; Y (only in the older) re-attaches the older one first. Its stale
    failure of X must neither answer X's waiting call nor be kept for it: X is answered by
    the newer batch, and nothing is sent again."""
    journal: list[str] = []
    client = Client(journal, polls=2)
    (x, params), (y, _) = ask("ex"), ask("why")
    kx, ky = request_key("m", x, params), request_key("m", y, params)
    both = [BatchRequest(k, tuple(m), params) for k, m in ((kx, x), (ky, y))]
    client.batches["b0"] = ("older", both)
    client.batches["b1"] = ("newer", [both[0]])
    client.fail_in.add(("b0", kx))
    client.polled["b1"] = -3  # the newer batch ends after the older's results are read
    older = KnownWave("older", "m", (kx, ky), batch_id="b0", state="ended")
    newer = KnownWave("newer", "m", (kx,), batch_id="b1")
    model, _ = batch_model(client, journal, older=older, newer=newer)
    if together:
        x_reply, y_reply = await asyncio.wait_for(
            asyncio.gather(model.complete(x, params), model.complete(y, params)), timeout=5
        )
    else:
        y_reply = await asyncio.wait_for(model.complete(y, params), timeout=5)
        x_reply = await asyncio.wait_for(model.complete(x, params), timeout=5)
    assert (x_reply.text, y_reply.text) == ("xe", "yhw")
    assert model.batch_tag_of(kx) == "newer" and len(client.batches) == 2
    assert "upload" not in journal and "create" not in journal


async def test_polls_back_off_up_to_the_longest_wait() -> None:
    journal: list[str] = []
    client = Client(journal, polls=6)
    model, _ = batch_model(client, journal, BatchOptions(wave_size=1, poll_s=0.01, poll_max_s=0.02))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(model.complete(*ask("slow")), timeout=5)
    # waits 0.01, 0.015, then 0.02 four times: about 0.105 s, far from 6 x the longest.
    assert 0.1 <= loop.time() - started < 0.5 and journal.count("status") == 7


async def test_the_ceiling_admits_a_request_only_if_its_worst_case_fits() -> None:
    @dataclass
    class Price:
        def worst_case(self, tokens: int) -> float:
            return tokens * 0.01

        def cost(self, usage: object) -> float:
            return 99.0

    @dataclass
    class Vendor:
        meter: CostMeter
        price: Price

    meter = CostMeter(ceiling_usd=1.0)
    gate = BatchGate("m", Vendor(meter, Price()))  # type: ignore[arg-type]
    await gate.acquire(60)
    gate.release(Reply(text="x", cost_usd=0.25), None)  # the client's batch-rate cost
    assert meter.spent_usd == 0.25 and meter.reserved_usd == 0.0
    await gate.acquire(70)
    with pytest.raises(BudgetExceededError):
        await gate.acquire(10)  # 0.25 spent + 0.70 reserved + 0.10 > 1.00
    assert BatchGate("free").meter is None
    # With the batch client's price, the worst case is reserved at the batch rate.
    halved = CostMeter(ceiling_usd=1.0)

    @dataclass
    class HalfPrice:
        def worst_case(self, tokens: int) -> float:
            return tokens * 0.005

    gate = BatchGate("m", Vendor(halved, Price()), HalfPrice())  # type: ignore[arg-type]
    await gate.acquire(150)  # 0.75 at the batch rate; 1.50 at the list price would not fit
    assert halved.reserved_usd == pytest.approx(0.75)


# --- several workers (PostgreSQL): waves other workers queue, owners that live or died ----


def worker_model(
    client: Client, journal: list[str], log: dict[str, KnownWave], live: set[str]
) -> BatchModel:
    """A worker's model ("me") whose log another worker ("other") writes to meanwhile."""
    recorder = BatchRecorder(Store(journal), "camp", owner="me")  # type: ignore[arg-type]

    async def refresh() -> dict[str, KnownWave]:
        return dict(log)

    async def live_owners() -> set[str]:
        return set(live)

    return BatchModel(FakeModel(name="m"), client, FAST, recorder, {}, refresh, live_owners)


async def test_a_taken_over_request_re_attaches_to_the_other_worker_s_batch() -> None:
    journal: list[str] = []
    client = Client(journal, polls=2)
    theirs = BatchRequest(request_key("m", *ask("taken")), tuple(ask("taken")[0]), ask("x")[1])
    batch_id = await client.create([theirs], None, "camp-theirs")
    # Learned after this worker started: the other worker queued and created it, then died.
    log = {"camp-theirs": KnownWave("camp-theirs", "m", (theirs.custom_id,), None, batch_id)}
    log["camp-theirs"].owner = "other"
    model = worker_model(client, journal, log, live={"me"})
    replies = await asyncio.wait_for(
        asyncio.gather(model.complete(*ask("taken")), model.complete(*ask("mine"))), timeout=5
    )
    assert [r.text for r in replies] == ["nekat", "enim"]
    # Only "mine" went into a new batch: the taken request was never sent again.
    sent = [ids for _, ids in client.batches.values()]
    assert [[r.custom_id for r in ids] for ids in sent] == [
        [theirs.custom_id],
        [request_key("m", *ask("mine"))],
    ]


@pytest.mark.parametrize("owner_lives", [True, False])
async def test_a_batch_never_recorded_as_created_is_sent_again_only_once_its_owner_died(
    owner_lives: bool,
) -> None:
    journal: list[str] = []
    client = Client(journal)
    custom_id = request_key("m", *ask("q"))
    log = {"camp-w": KnownWave("camp-w", "m", (custom_id,), owner="other")}
    live = {"me", "other"} if owner_lives else {"me"}
    model = worker_model(client, journal, log, live)
    asking = asyncio.create_task(model.complete(*ask("q")))
    await asyncio.sleep(0.3)
    if owner_lives:
        assert not asking.done() and client.batches == {}  # waiting for its owner
        # The owner creates it now and records its id: the waiting worker follows it.
        request = BatchRequest(custom_id, tuple(ask("q")[0]), ask("q")[1])
        log["camp-w"].batch_id = await client.create([request], None, "camp-w")
    reply = await asyncio.wait_for(asyncio.shield(asking), timeout=5)
    assert reply.text == "q"
    assert len(client.batches) == 1  # created once, by its owner or (owner dead) by this one


def sized(text: str, max_tokens: int) -> tuple[list[Message], GenerationParams]:
    return [Message(role="user", content=text)], GenerationParams(seed=1, max_tokens=max_tokens)


async def test_batches_in_flight_never_hold_more_enqueued_tokens_than_the_limit() -> None:
    journal: list[str] = []
    # Each request's worst case: 40 characters (11 tokens) + 89 max_tokens = 100 tokens.
    client = Client(journal, polls=2, enqueued_tokens=250)
    model, store = batch_model(client, journal, BatchOptions(wave_size=4, wave_age_s=0.02,
                                                             poll_s=0.01))  # fmt: skip
    asks = [sized(f"{i:02d}" + "x" * 38, 89) for i in range(9)]
    assert all(estimate_tokens(40, 89) == 100 for _ in asks)
    replies = await asyncio.wait_for(
        asyncio.gather(*(model.complete(*a) for a in asks)), timeout=10
    )
    assert [r.text for r in replies] == [m[0].content[::-1] for m, _ in asks]
    assert client.peak <= 250  # two requests in flight at most: the third is held
    assert client.peak == 200
    sizes = [len(requests) for _, requests in client.batches.values()]
    assert sum(sizes) == 9 and max(sizes) <= 2 and len(sizes) >= 5
    assert model.enqueued() == 0
    # Every wave is still recorded before it is sent, with exactly the requests it holds.
    waves = known_waves(e.event for e in store.events if isinstance(e.event, Note))
    assert sorted(len(w.custom_ids) for w in waves.values()) == sorted(sizes)


async def test_without_a_limit_a_full_wave_goes_whole() -> None:
    journal: list[str] = []
    client = Client(journal, polls=2)
    model, _ = batch_model(client, journal, BatchOptions(wave_size=4, wave_age_s=60,
                                                         poll_s=0.01))  # fmt: skip
    asks = [sized(f"{i:02d}" + "x" * 38, 89) for i in range(4)]
    await asyncio.wait_for(asyncio.gather(*(model.complete(*a) for a in asks)), timeout=10)
    assert [len(r) for _, r in client.batches.values()] == [4] and client.peak == 400


async def test_a_request_over_the_limit_on_its_own_fails_as_a_wrong_option() -> None:
    journal: list[str] = []
    client = Client(journal, enqueued_tokens=150)
    model, _ = batch_model(client, journal, AGED)
    small, big = sized("s" * 40, 89), sized("b" * 40, 500)
    results = await asyncio.wait_for(
        asyncio.gather(model.complete(*small), model.complete(*big), return_exceptions=True),
        timeout=5,
    )
    assert isinstance(results[0], Reply) and results[0].text == "s" * 40
    assert isinstance(results[1], TargetConfigError)
    assert "batch_enqueued_tokens" in str(results[1]) and not results[1].retryable
    # A wrong option aborts the campaign, leaving the case open: never a verdict.
    assert RetryPolicy().decide(results[1], 1).action == "abort"
    # Only the small request was ever sent.
    assert [len(r) for _, r in client.batches.values()] == [1]


@dataclass
class UntaggedClient(Client):
    """A vendor that keeps no tag (Anthropic): `find` never finds; `find_by_requests` finds a
    batch holding exactly the requests, that the log does not already know."""

    asked: list[tuple[str, frozenset[str], float, frozenset[str]]] = field(default_factory=list)

    async def find(self, tag: str) -> str | None:
        self.journal.append("find")
        return None

    async def find_by_requests(
        self, tag: str, custom_ids: Sequence[str], queued_at: float, known: frozenset[str]
    ) -> str | None:
        self.journal.append("find_by_requests")
        wanted = frozenset(custom_ids)
        self.asked.append((tag, wanted, queued_at, known))
        return next(
            (
                b
                for b, (_, requests) in self.batches.items()
                if b not in known and {r.custom_id for r in requests} == wanted
            ),
            None,
        )


async def test_a_lost_id_is_found_by_the_requests_when_the_vendor_keeps_no_tag() -> None:
    journal: list[str] = []
    client = UntaggedClient(journal)
    messages, params = ask("lost id")
    key = request_key("m", messages, params)
    client.batches["b0"] = ("", [BatchRequest(key, tuple(messages), params)])
    client.batches["b1"] = ("", [BatchRequest("other", tuple(messages), params)])
    known = {
        "lost": KnownWave("lost", "m", (key,), queued_at=1000.0),
        "done": KnownWave("done", "m", ("other",), batch_id="b1", state="ended"),
    }
    model, store = batch_model(client, journal, **known)
    reply = await asyncio.wait_for(model.complete(messages, params), timeout=5)
    assert reply.text == "di tsol" and len(client.batches) == 2  # nothing sent again
    ((tag, wanted, queued_at, known_ids),) = client.asked
    assert (tag, wanted, queued_at, known_ids) == ("lost", {key}, 1000.0, {"b1"})
    submitted = next(e.event for e in store.events if isinstance(e.event, Note))
    assert submitted.topic == "batch.submitted" and submitted.data["batch_id"] == "b0"


async def test_an_older_log_without_the_queued_time_is_looked_up_by_tag_only() -> None:
    journal: list[str] = []
    client = UntaggedClient(journal)
    messages, params = ask("old log")
    key = request_key("m", messages, params)
    client.batches["b0"] = ("", [BatchRequest(key, tuple(messages), params)])
    model, _ = batch_model(client, journal, wave=KnownWave("old", "m", (key,)))
    reply = await asyncio.wait_for(model.complete(messages, params), timeout=5)
    # Not found by tag: its requests go in a new wave (the behaviour before queued_at).
    assert reply.text == "gol dlo" and journal[0] == "find" and not client.asked
    assert len(client.batches) == 2


async def test_a_wave_s_note_records_when_it_was_queued() -> None:
    journal: list[str] = []
    client = Client(journal)
    model, store = batch_model(client, journal, WHOLE)
    before = time.time()
    await asyncio.wait_for(
        asyncio.gather(*(model.complete(*ask(t)) for t in ("a", "b", "c"))), timeout=5
    )
    (wave,) = known_waves(e.event for e in store.events if isinstance(e.event, Note)).values()
    assert wave.queued_at is not None and before <= wave.queued_at <= time.time()


async def test_re_attached_requests_count_toward_the_limit_until_their_batch_ends() -> None:
    journal: list[str] = []
    # A resumed run: batch b0 (two requests of worst case 100) is in flight at the vendor;
    # the log knows it but not its requests' sizes. Limit 250: beside it, no new request fits.
    client = Client(journal, polls=4, enqueued_tokens=250)
    old = [sized(f"o{i}" + "x" * 38, 89) for i in range(2)]
    held = [BatchRequest(request_key("m", m, p), tuple(m), p) for m, p in old]
    client.batches["b0"] = ("old-tag", held)
    client.flying["b0"] = 200
    known = KnownWave("old-tag", "m", tuple(r.custom_id for r in held), batch_id="b0")
    model, _ = batch_model(client, journal, BatchOptions(wave_size=4, wave_age_s=0.02,
                                                         poll_s=0.01), wave=known)  # fmt: skip
    new = [sized(f"n{i}" + "x" * 38, 89) for i in range(2)]
    asking = [asyncio.create_task(model.complete(*a)) for a in old]
    await asyncio.sleep(0)  # both re-attach (and count) before the new requests queue
    assert model.enqueued() == 200
    replies = await asyncio.wait_for(
        asyncio.gather(*asking, *(model.complete(*a) for a in new)), timeout=10
    )
    assert [r.text for r in replies] == [m[0].content[::-1] for m, _ in [*old, *new]]
    # The new wave went only once b0 ended: never more than the limit enqueued at once.
    assert client.peak <= 250 and client.peak == 200
    assert [len(r) for _, r in client.batches.values()] == [2, 2]
    assert model.enqueued() == 0  # freed when b0 ended, and the new batch's when it ended


async def test_a_re_attached_batch_never_created_frees_its_tokens_for_a_new_wave() -> None:
    journal: list[str] = []
    client = Client(journal, enqueued_tokens=250)
    old = sized("lost" + "x" * 36, 89)
    key = request_key("m", *old)
    model, _ = batch_model(client, journal, AGED, wave=KnownWave("never", "m", (key,)))
    reply = await asyncio.wait_for(model.complete(*old), timeout=5)
    assert reply.text == old[0][0].content[::-1] and len(client.batches) == 1
    assert model.enqueued() == 0


async def test_a_lost_wave_whose_id_its_dead_owner_recorded_meanwhile_is_not_sent_again() -> None:
    journal: list[str] = []
    client = UntaggedClient(journal)
    custom_id = request_key("m", *ask("q"))
    request = BatchRequest(custom_id, tuple(ask("q")[0]), ask("q")[1])
    # The owner created it and recorded its id after this worker read the log, then died.
    log = {"camp-w": KnownWave("camp-w", "m", (custom_id,), owner="other", queued_at=1.0)}
    log_now = {"camp-w": KnownWave("camp-w", "m", (custom_id,), owner="other", queued_at=1.0)}
    log_now["camp-w"].batch_id = await client.create([request], None, "")
    recorder = BatchRecorder(Store(journal), "camp", owner="me")  # type: ignore[arg-type]

    async def refresh() -> dict[str, KnownWave]:
        return dict(log_now)

    async def live_owners() -> set[str]:
        return {"me"}

    model = BatchModel(FakeModel(name="m"), client, FAST, recorder, log, refresh, live_owners)
    reply = await asyncio.wait_for(model.complete(*ask("q")), timeout=5)
    assert reply.text == "q" and len(client.batches) == 1  # followed, never created again


@dataclass
class UncountedClient(Client):
    """A vendor that tells no counts while a batch runs (Gemini through its SDK)."""

    async def status(self, batch_id: str) -> BatchStatus:
        status = await super().status(batch_id)
        if status.state == "pending":
            return BatchStatus("pending", "JOB_STATE_RUNNING", 0, 0, 0, counted=False)
        return status


@pytest.mark.parametrize("counted", [True, False])
async def test_the_progress_line_says_counts_come_at_the_end_when_the_vendor_tells_none(
    counted: bool,
) -> None:
    journal: list[str] = []
    client = (Client if counted else UncountedClient)(journal, polls=5)
    slow = BatchOptions(wave_size=1, wave_age_s=60, poll_s=0.05, poll_max_s=0.05)
    model, _ = batch_model(client, journal, slow)
    asking = asyncio.create_task(model.complete(*ask("slow")))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if "status" in journal:
            break
    (line,) = model.progress_lines()
    if counted:
        assert "0/1 done, 0 failed" in line and "counts at the end" not in line
    else:
        assert "1 submitted, counts at the end" in line and "done" not in line
    assert "JOB_STATE_RUNNING" in line or counted
    await asyncio.wait_for(asyncio.shield(asking), timeout=10)
    assert model.progress_lines() == []
