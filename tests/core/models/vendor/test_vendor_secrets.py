"""A recognisable fake key must not appear in the log file, any report, or any log output."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner
from vendor_fakes import FakeVendor
from vendor_support import base_url

from harness.models.providers._errors import from_status
from harness.vocabulary.errors import AuthenticationError, redact

CANARY_KEY = "sk-test-CANARY-5e1f0c2b9d7a4e61"
TOML = """
name = "secrets"
[[models]]
name = "openai:gpt-4o-mini"
max_in_flight = 4
options = {{ base_url = "{url}", rpm = 6000 }}
[[relations]]
name = "test-vendor-probe"
cases = {cases}
[limits]
max_attempts = 2
"""


def _chooser(n: int) -> str:
    return ("ok", "ok", "500", "ok", "429-ms", "ok", "malformed", "400")[n % 8]


@pytest.mark.slow
def test_canary_key_never_reaches_log_reports_or_output(
    tmp_path: Path,
    vendor: FakeVendor,
    canary_keys: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import vendor_campaign  # noqa: F401  (registers the probe relation)

    from harness.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
    monkeypatch.setenv("OPENAI_LOG", "debug")  # the SDK's own request logging, at its loudest
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx2", "httpcore2", "harness"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    vendor.retry_after_ms = 10
    vendor.chooser = _chooser
    campaign = tmp_path / "secrets.toml"
    db = tmp_path / "secrets.db"
    campaign.write_text(TOML.format(url=base_url("openai", vendor), cases=40))
    runner = CliRunner()
    outputs = []

    first = runner.invoke(main, ["run", str(campaign), "--db", str(db), "--report"])
    outputs.append(first.output)
    # Its 500s and malformed bodies may outlast max_attempts: those cases stay open (failed,
    # retryable, exit 5), never INVALID; the run itself must go through.
    assert first.exit_code == 0 or (first.exit_code == 5 and "failed, retryable" in first.output), (
        first.output
    )
    # A second campaign in the same log meets a 401 whose body echoes the key.
    vendor.chooser = lambda n: "401"
    second = runner.invoke(main, ["run", str(campaign), "--db", str(db), "--new-campaign"])
    outputs.append(second.output)
    assert second.exit_code != 0
    assert any(r.fault == "401" for r in vendor.requests)
    assert any(CANARY_KEY in r.headers.get("authorization", "") for r in vendor.requests), (
        "the canary was never presented, so this test would prove nothing"
    )

    for args in (
        ["report", str(db)],
        ["report", str(db), "--format", "json"],
        ["report", str(db), "--format", "csv"],
        ["replay", str(db)],
    ):
        result = runner.invoke(main, args)
        outputs.append(result.output)
        assert result.exit_code in (0, 1), (args, result.output)
    events = runner.invoke(main, ["show", str(db), "1"])
    outputs.append(events.output)

    assert caplog.records, "no log output was captured"
    assert any(r.name.startswith("openai") for r in caplog.records), "SDK logging not captured"
    logs = "\n".join(r.getMessage() for r in caplog.records)
    named = [("log output", logs), *((f"cli output {i}", o) for i, o in enumerate(outputs))]
    for name, text in named:
        assert CANARY_KEY not in text, f"key found in {name}"
    for path in tmp_path.iterdir():
        if path.is_file():
            assert CANARY_KEY.encode() not in path.read_bytes(), f"key found in {path.name}"
        assert b"CANARY-5e1f" not in path.read_bytes() if path.is_file() else True


def test_error_messages_are_redacted_even_for_unusual_key_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A key in a variable whose name does not look secret is still removed, because the
    # adapter passes its own key to the redaction.
    monkeypatch.setenv("TEAM_CRED", "opaque0123456789value")
    err = from_status(
        401, "bad credential opaque0123456789value", secrets=["opaque0123456789value"]
    )
    assert isinstance(err, AuthenticationError)
    assert "opaque0123456789value" not in str(err)
    assert "sk-live-" not in redact("key sk-live-0123456789abcdef was rejected")
