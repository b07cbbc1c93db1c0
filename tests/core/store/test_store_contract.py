"""The event store's contract: atomic batches, per-case sequence, group commit, durability,
the documented SQL views, and typed errors for foreign or newer logs.

One suite for both stores: every test taking ``store_url`` runs against a SQLite file and
against a fresh PostgreSQL database (tests/conftest.py); the few about one store's own
layout (SQLite pragmas, PostgreSQL's foreign databases) say so in their names."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.store.open import open_reader, open_writer
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.errors import (
    ConcurrencyError,
    EventDecodeError,
    NotAHarnessLogError,
    StoreClosedError,
    StoreError,
)
from harness.vocabulary.events import (
    AskFailed,
    AskSent,
    CampaignStarted,
    CaseClosed,
    CaseOpened,
    Note,
    ReplyReceived,
    VerdictReached,
    decode_event,
    encode_event,
)
from harness.vocabulary.model import GenerationParams, Message, Reply, Usage
from harness.vocabulary.relation import Ask, Case, Outcome, Verdict
from tests.postgres_server import raw_sql

CAMPAIGN = "c1"


def started() -> CampaignStarted:
    return CampaignStarted(
        name="t", config={}, config_hash="h", code_version="v", harness_version="0"
    )


def case(case_id: str = "r/0/r0@sim:test") -> Case:
    return Case(
        case_id=case_id,
        relation="metaquerier.mr1",
        model="sim:test",
        index=0,
        repeat=0,
        seed=1,
        data={"terms": ["nurse"]},
    )


def sent(turn: int, attempt: int = 1, prompt: str = "hi") -> AskSent:
    ask = Ask(thread="t", prompt=prompt)
    return AskSent(
        turn=turn,
        attempt=attempt,
        ask=ask,
        model="sim:test",
        messages=[Message(role="user", content=prompt)],
        params=GenerationParams(),
        request_key="k",
    )


def reply(turn: int, text: str, attempt: int = 1) -> ReplyReceived:
    return ReplyReceived(
        turn=turn, attempt=attempt, reply=Reply(text=text, usage=Usage(output_tokens=3))
    )


def at(case_id: str, seq: int, event: object) -> PendingEvent:
    return PendingEvent(CAMPAIGN, case_id, seq, event)  # type: ignore[arg-type]


def rows(target: str, sql: str, *args: object) -> list[tuple[object, ...]]:
    """``sql`` (SQLite's dialect) on the log at ``target``, through its reader."""
    with open_reader(target) as log:
        return [tuple(row) for row in log.connection.execute(sql, args).fetchall()]


def raw_insert(target: str, sql: str, *args: object) -> None:
    """Write a row behind the writer's back (a newer harness, a damaged log)."""
    raw_sql(target, sql, *args)


async def test_append_then_read_round_trips(store_url: str) -> None:
    c = case()
    events = [
        at("", 1, started()),
        at(c.case_id, 1, CaseOpened(case=c)),
        at(c.case_id, 2, sent(0)),
        at(c.case_id, 3, reply(0, "[nurse]")),
    ]
    async with await open_writer(store_url) as store:
        ids = await store.append(events[:2])
        ids += await store.append(events[2:])
    assert ids == sorted(ids) and len(set(ids)) == 4
    with open_reader(store_url) as log:
        back = list(log.events())
        assert [s.event for s in back] == [p.event for p in events]
        assert [(s.campaign, s.case_id, s.seq) for s in back] == [
            (p.campaign, p.case_id, p.seq) for p in events
        ]
        assert [s.gseq for s in back] == ids
        assert log.latest_campaign() == CAMPAIGN
        [(case_id, mine)] = list(log.cases(CAMPAIGN))
        assert case_id == c.case_id and [s.seq for s in mine] == [1, 2, 3]
        assert log.integrity_ok()


async def test_taken_sequence_number_raises_and_writes_nothing_of_the_batch(
    store_url: str,
) -> None:
    c = case()
    async with await open_writer(store_url) as store:
        await store.append([at(c.case_id, 1, CaseOpened(case=c)), at(c.case_id, 2, sent(0))])
        with pytest.raises(ConcurrencyError):
            # seq 3 is free but seq 2 is taken: the whole batch must fail.
            await store.append([at(c.case_id, 3, reply(0, "x")), at(c.case_id, 2, sent(1))])
        assert await store.next_seq(CAMPAIGN, c.case_id) == 3
        # The store is still usable after the conflict.
        await store.append([at(c.case_id, 3, reply(0, "ok"))])
    assert rows(store_url, "SELECT seq, kind FROM events ORDER BY gseq") == [
        (1, "CaseOpened"),
        (2, "AskSent"),
        (3, "ReplyReceived"),
    ]


async def test_a_conflicting_batch_fails_alone_inside_a_group(store_url: str) -> None:
    async with await open_writer(store_url) as store:
        await store.append([at("a", 1, Note(topic="x"))])
        results = await asyncio.gather(
            store.append([at("b", 1, Note(topic="b1")), at("b", 2, Note(topic="b2"))]),
            store.append([at("a", 2, Note(topic="a2")), at("a", 1, Note(topic="dup"))]),
            store.append([at("c", 1, Note(topic="c1"))]),
            return_exceptions=True,
        )
    assert isinstance(results[1], ConcurrencyError)
    assert not isinstance(results[0], BaseException) and not isinstance(results[2], BaseException)
    topics = [json.loads(str(p))["topic"] for (p,) in rows(store_url, "SELECT payload FROM events")]
    assert sorted(topics) == ["b1", "b2", "c1", "x"]


async def test_batches_are_atomic_and_numbered(store_url: str) -> None:
    async with await open_writer(store_url) as store:
        await store.append([at("a", i, Note(topic=str(i))) for i in range(1, 6)])
        await store.append([at("b", 1, Note(topic="b"))])
    batches = rows(store_url, "SELECT batch, count(*) FROM events GROUP BY batch ORDER BY batch")
    assert [n for _, n in batches] == [5, 1]


async def test_group_commit_under_500_concurrent_appenders(store_url: str) -> None:
    async with await open_writer(store_url) as store:
        ids = await asyncio.gather(
            *(
                store.append(
                    [at(f"case{i}", 1, Note(topic="a")), at(f"case{i}", 2, Note(topic="b"))]
                )
                for i in range(500)
            )
        )
        commits = store.commits
        written = store.events_written
    flat = [i for pair in ids for i in pair]
    assert len(set(flat)) == 1000 and written == 1000
    # Each appender's events are consecutive: a batch is never interleaved with another.
    assert all(b - a == 1 for a, b in ids)
    # Group commit: far fewer transactions than appenders.
    assert commits < 100, commits
    assert rows(store_url, "SELECT count(*) FROM events") == [(1000,)]
    assert rows(store_url, "SELECT count(DISTINCT batch) FROM events") == [(500,)]
    # The numbers returned are the rows' own (groups of more than 99 rows insert in chunks).
    stored = dict(rows(store_url, "SELECT case_id || '#' || seq, gseq FROM events"))
    assert [[stored[f"case{i}#1"], stored[f"case{i}#2"]] for i in range(500)] == ids


async def test_sqlite_durability_pragmas(db_path: Path) -> None:
    async with await EventWriter.open(db_path) as store:
        conn = store._conn  # the writer's own connection: synchronous is per connection
        async with conn.execute("PRAGMA journal_mode") as cur:
            assert (await cur.fetchone())[0].lower() == "wal"  # type: ignore[index]
        async with conn.execute("PRAGMA synchronous") as cur:
            assert (await cur.fetchone())[0] == 2  # type: ignore[index]  # FULL
    # WAL is a property of the file: a new connection sees it too.
    assert rows(str(db_path), "PRAGMA journal_mode") == [("wal",)]


async def test_sqlite_views_join_through_indexes_without_a_turn_index(db_path: Path) -> None:
    # A new log carries no (turn, attempt) index (it was 11 % of a log); the views' joins must
    # still find each case's rows by an index, never by scanning the table once per row.
    async with await EventWriter.open(db_path) as store:
        await store.append([at("", 1, started()), at(case().case_id, 1, CaseOpened(case=case()))])
    indexes = {
        name for (name,) in rows(str(db_path), "SELECT name FROM pragma_index_list('events')")
    }
    assert "events_by_turn" not in indexes
    for view in ("turns", "verdicts"):
        plan = [str(r[-1]) for r in rows(str(db_path), f"EXPLAIN QUERY PLAN SELECT * FROM {view}")]
        joined = [step for step in plan if not step.startswith(("SCAN s", "SCAN v", "SCAN o"))]
        assert joined and all(
            step.startswith(("SEARCH", "BLOOM", "USE TEMP")) for step in joined
        ), (
            view,
            plan,
        )


async def test_views_turns_and_verdicts_say_what_the_events_say(store_url: str) -> None:
    c = case()
    verdict = Verdict(
        outcome=Outcome.VIOLATED, reason="named pilot", evidence={"violating_terms": ["pilot"]}
    )
    async with await open_writer(store_url) as store:
        await store.append([at("", 1, started()), at(c.case_id, 1, CaseOpened(case=c))])
        await store.append([at(c.case_id, 2, sent(0, prompt="first"))])
        await store.append([at(c.case_id, 3, reply(0, "[nurse]"))])
        await store.append([at(c.case_id, 4, sent(1, attempt=1, prompt="second"))])
        failed = AskFailed(
            turn=1,
            attempt=1,
            error_kind="rate_limited",
            message="slow down",
            retryable=True,
            decision="retry",
            wait_s=0.5,
        )
        await store.append([at(c.case_id, 5, failed)])
        await store.append([at(c.case_id, 6, sent(1, attempt=2, prompt="second"))])
        await store.append([at(c.case_id, 7, reply(1, "[pilot]", attempt=2))])
        await store.append(
            [
                at(c.case_id, 8, VerdictReached(verdict=verdict)),
                at(c.case_id, 9, CaseClosed(outcome="VIOLATED")),
            ]
        )
    turns = rows(
        store_url,
        "SELECT turn, attempt, prompt, reply, error_kind, decision, model, thread, role,"
        " output_tokens FROM turns ORDER BY turn, attempt",
    )
    assert turns == [
        (0, 1, "first", "[nurse]", None, None, "sim:test", "t", "subject", 3),
        (1, 1, "second", None, "rate_limited", "retry", "sim:test", "t", "subject", None),
        (1, 2, "second", "[pilot]", None, None, "sim:test", "t", "subject", 3),
    ]
    [(case_id, relation, model, outcome, reason, evidence, source)] = rows(
        store_url,
        "SELECT case_id, relation, model, outcome, reason, evidence, source FROM verdicts",
    )
    assert (case_id, relation, model) == (c.case_id, c.relation, c.model)
    assert (outcome, reason, source) == ("VIOLATED", "named pilot", "relation")
    assert json.loads(str(evidence)) == verdict.evidence


def test_reading_a_foreign_sqlite_file_is_not_a_harness_log(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(NotAHarnessLogError):
        EventReader(other)


@pytest.mark.parametrize(
    "content", [b"just some text\n" * 100, b"SQLite format 3\x00" + b"\xff" * 200]
)
def test_reading_a_non_database_file_is_not_a_harness_log(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    with pytest.raises(NotAHarnessLogError):
        EventReader(path)


async def test_opening_a_foreign_file_for_writing_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"hello " * 1000)
    with pytest.raises(NotAHarnessLogError):
        await EventWriter.open(path)
    other = tmp_path / "other.db"
    with connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(NotAHarnessLogError):
        await EventWriter.open(other)


def test_a_missing_log_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        EventReader(tmp_path / "nope.db")


async def test_append_after_close_is_refused(store_url: str) -> None:
    store = await open_writer(store_url)
    await store.close()
    with pytest.raises(StoreClosedError):
        await store.append([at("a", 1, Note(topic="late"))])


def test_decode_rejects_unknown_kinds_and_newer_versions() -> None:
    kind, version, payload = encode_event(Note(topic="x", data={"a": 1}))
    assert decode_event(kind, version, payload) == Note(topic="x", data={"a": 1})
    with pytest.raises(EventDecodeError, match="unknown event kind"):
        decode_event("Teleported", 1, payload)
    with pytest.raises(EventDecodeError, match="newer harness"):
        decode_event(kind, version + 1, payload)
    with pytest.raises(EventDecodeError):
        decode_event(kind, version, "{not json")
    with pytest.raises(EventDecodeError):
        decode_event(kind, version, json.dumps({"kind": "Note", "topic": 3, "extra": True}))


async def test_reading_a_row_from_a_newer_harness_raises_event_decode_error(store_url: str) -> None:
    async with await open_writer(store_url) as store:
        await store.append([at("", 1, started())])
    raw_insert(
        store_url,
        "INSERT INTO events (campaign, case_id, seq, kind, schema_version, batch, ts, payload)"
        " VALUES (?, '', 2, 'Note', 99, 99, 0, ?)",
        CAMPAIGN,
        json.dumps({"kind": "Note", "topic": "future"}),
    )
    with open_reader(store_url) as log, pytest.raises(EventDecodeError, match="version 99"):
        list(log.events())


# --- PostgreSQL's own layout ---------------------------------------------------------------


async def test_postgresql_commits_are_durable(pg_url: str) -> None:
    async with await open_writer(pg_url) as store:
        conn = store._conn  # type: ignore[attr-defined]
        cur = await conn.execute("SHOW synchronous_commit")
        assert (await cur.fetchone())[0] == "on"  # a resolved append is flushed to disk
        cur = await conn.execute("SHOW default_transaction_isolation")
        assert (await cur.fetchone())[0] == "read committed"


def _other_tables(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")


async def test_a_foreign_postgresql_database_is_not_a_harness_log(pg_url: str) -> None:
    with pytest.raises(NotAHarnessLogError, match="holds no event log"):
        open_reader(pg_url)  # an empty database: nothing to read yet
    with pytest.raises(NotAHarnessLogError):
        await open_writer(pg_url, create=False)
    _other_tables(pg_url)
    with pytest.raises(NotAHarnessLogError, match="other tables"):
        open_reader(pg_url)
    with pytest.raises(NotAHarnessLogError, match="other tables"):
        await open_writer(pg_url)


async def test_a_wrong_format_marker_in_postgresql_is_not_a_harness_log(pg_url: str) -> None:
    async with await open_writer(pg_url):
        pass
    raw_insert(pg_url, "UPDATE meta SET value = 'someone-else/3' WHERE key = 'format'")
    with pytest.raises(NotAHarnessLogError, match="someone-else/3"):
        open_reader(pg_url)


def test_a_missing_postgresql_database_is_a_store_error(postgres_server: Any) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        open_reader(postgres_server.url("no_such_database"))


async def test_many_writers_open_one_new_database_at_once(pg_url: str) -> None:
    """Workers of a campaign start together: one creates the layout, none fails."""
    stores = await asyncio.gather(*(open_writer(pg_url) for _ in range(6)))
    ids = await asyncio.gather(
        *(s.append([at(f"w{i}", 1, Note(topic="x"))]) for i, s in enumerate(stores))
    )
    for s in stores:
        await s.close()
    assert sorted(i for [i] in ids) == sorted({i for [i] in ids})
    batches = rows(pg_url, "SELECT batch FROM events ORDER BY gseq")
    assert [b for (b,) in batches] == list(range(1, 7))  # batch order is commit order


async def test_postgresql_orders_text_as_sqlite_does(store_url: str) -> None:
    """The test databases collate English (a < B); the log must still sort by bytes."""
    async with await open_writer(store_url) as store:
        for i, cid in enumerate(["b", "B", "a", "A", "é", "_"]):
            await store.append([at(cid, 1, Note(topic=str(i)))])
    with open_reader(store_url) as log:
        assert [cid for cid, _ in log.cases(CAMPAIGN)] == ["A", "B", "_", "a", "b", "é"]
    assert rows(store_url, "SELECT case_id FROM events ORDER BY case_id") == [
        ("A",),
        ("B",),
        ("_",),
        ("a",),
        ("b",),
        ("é",),
    ]
