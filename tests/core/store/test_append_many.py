"""`EventWriter.append_many` (events already encoded, as a bulk importer hands them over)
stores exactly the rows, and reads back exactly the events, that `append` stores for the same
events in the same batches, on both log formats; and refuses a taken position like `append`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.store.writer import EventWriter, PendingEvent, encoded_event
from harness.vocabulary.errors import ConcurrencyError
from harness.vocabulary.events import AskFailed, CaseClosed, Event, Note, ReplyReceived
from harness.vocabulary.model import Reply

# Texts of every length format 2 treats apart: short ones kept in the shape, long ones
# stored once as texts, identifiers and numbers cut out inline; repeated across events.
_TEXT = st.one_of(
    st.text(st.sampled_from('ab "\\\né\x00'), max_size=40),
    st.text(max_size=90),
    st.sampled_from(["No.", "biaslens.answer/m/role/age/r1/00017", "0123456789abcdef" * 3]),
)
_EVENT = st.one_of(
    st.builds(
        ReplyReceived,
        turn=st.integers(0, 3),
        attempt=st.integers(1, 3),
        reply=st.builds(Reply, text=_TEXT),
    ),
    st.builds(
        AskFailed,
        turn=st.integers(0, 3),
        attempt=st.integers(1, 3),
        error_kind=st.sampled_from(["timeout", "rate_limit"]),
        message=_TEXT,
        retryable=st.booleans(),
    ),
    st.builds(CaseClosed, outcome=st.sampled_from(["HELD", "VIOLATED", "INVALID"])),
    st.builds(
        Note,
        topic=st.sampled_from(["import", "file"]),
        data=st.dictionaries(
            st.sampled_from(["text", "question_id", "seed", "n"]),
            _TEXT | st.integers(-(10**12), 10**12),
            max_size=3,
        ),
    ),
)
# Batches of events of a few cases (the case id "" for campaign-level events).
_BATCHES = st.lists(
    st.lists(st.tuples(st.sampled_from(["", "c/1", "c/2@m"]), _EVENT), min_size=1, max_size=6),
    min_size=1,
    max_size=4,
)


def _numbered(batches: list[list[tuple[str, Event]]]) -> list[list[PendingEvent]]:
    seqs: dict[str, int] = {}
    out = []
    for batch in batches:
        pending = []
        for case_id, event in batch:
            seqs[case_id] = seqs.get(case_id, 0) + 1
            pending.append(PendingEvent("camp", case_id, seqs[case_id], event))
        out.append(pending)
    return out


async def _write(db: Path, batches: list[list[PendingEvent]], *, many: bool, compact: bool) -> None:
    async with await EventWriter.open(db, compact=compact) as store:
        for batch in batches:
            if many:
                await store.append_many([encoded_event(p) for p in batch])
            else:
                await store.append(batch)


def _rows(db: Path) -> list[tuple[Any, ...]]:
    with connect(db) as conn:
        return conn.execute(
            "SELECT gseq, campaign, case_id, seq, kind, schema_version, turn, attempt, batch,"
            " payload FROM events ORDER BY gseq"
        ).fetchall()


def _events(db: Path) -> list[tuple[Any, ...]]:
    with EventReader(db) as log:
        return [(e.gseq, e.case_id, e.seq, e.event) for e in log.events("camp")]


@pytest.mark.parametrize("compact", [False, True], ids=["format1", "format2"])
@settings(
    deadline=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=_BATCHES)
def test_append_many_stores_what_append_stores(
    tmp_path: Path, compact: bool, batches: list[list[tuple[str, Event]]]
) -> None:
    pending = _numbered(batches)
    folder = tmp_path / f"{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    one, many = folder / "append.db", folder / "append_many.db"
    asyncio.run(_write(one, pending, many=False, compact=compact))
    asyncio.run(_write(many, pending, many=True, compact=compact))
    assert _rows(many) == _rows(one)
    assert _events(many) == _events(one)


@pytest.mark.parametrize("compact", [False, True], ids=["format1", "format2"])
def test_append_many_refuses_a_taken_position_and_writes_none_of_its_batch(
    tmp_path: Path, compact: bool
) -> None:
    db = tmp_path / "log.db"
    first = PendingEvent("camp", "c/1", 1, CaseClosed(outcome="HELD"))
    clash = [
        encoded_event(PendingEvent("camp", "c/2", 1, CaseClosed(outcome="HELD"))),
        encoded_event(first),
    ]

    async def main() -> None:
        async with await EventWriter.open(db, compact=compact) as store:
            assert await store.append_many([encoded_event(first)]) == [1]
            with pytest.raises(ConcurrencyError):
                await store.append_many(clash)
            assert await store.append_many([]) == []

    asyncio.run(main())
    assert [row[2] for row in _rows(db)] == ["c/1"]
