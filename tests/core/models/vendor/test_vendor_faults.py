"""The fault suite: a vendor that hangs, trickles, answers with server-sent events, HTML,
an error inside a 200, no choices, a huge reply, a NUL, a lone surrogate or JSON nested past
any parser, through the official SDKs (tests/core/models/vendor/vendor_fakes.py).

Whatever the vendor does, no case is lost, nothing is paid twice (every request the server
saw is one AskSent of the log, and no answered turn is ever sent again), the status and the
exit code tell the truth, and resume completes the campaign. A vendor failure is never a
verdict: a case whose call failed stays open (failed, retryable) until resume answers it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from vendor_campaign import probe_config, run_engine
from vendor_fakes import OVERLOADED, FakeVendor
from vendor_support import ModelMaker, base_url

from harness.cli.exit_codes import ExitCode, campaign_exit_code
from harness.reporting.campaign_status import campaign_status
from harness.running.campaign import CampaignConfig
from harness.running.engine import RunSummary
from harness.running.runner import resume_campaign, run_campaign
from harness.store.reader import EventReader, StoredEvent
from harness.vocabulary.errors import CampaignAbortedError
from harness.vocabulary.events import AskFailed, AskSent, ReplyReceived

CASES = 3  # two turns each
MODEL = {
    "openai": "openai:gpt-4o-mini",
    "anthropic": "anthropic:claude-haiku-4-5",
    "google": "google:gemini-2.0-flash",
}
# Faults whose reply is data: recorded (repaired where it must be) and judged.
DATA_FAULTS = ("huge", "nul", "surrogate")
# Faults that fail the call: transient, so the turn stays open and resume sends it again.
FAILING_FAULTS = (
    "hang",
    "trickle",
    "500",
    "malformed",
    "sse",
    "html",
    "200-error",
    "empty",
    "deep",
)


def _config(
    scheme: str, vendor: FakeVendor, cases: int = CASES, **limits: object
) -> CampaignConfig:
    model = {
        "name": MODEL[scheme],
        "max_in_flight": 1,  # one call at a time: which request meets the fault is known
        "options": {"base_url": base_url(scheme, vendor)},
    }
    limits = {"max_attempts": 1, "call_timeout_s": 0.5, "outage_pause_s": 0.05, **limits}
    return probe_config([model], cases=cases, **limits)


def _events(db: Path) -> list[StoredEvent]:
    with EventReader(db) as log:
        return list(log.events())


def _assert_paid_once(db: Path, vendor: FakeVendor, cases: int = CASES) -> list[StoredEvent]:
    """Every request the server saw is one AskSent; no turn with a reply is sent again."""
    events = _events(db)
    sent = [e for e in events if isinstance(e.event, AskSent)]
    assert len(sent) == len(vendor.requests)
    answered: set[tuple[str, int]] = set()
    for stored in events:
        ev = stored.event
        key = (stored.case_id, getattr(ev, "turn", -1))
        if isinstance(ev, AskSent):
            assert key not in answered, f"turn {key} sent again after its reply"
        elif isinstance(ev, ReplyReceived):
            assert key not in answered, f"turn {key} answered twice"
            answered.add(key)
    assert len(answered) == cases * 2
    return events


def _finish(summary: RunSummary) -> ExitCode:
    return campaign_exit_code(summary, None)


@pytest.mark.parametrize("scheme", sorted(MODEL))
@pytest.mark.parametrize("fault", FAILING_FAULTS)
async def test_a_failing_reply_leaves_cases_open_and_resume_completes(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str], scheme: str, fault: str
) -> None:
    vendor.trickle_s = 0.02
    db = tmp_path / "faults.db"
    vendor.queue(fault, fault)  # the first two calls; one attempt each
    first = await run_campaign(_config(scheme, vendor), db)
    # Not a verdict: two cases failed, retryable; nothing was closed INVALID.
    assert first.retryable == 2 and first.cases_closed == CASES - 2
    assert "INVALID" not in first.outcomes
    assert _finish(first) == ExitCode.UNFINISHED
    with EventReader(db) as log:
        status = campaign_status(log)
    assert status.status == "unfinished" and status.retryable == 2, status
    failed = [e.event for e in _events(db) if isinstance(e.event, AskFailed)]
    assert [f.decision for f in failed] == ["suspend", "suspend"]
    if fault == "200-error":  # the vendor's own words are kept
        assert all(OVERLOADED in f.message and "200" in f.message for f in failed), failed
    second = await resume_campaign(db)
    assert second.retryable == 0 and second.cases_closed == 2
    assert _finish(second) == ExitCode.COMPLETED
    assert second.outcomes == Counter({"HELD": 2})
    _assert_paid_once(db, vendor)
    with EventReader(db) as log:
        assert campaign_status(log).status == "completed"


@pytest.mark.parametrize("scheme", sorted(MODEL))
@pytest.mark.parametrize("fault", DATA_FAULTS)
async def test_a_hostile_reply_is_recorded_once_as_data(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str], scheme: str, fault: str
) -> None:
    vendor.huge_chars = 300_000
    db = tmp_path / "data.db"
    vendor.queue(fault, fault)
    summary = await run_campaign(_config(scheme, vendor), db)
    assert summary.cases_closed == CASES and summary.outcomes == Counter({"HELD": CASES})
    assert _finish(summary) == ExitCode.COMPLETED
    events = _assert_paid_once(db, vendor)
    replies = [e.event.reply for e in events if isinstance(e.event, ReplyReceived)]
    odd = replies[:2]
    if fault == "surrogate":
        # Replaced in the text, kept escaped in the event: the vendor's exact string.
        assert all("\ufffd" in r.text and r.raw_escaped for r in odd)
        raw = odd[0].raw_escaped
        assert raw is not None and "\ud800" in raw.encode("ascii").decode("unicode_escape")
    elif fault == "nul":
        assert all("\x00" in r.text and r.raw_escaped is None for r in odd)
    else:
        assert all(len(r.text) > 300_000 for r in odd)
    # A resume of the finished campaign sends nothing.
    again = await resume_campaign(db)
    assert again.calls == 0 and _finish(again) == ExitCode.COMPLETED
    assert len(vendor.requests) == CASES * 2


@pytest.mark.parametrize("fault", ["500", "hang", "200-error"])
async def test_an_outage_pauses_then_aborts_naming_model_url_and_error(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str], fault: str
) -> None:
    vendor.chooser = lambda n: fault  # the vendor never answers
    db = tmp_path / "outage.db"
    cases = 14
    config = _config("openai", vendor, cases, call_timeout_s=0.2, outage_pauses=2)
    with pytest.raises(CampaignAbortedError) as caught:
        await run_campaign(config, db)
    message = str(caught.value)
    assert MODEL["openai"] in message and "outage" in message
    assert base_url("openai", vendor) in message  # the URL, its shape and the last error
    assert "/v1" in message and "harness resume" in message
    assert {"500": "HTTP 500", "hang": "no reply within", "200-error": OVERLOADED}[fault] in message
    # Paused twice, then aborted: 4 failures a pause, then the 4 that abort; no case closed.
    assert len(vendor.requests) == 4 * 3
    with EventReader(db) as log:
        status = campaign_status(log)
    assert status.status == "aborted" and status.closed == 0
    # The vendor is back: resume answers every case, nothing recorded is sent again.
    vendor.chooser = None
    summary = await resume_campaign(db)
    assert summary.cases_closed == cases and summary.outcomes == Counter({"HELD": cases})
    assert _finish(summary) == ExitCode.COMPLETED
    _assert_paid_once(db, vendor, cases)


async def test_a_short_burst_is_ridden_out_by_pausing(
    tmp_path: Path, vendor: FakeVendor, make_model: ModelMaker
) -> None:
    # Six 500s in a row: a pause after four, then the vendor answers; every case closes,
    # none INVALID, and the run completes (exit 0) without resume.
    vendor.queue(*["500"] * 6)
    db = tmp_path / "burst.db"
    config = _config("openai", vendor, max_attempts=8)
    model = make_model("openai", max_in_flight=1)
    summary = await run_engine(config, db, {model.name: model}, {})
    assert summary.cases_closed == CASES and summary.outcomes == Counter({"HELD": CASES})
    assert summary.retryable == 0 and _finish(summary) == ExitCode.COMPLETED
    failed = [e.event for e in _events(db) if isinstance(e.event, AskFailed)]
    assert [f.decision for f in failed] == ["retry"] * 6
    _assert_paid_once(db, vendor)


def test_a_vendor_that_never_answers_exits_3_and_resume_then_completes(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    import vendor_campaign  # noqa: F401  (registers the probe relation)
    from click.testing import CliRunner

    from harness.cli import main

    campaign = tmp_path / "outage.toml"
    db = tmp_path / "outage.db"
    campaign.write_text(
        f"""
name = "outage"
[[models]]
name = "openai:gpt-4o-mini"
max_in_flight = 2
options = {{ base_url = "{base_url("openai", vendor)}" }}
[[relations]]
name = "test-vendor-probe"
cases = 10
[limits]
max_attempts = 2
call_timeout_s = 1
outage_pause_s = 0.05
outage_pauses = 1
"""
    )
    vendor.chooser = lambda n: "503"
    runner = CliRunner()
    first = runner.invoke(main, ["run", str(campaign), "--db", str(db), "--no-report"])
    assert first.exit_code == ExitCode.ABORTED, first.output
    assert "outage" in first.output and "openai:gpt-4o-mini" in first.output
    vendor.chooser = None
    second = runner.invoke(main, ["resume", str(db), "--no-report"])
    assert second.exit_code == ExitCode.COMPLETED, second.output
    listed = runner.invoke(main, ["campaigns", str(db)])
    assert "completed" in listed.output, listed.output


@pytest.mark.parametrize("scheme", sorted(MODEL))
async def test_a_reply_that_cannot_be_recorded_is_no_verdict(
    tmp_path: Path,
    vendor: FakeVendor,
    canary_keys: dict[str, str],
    scheme: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The vendor's lone surrogate with every repair switched off (a backend that lets
    # unencodable text through): the reply cannot be recorded. Before, that closed the
    # case INVALID (a vendor/encoding failure as a verdict); now it stays open, failed,
    # retryable, and the status and exit code say so; resume completes it.
    import harness.models.providers._base as providers_base
    import harness.running.calls as calls_module

    repairs = calls_module.recordable_reply, providers_base.recordable_reply
    monkeypatch.setattr(calls_module, "recordable_reply", lambda reply: reply)
    monkeypatch.setattr(providers_base, "recordable_reply", lambda reply: reply)
    db = tmp_path / "unrecordable.db"
    vendor.queue("surrogate", "surrogate")
    first = await run_campaign(_config(scheme, vendor), db)
    assert first.retryable == 2 and first.cases_closed == CASES - 2, first
    assert "INVALID" not in first.outcomes
    assert _finish(first) == ExitCode.UNFINISHED
    with EventReader(db) as log:
        status = campaign_status(log)
    assert status.status == "unfinished" and status.retryable == 2, status
    failed = [e.event for e in _events(db) if isinstance(e.event, AskFailed)]
    assert [(f.error_kind, f.decision) for f in failed] == [("unrecordable_reply", "suspend")] * 2
    assert all("cannot be recorded" in f.message for f in failed)
    monkeypatch.setattr(calls_module, "recordable_reply", repairs[0])  # the backend fixed
    monkeypatch.setattr(providers_base, "recordable_reply", repairs[1])
    second = await resume_campaign(db)
    assert second.retryable == 0 and second.cases_closed == 2
    assert _finish(second) == ExitCode.COMPLETED and second.outcomes == Counter({"HELD": 2})
    # The two unrecorded replies were sent once more (nothing of them was kept); no turn
    # with a recorded reply was.
    _assert_paid_once(db, vendor)
