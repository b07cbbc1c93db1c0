"""The log's summaries (closed cases, paid spend up to a gseq) always agree with a full scan
of the events: as the writer moves them, on a log written before them, and when events were
appended after them by a writer that does not move them."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from harness.running.campaign import parse_campaign
from harness.running.runner import campaign_started
from harness.store import _log_summary as log_summary
from harness.store.reader import EventReader
from harness.store.writer import EventWriter, PendingEvent
from harness.vocabulary.events import CaseClosed, ReplyReceived
from harness.vocabulary.model import Reply, Usage

CONFIG = {
    "name": "summary",
    "seed": 1,
    "models": [{"name": "sim:planted"}],
    "relations": [{"name": "metaquerier.mr1", "cases": 5}],
}


def full(db: Path, campaign: str) -> log_summary.Summary:
    with EventReader(db) as log:
        return log_summary.read(log.connection, campaign, recorded=False)


def assert_same(got: log_summary.Summary, want: log_summary.Summary) -> None:
    assert got.case_ids == want.case_ids
    assert got.closed == want.closed
    assert got.usd == pytest.approx(want.usd, rel=1e-12)


def batch(campaign: str, rng: random.Random, seqs: dict[str, int]) -> list[PendingEvent]:
    """A few events of random cases: paid, cached and cost-less replies, some closings."""
    out = []
    for _ in range(rng.randint(1, 9)):
        case_id = f"c{rng.randrange(40)}"
        seqs[case_id] = seqs.get(case_id, 0) + 1
        if rng.random() < 0.15:
            event: object = CaseClosed(outcome="pass")
        else:
            cost = rng.choice([None, 0.0, 0.001, 0.25])
            reply = Reply(text="x", usage=Usage(input_tokens=1, output_tokens=1), cost_usd=cost)
            event = ReplyReceived(turn=0, reply=reply, cached=rng.random() < 0.2)
        out.append(PendingEvent(campaign, case_id, seqs[case_id], event))  # type: ignore[arg-type]
    return out


async def write_log(db: Path, campaign: str, batches: int, seed: int) -> None:
    rng, seqs = random.Random(seed), {}  # type: ignore[var-annotated]
    config = parse_campaign(CONFIG, source="test")
    async with await EventWriter.open(db) as store:
        await store.append([PendingEvent(campaign, "", 1, campaign_started(config, 5))])
        for _ in range(batches):
            await store.append(batch(campaign, rng, seqs))


async def test_the_writer_keeps_a_summary_that_matches_a_full_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_summary, "REFRESH_EVERY", 13)  # many moves, tails of any length
    db = tmp_path / "log.db"
    await write_log(db, "camp", batches=120, seed=5)
    await write_log(db, "other", batches=30, seed=6)  # a second campaign in the same file
    for campaign in ("camp", "other"):
        with EventReader(db) as log:
            got = log.summary(campaign)
            (through,) = log.connection.execute(
                "SELECT through_gseq FROM summary_marks WHERE campaign = ?", (campaign,)
            ).fetchone()
        assert got.found and through > 1
        want = full(db, campaign)
        assert want.usd > 0 and want.closed and want.case_ids - want.closed
        assert_same(got, want)


async def test_a_log_without_summaries_reads_in_full_and_records_one(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    await write_log(db, "camp", batches=60, seed=7)
    with sqlite3.connect(db) as conn:  # as a log written before summaries existed
        conn.execute("DROP TABLE summary_marks")
        conn.execute("DROP TABLE summary_cases")
    with EventReader(db) as log:
        got = log.summary("camp")
    assert not got.found
    assert_same(got, full(db, "camp"))
    async with await EventWriter.open(db, create=False) as store:
        await store.record_summary("camp", got)
    with EventReader(db) as log:
        again = log.summary("camp")
    assert again.found
    assert_same(again, got)


async def test_events_after_the_summary_are_read_from_the_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "log.db"
    await write_log(db, "camp", batches=40, seed=8)
    # Appended by a writer that does not move summaries (older code): the summary lags.
    monkeypatch.setattr(log_summary, "REFRESH_EVERY", 10**9)
    monkeypatch.setattr(log_summary, "advance", lambda conn, top=None: None)
    rng, seqs = random.Random(9), {}  # type: ignore[var-annotated]
    with EventReader(db) as log:
        for case_id, seq in log.connection.execute(
            "SELECT case_id, max(seq) FROM events WHERE case_id != '' GROUP BY case_id"
        ):
            seqs[case_id] = seq
        before = log.summary("camp")
    async with await EventWriter.open(db, create=False) as store:
        for _ in range(25):
            await store.append(batch("camp", rng, seqs))
    with EventReader(db) as log:
        after = log.summary("camp")
    want = full(db, "camp")
    assert after.found and (after.usd, after.closed) != (before.usd, before.closed)
    assert_same(after, want)


async def test_a_resume_of_a_log_without_summaries_records_one(tmp_path: Path) -> None:
    from harness.running.runner import load_resume_point, resume_campaign, run_campaign

    db = tmp_path / "log.db"
    await run_campaign(parse_campaign(CONFIG, source="test"), db)
    with sqlite3.connect(db) as conn:  # as a log written before summaries existed
        conn.execute("DROP TABLE summary_marks")
        conn.execute("DROP TABLE summary_cases")
    conn.close()
    point = load_resume_point(db)
    assert point.summary is not None and not point.summary.found
    await resume_campaign(db, point=point)
    again = load_resume_point(db)
    assert again.summary is not None and again.summary.found
    assert again.closed == point.closed and again.spent_usd == pytest.approx(point.spent_usd)


def summary_tables(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with sqlite3.connect(db) as conn:
        marks = conn.execute("SELECT * FROM summary_marks ORDER BY campaign").fetchall()
        cases = conn.execute("SELECT * FROM summary_cases ORDER BY campaign, case_id").fetchall()
    conn.close()
    return marks, cases


def event_rows(db: Path) -> list[tuple[object, ...]]:
    columns = "gseq, campaign, case_id, seq, kind, schema_version, turn, attempt, batch, payload"
    with sqlite3.connect(db) as conn:
        rows = conn.execute(f"SELECT {columns} FROM events ORDER BY gseq").fetchall()
    conn.close()
    assert {r[6] is None for r in rows} == {True, False}
    return rows


def costless(events: list[PendingEvent]) -> list[PendingEvent]:
    """The batch with every reply's cost removed (as imported replies have none)."""
    out = []
    for p in events:
        if isinstance(p.event, ReplyReceived):
            reply = p.event.reply.model_copy(update={"cost_usd": None})
            p = p._replace(event=p.event.model_copy(update={"reply": reply}))
        out.append(p)
    return out


async def write_mixed(db: Path, *, bulk: bool) -> None:
    """Three campaigns appended one batch a commit: "camp" with paid replies, "free" with
    none, "late" with rows before its CampaignStarted; and a batch that conflicts."""
    from harness.vocabulary.errors import ConcurrencyError

    config = parse_campaign(CONFIG, source="test")
    rng, seqs = random.Random(11), {"camp": {}, "free": {}, "late": {}}  # type: ignore[var-annotated]
    async with await EventWriter.open(db, bulk=bulk) as store:
        for campaign in ("camp", "free"):
            await store.append([PendingEvent(campaign, "", 1, campaign_started(config, 5))])
        for n in range(90):
            campaign = ("camp", "free", "late")[n % 3]
            events = batch(campaign, rng, seqs[campaign])
            await store.append(events if campaign == "camp" else costless(events))
            if n == 30:
                await store.append([PendingEvent("late", "", 1, campaign_started(config, 5))])
            if n == 50:
                with pytest.raises(ConcurrencyError):
                    await store.append([*costless(batch("free", rng, {})), events[0]])


@pytest.mark.parametrize("refresh", [1, 13, 200])
async def test_a_log_built_whole_keeps_the_summaries_a_live_log_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refresh: int
) -> None:
    """A bulk writer moves the summaries from the rows it holds; its tables are the ones a
    writer moving them from the log writes, row for row, and agree with a full scan."""
    monkeypatch.setattr(log_summary, "REFRESH_EVERY", refresh)
    await write_mixed(tmp_path / "live.db", bulk=False)
    await write_mixed(tmp_path / "bulk.db", bulk=True)
    marks, cases = summary_tables(tmp_path / "bulk.db")
    assert (marks, cases) == summary_tables(tmp_path / "live.db")
    assert [m[0] for m in marks] == ["camp", "free", "late"]
    # The events too (`EventWriter._insert_bulk`: rows without a turn bind no None).
    assert event_rows(tmp_path / "bulk.db") == event_rows(tmp_path / "live.db")
    for campaign in ("camp", "free", "late"):
        with EventReader(tmp_path / "bulk.db") as log:
            got = log.summary(campaign)
        assert got.found
        assert_same(got, full(tmp_path / "bulk.db", campaign))


async def test_a_log_built_whole_moves_summaries_without_reading_its_rows_back(
    tmp_path: Path,
) -> None:
    """Replies without a cost (an import's): no summary move reads the events table."""
    config = parse_campaign(CONFIG, source="test")
    rng, seqs = random.Random(12), {}  # type: ignore[var-annotated]
    statements: list[str] = []
    async with await EventWriter.open(tmp_path / "bulk.db", bulk=True) as store:
        await store._conn.set_trace_callback(statements.append)
        await store.append([PendingEvent("c", "", 1, campaign_started(config, 5))])
        for _ in range(3 * log_summary.REFRESH_EVERY // 5):
            await store.append(costless(batch("c", rng, seqs)))
    reads = [s for s in statements if "SELECT" in s and "FROM events" in s and "+campaign" in s]
    assert reads == []
    marks, cases = summary_tables(tmp_path / "bulk.db")
    assert marks[0][1] > 1 and cases
    with EventReader(tmp_path / "bulk.db") as log:
        assert_same(log.summary("c"), full(tmp_path / "bulk.db", "c"))
