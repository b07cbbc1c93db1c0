"""Schema evolution: events carry a schema version; old versions are upcast on read; the
committed fixture log of schema v1 must keep loading in every later version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.conversation_export import conversations
from harness.running.runner import load_resume_point
from harness.store.fold import fold_case
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.vocabulary import events as events_module
from harness.vocabulary.errors import EventDecodeError
from harness.vocabulary.events import EVENT_TYPES, Note, ReplyReceived, decode_event, encode_event
from harness.vocabulary.model import Reply

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "events_v1.db"


def test_fixture_log_of_schema_v1_still_loads(tmp_path: Path) -> None:
    assert FIXTURE.exists(), "tests/fixtures/events_v1.db is committed with the repository"
    with EventReader(FIXTURE) as log:
        versions = dict(
            log.connection.execute("SELECT kind, max(schema_version) FROM events GROUP BY kind")
        )
        decoded = list(log.events())
        campaign = log.latest_campaign()
        states = [fold_case(evs) for _, evs in log.cases(campaign)]
        tables = {t.name for t in build_report(log)}
    kinds = {e.event.kind for e in decoded}
    print(
        f"fixture v1: {len(decoded)} events of {len(kinds)} kinds decoded, {len(states)} cases "
        f"folded, report tables {sorted(tables)}"
    )
    # Every event kind but those added after the fixture was written.
    assert kinds == set(EVENT_TYPES) - {"JudgeCalibrated", "StoppingLook"}, (
        "the fixture holds every kind"
    )
    assert set(versions.values()) == {1}
    assert all(s.closed and s.verdict is not None for s in states)
    assert {"violation_rates", "judges"} <= tables
    assert len(list(conversations(FIXTURE))) == len(states)
    # An old log can be appended to and resumed by today's harness.
    copy = tmp_path / "copy.db"
    shutil.copy(FIXTURE, copy)
    point = load_resume_point(copy)
    assert point.open_cases == {} and len(point.closed) == len(states)


def _raw_row(db: Path, kind: str, version: int, payload: str) -> None:
    conn = connect(db)
    conn.execute(
        "INSERT INTO events (campaign, case_id, seq, kind, schema_version, batch, ts, payload)"
        " VALUES ('old', '', 1, ?, ?, 1, 0, ?)",
        (kind, version, payload),
    )
    conn.commit()
    conn.close()


def test_synthetic_v1_to_v2_upcast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend today's ReplyReceived is v3, and v2 stored the reply text at the top level
    # (v1 -> v2 only added a field: its upcaster is the identity).
    monkeypatch.setattr(ReplyReceived, "SCHEMA_VERSION", 3)

    def v2_to_v3(data: dict[str, object]) -> dict[str, object]:
        data = dict(data)
        data["reply"] = {"text": data.pop("text")}
        return data

    monkeypatch.setitem(events_module._UPCASTERS, ("ReplyReceived", 2), v2_to_v3)
    old = json.dumps({"kind": "ReplyReceived", "turn": 3, "text": "[nurse]"})
    event = decode_event("ReplyReceived", 2, old)
    assert isinstance(event, ReplyReceived)
    assert event.reply == Reply(text="[nurse]") and event.turn == 3
    kind, version, payload = encode_event(ReplyReceived(turn=1, reply=Reply(text="x")))
    assert version == 3  # new rows carry the new version and are read without upcasting
    assert decode_event(kind, version, payload) == ReplyReceived(turn=1, reply=Reply(text="x"))
    # Through a real log file, as every reader sees it.
    db = tmp_path / "old.db"
    shutil.copy(FIXTURE, db)
    _raw_row(db, "ReplyReceived", 2, old)
    with EventReader(db) as log:
        upcast = [e.event for e in log.events("old")]
    assert upcast == [event]
    # An old payload the upcaster cannot read, a missing upcaster, a newer version: typed errors.
    with pytest.raises(EventDecodeError, match="cannot be upcast"):
        decode_event("ReplyReceived", 2, json.dumps({"kind": "ReplyReceived", "turn": 1}))
    monkeypatch.setattr(Note, "SCHEMA_VERSION", 2)
    with pytest.raises(EventDecodeError, match="no upcaster"):
        decode_event("Note", 1, json.dumps({"kind": "Note", "topic": "t"}))
    with pytest.raises(EventDecodeError, match="upgrade"):
        decode_event("ReplyReceived", 4, old)
    print("synthetic upcast v1 -> v2: decoded through the log; 3 bad cases raised EventDecodeError")


FIXTURE_V2 = FIXTURE.with_name("events_v2.db")


def test_fixture_log_of_schema_v2_loads_resumes_and_verifies(tmp_path: Path) -> None:
    # ReplyReceived v2 (a repaired reply, its original escaped) and AskFailed v2 (a turn
    # suspended by an outage, then answered by resume): tests/fixtures/make_fixture_log_v2.py.
    from harness.verifying.replay import verify_log
    from harness.vocabulary.events import AskFailed

    assert FIXTURE_V2.exists(), "tests/fixtures/events_v2.db is committed with the repository"
    with EventReader(FIXTURE_V2) as log:
        decoded = list(log.events())
        states = [fold_case(evs) for _, evs in log.cases(log.latest_campaign())]
    raws = [
        e.event.reply.raw_escaped
        for e in decoded
        if isinstance(e.event, ReplyReceived) and e.event.reply.raw_escaped
    ]
    assert raws and all("\ud800" in r.encode("ascii").decode("unicode_escape") for r in raws)
    assert [e.event.decision for e in decoded if isinstance(e.event, AskFailed)] == [
        "retry",
        "suspend",
    ]
    assert all(s.closed for s in states)
    result = verify_log(FIXTURE_V2)
    assert result.cases == 4 and not result.differences, result.differences
    copy = tmp_path / "copy.db"
    shutil.copy(FIXTURE_V2, copy)
    assert load_resume_point(copy).open_cases == {}


FIXTURE_V3 = FIXTURE.with_name("events_v3.db")


def test_campaign_finished_v1_reads_unchanged_and_v2_records_unfinished(tmp_path: Path) -> None:
    # CampaignFinished v2 adds the status "unfinished" (a run that ended with cases left
    # failed, retryable): a v1 row ("completed", even with such cases) is read byte for byte
    # as it was, and the v2 fixture (tests/fixtures/make_fixture_log_v3.py) loads, resumes
    # and verifies.
    from harness.reporting.campaign_status import campaign_status
    from harness.verifying.replay import verify_log
    from harness.vocabulary.events import CampaignFinished, reads_as_current

    assert reads_as_current("CampaignFinished", 1)
    v1 = '{"kind":"CampaignFinished","status":"completed","reason":"","cases_closed":3}'
    event = decode_event("CampaignFinished", 1, v1)
    assert isinstance(event, CampaignFinished) and event.status == "completed"
    assert encode_event(event) == ("CampaignFinished", 2, v1)  # the same bytes, as v2
    with EventReader(FIXTURE_V2) as log:  # a v1 "completed" after a run that left one open
        ends = [e.event for e in log.events(kinds=("CampaignFinished",))]
        assert [(e.status, e.cases_closed) for e in ends] == [("completed", 3), ("completed", 1)]
        assert campaign_status(log).status == "completed"
    assert FIXTURE_V3.exists(), "tests/fixtures/events_v3.db is committed with the repository"
    with EventReader(FIXTURE_V3) as log:
        rows = log.connection.execute(
            "SELECT schema_version, json_extract(payload, '$.status') FROM events"
            " WHERE kind = 'CampaignFinished' ORDER BY seq"
        ).fetchall()
        ends = [e.event for e in log.events(kinds=("CampaignFinished",))]
        assert campaign_status(log).status == "completed"
    assert rows == [(2, "unfinished"), (2, "completed")]
    assert [e.status for e in ends] == ["unfinished", "completed"]
    assert "1 cases failed, retryable" in ends[0].reason
    result = verify_log(FIXTURE_V3)
    assert result.cases == 3 and not result.differences, result.differences
    copy = tmp_path / "copy.db"
    shutil.copy(FIXTURE_V3, copy)
    assert load_resume_point(copy).open_cases == {}
    # A log cut after the first run reads as unfinished from its own record.
    with connect(copy) as conn:
        conn.execute("DELETE FROM events WHERE case_id = '' AND seq > 2")
    conn.close()
    with EventReader(copy) as log:
        status = campaign_status(log)
    assert status.status == "unfinished" and "retryable" in status.reason, status
