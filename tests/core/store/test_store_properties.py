"""Property tests of the event store: fuzzed rows raise only typed errors, and a state
machine keeps the store equal to a plain in-memory model of it. Both run against SQLite and
PostgreSQL (one suite: the fixtures and the machine take the store as a parameter)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from harness.store.open import open_reader, open_writer
from harness.store.protocol import EventSink
from harness.store.schema import connect
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import ConcurrencyError, StoreError
from harness.vocabulary.events import (
    EVENT_TYPES,
    AskSent,
    CaseOpened,
    Note,
    ReplyReceived,
    VerdictReached,
    decode_event,
    encode_event,
)
from harness.vocabulary.model import GenerationParams, Message, Reply
from harness.vocabulary.relation import Ask, Case, Outcome, Verdict

# --- fuzzing ----------------------------------------------------------------------------

_ASK = Ask(thread="t", prompt="In the following list: [nurse], which ones are definitely female?")
VALID = [
    encode_event(e)[2]
    for e in (
        Note(topic="x", data={"a": [1, 2]}),
        CaseOpened(
            case=Case(case_id="c", relation="r", model="m", index=1, repeat=0, seed=3, data={})
        ),
        AskSent(
            turn=0,
            ask=_ASK,
            model="m",
            messages=[Message(role="user", content="hi")],
            params=GenerationParams(temperature=0.5),
            request_key="k",
        ),
        ReplyReceived(turn=0, reply=Reply(text="[nurse]")),
        VerdictReached(verdict=Verdict(outcome=Outcome.HELD, reason="ok")),
    )
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def mutated_payload(draw: st.DrawFn) -> str | bytes:
    base = json.loads(draw(st.sampled_from(VALID)))
    action = draw(st.sampled_from(["drop", "retype", "truncate", "garble", "nest", "bytes"]))
    if action == "drop" and base:
        base.pop(draw(st.sampled_from(sorted(base))))
    elif action == "retype" and base:
        base[draw(st.sampled_from(sorted(base)))] = draw(json_values)
    elif action == "nest":
        return "[" * draw(st.integers(1, 5000)) + "]" * draw(st.integers(0, 5000))
    text = json.dumps(base)
    if action == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if action == "garble":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.text(max_size=5)) + text[at:]
    if action == "bytes":
        return draw(st.binary(max_size=50)) + text.encode()
    return text


kinds = st.sampled_from(sorted(EVENT_TYPES)) | st.text(max_size=12)
versions = st.integers(-3, 4) | st.sampled_from([2**62, -(2**62)])
payloads = (
    mutated_payload()
    | st.text(max_size=200)
    | st.binary(max_size=100)
    | json_values.map(json.dumps)
)
FUZZ_DECODE = 8_000
FUZZ_ROWS = 2_000
_seen = {"decode": 0, "rows": 0, "typed": 0}


@pytest.mark.slow
@settings(
    max_examples=FUZZ_DECODE,
    deadline=timedelta(seconds=2),  # "never hang": every example decodes or fails fast
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(kind=kinds, version=versions, payload=payloads)
def test_fuzzed_payloads_raise_only_typed_errors(kind: str, version: int, payload: Any) -> None:
    _seen["decode"] += 1
    try:
        event = decode_event(kind, version, payload)
    except StoreError:
        _seen["typed"] += 1
        return
    assert event.kind == kind


class _PgRawWriter:
    """Rows written behind the store's back, as `sqlite3.Connection.execute` takes them."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.error = psycopg.Error
        self._conn = psycopg.connect(url, autocommit=True)

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> None:
        self._conn.execute(sql.replace("?", "%s"), args)  # type: ignore[arg-type]

    def close(self) -> None:
        self._conn.close()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fuzz_log(request: pytest.FixtureRequest) -> Any:
    tmp = Path(tempfile.mkdtemp())
    target: str = str(tmp / "fuzz.db")
    database = None
    if request.param == "postgresql":
        server = request.getfixturevalue("postgres_server")
        database = server.create_database()
        target = server.url(database)

    async def create() -> None:
        async with await open_writer(target):
            pass

    asyncio.run(create())
    writer: Any
    if database is None:
        writer = connect(target, isolation_level=None)
        refused: Any = sqlite3.Error
    else:
        writer = _PgRawWriter(target)
        refused = writer.error
    log = open_reader(target)
    yield writer, log, refused
    log.close()
    writer.close()
    if database is not None:
        server.drop_database(database)
    shutil.rmtree(tmp)


sql_values = (
    st.none()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.binary(max_size=10)
)


@settings(
    max_examples=FUZZ_ROWS,
    deadline=timedelta(seconds=2),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
@given(kind=kinds, version=versions | sql_values, payload=payloads, ts=sql_values, seq=sql_values)
def test_fuzzed_rows_read_back_only_as_typed_errors(
    fuzz_log: Any, kind: str, version: Any, payload: Any, ts: Any, seq: Any
) -> None:
    writer, log, refused = fuzz_log
    _seen["rows"] += 1
    writer.execute("DELETE FROM events")
    try:
        writer.execute(
            "INSERT INTO events (campaign, case_id, seq, kind, schema_version, batch, ts, payload)"
            " VALUES ('c', 'x', ?, ?, ?, 1, ?, ?)",
            (
                seq if seq is not None else 1,
                kind,
                version if version is not None else 0,
                ts if ts is not None else 0.0,
                payload,
            ),
        )
    except refused:
        return  # the schema itself refused the row
    try:
        events = list(log.events("c"))
    except StoreError:
        _seen["typed"] += 1
        return
    assert [e.event.kind for e in events] == [kind]


def test_fuzz_figures() -> None:
    print(
        f"fuzzing: {_seen['decode']} payloads + {_seen['rows']} rows, "
        f"{_seen['typed']} typed StoreErrors, 0 other exceptions"
    )
    if _seen["decode"] and _seen["rows"]:
        assert _seen["decode"] + _seen["rows"] >= 10_000


# --- the state machine ---------------------------------------------------------------


def note(i: int) -> Note:
    return Note(topic="t", data={"i": i})


class StoreMachine(RuleBasedStateMachine):
    """The store against a dict of per-case lists plus the global commit order."""

    cases = Bundle("cases")
    server: Any = None  # a PostgreSQL server (a fresh database per run), or None: SQLite

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp())
        self.pg = self.server  # kept: the figure test resets the class attribute
        self.database = self.pg.create_database() if self.pg else None
        self.db = self.server.url(self.database) if self.server else str(self.dir / "sm.db")
        self.store = self.run(open_writer(self.db))
        self.other: EventSink | None = None  # a second writer on the same log
        self.model: dict[str, list[int]] = {}
        self.order: list[tuple[str, int, int]] = []  # (case, seq, i) in commit order
        self.counter = 0
        self.batches: list[list[tuple[str, int]]] = []

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.store.close())
        if self.other is not None:
            self.run(self.other.close())
        self.loop.close()
        shutil.rmtree(self.dir)
        if self.database is not None:
            self.pg.drop_database(self.database)

    def _batch(self, case: str, seq: int, n: int) -> list[PendingEvent]:
        out = []
        for k in range(n):
            self.counter += 1
            out.append(PendingEvent("camp", case, seq + k, note(self.counter)))
        return out

    def _commit_model(self, batch: list[PendingEvent]) -> None:
        for p in batch:
            assert isinstance(p.event, Note)
            self.model.setdefault(p.case_id, []).append(p.event.data["i"])
            self.order.append((p.case_id, p.seq, p.event.data["i"]))
        self.batches.append([(p.case_id, p.seq) for p in batch])

    def _next(self, case: str) -> int:
        return len(self.model.get(case, [])) + 1

    @initialize(target=cases)
    def first_case(self) -> str:
        return "a"

    @rule(target=cases, name=st.sampled_from(["b", "c", "d"]))
    def new_case(self, name: str) -> str:
        return name

    @rule(case=cases, n=st.integers(1, 5))
    def append(self, case: str, n: int) -> None:
        batch = self._batch(case, self._next(case), n)
        self.run(self.store.append(batch))
        self._commit_model(batch)

    @rule(case=cases, data=st.data())
    def append_at_taken_position(self, case: str, data: st.DataObject) -> None:
        taken = len(self.model.get(case, []))
        if taken == 0:
            return
        # Drawn independently of state: which rival wins a race is not deterministic.
        seq = 1 + data.draw(st.integers(0, 1000)) % taken
        batch = self._batch(case, seq, data.draw(st.integers(1, 3)))
        with pytest.raises(ConcurrencyError):
            self.run(self.store.append(batch))

    @rule(case=cases, n1=st.integers(1, 3), n2=st.integers(1, 3), two_files=st.booleans())
    def concurrent_writers_same_expected_seq(
        self, case: str, n1: int, n2: int, two_files: bool
    ) -> None:
        seq = self._next(case)
        first, second = self._batch(case, seq, n1), self._batch(case, seq, n2)
        if two_files and self.other is None:
            self.other = self.run(open_writer(self.db, create=False))
        rival = self.other if two_files and self.other is not None else self.store

        async def race() -> list[Any]:
            return await asyncio.gather(
                self.store.append(first), rival.append(second), return_exceptions=True
            )

        results = self.run(race())
        winners = [b for b, r in zip((first, second), results, strict=True) if isinstance(r, list)]
        losers = [r for r in results if not isinstance(r, list)]
        assert len(winners) == 1, results
        assert len(losers) == 1 and isinstance(losers[0], ConcurrencyError), results
        self._commit_model(winners[0])

    @rule()
    def reopen(self) -> None:
        self.run(self.store.close())
        self.store = self.run(open_writer(self.db, create=False))

    @invariant()
    def log_equals_model(self) -> None:
        with open_reader(self.db) as log:
            rows = [
                (e.case_id, e.seq, e.event.data["i"])  # type: ignore[union-attr]
                for e in log.events("camp")
            ]
            assert rows == self.order
            per_case = {cid: [e.event.data["i"] for e in evs] for cid, evs in log.cases("camp")}  # type: ignore[union-attr]
            assert per_case == {c: v for c, v in self.model.items() if v}
            batch_of = {
                (cid, seq): b
                for cid, seq, b in log.connection.execute(
                    "SELECT case_id, seq, batch FROM events WHERE campaign = 'camp'"
                )
            }
        # Each append is exactly one batch: same number inside, distinct across appends.
        numbers = [{batch_of[pos] for pos in b} for b in self.batches]
        assert all(len(n) == 1 for n in numbers)
        assert len({next(iter(n)) for n in numbers}) == len(numbers)


StoreMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStoreMachine = StoreMachine.TestCase


@pytest.mark.slow
def test_store_machine_on_postgresql(postgres_server: Any) -> None:
    """The same machine, each run on a fresh PostgreSQL database (slow: one database per
    run; the SQLite run above is in the fast suite, the contract suite covers both)."""

    class PgStoreMachine(StoreMachine):
        server = postgres_server

    PgStoreMachine.TestCase.settings = settings(
        max_examples=25,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    PgStoreMachine.TestCase().runTest()


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_state_machine_figure(store: str, request: pytest.FixtureRequest) -> None:
    started = time.monotonic()
    if store == "postgresql":
        StoreMachine.server = request.getfixturevalue("postgres_server")
    try:
        machine = StoreMachine()
    finally:
        StoreMachine.server = None
    try:
        machine.first_case()
        for i in range(20):
            machine.append("a", 1 + i % 3)
            machine.concurrent_writers_same_expected_seq("a", 1, 2, two_files=bool(i % 2))
        machine.log_equals_model()
        print(
            f"{store} store vs model: {len(machine.order)} events in "
            f"{len(machine.batches)} batches, "
            f"20 races with 20 ConcurrencyErrors, {time.monotonic() - started:.2f}s"
        )
    finally:
        machine.teardown()
