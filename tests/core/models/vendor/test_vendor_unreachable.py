"""A model that cannot be reached (dead port, 404 on every call) aborts the campaign with
one message naming the model, the effective base URL without credentials, and the URL
shape its SDK expects; the effective base URL is recorded in the log even when it came
from an environment variable. Real SDKs against a dead port and the fake vendor."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from vendor_campaign import probe_config
from vendor_fakes import FakeVendor
from vendor_support import base_url

from harness.models.providers import campaign_endpoints, estimate_cost, format_estimate
from harness.running.plan import Plan
from harness.running.reachability import DEFAULT_THRESHOLD
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.vocabulary.errors import CampaignAbortedError
from harness.vocabulary.events import AskSent, CampaignFinished, CampaignStarted

URL_SECRET = "hunter2-CANARY-in-url"


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _log_text(db: Path) -> str:

    conn = connect(db)
    try:
        return "\n".join(str(row) for row in conn.execute("SELECT * FROM events"))
    finally:
        conn.close()


async def _aborted(db: Path, models: list[dict[str, object]], cases: int = 40) -> str:
    config = probe_config(models, cases=cases, max_attempts=3)
    with pytest.raises(CampaignAbortedError) as caught:
        await run_campaign(config, db)
    with EventReader(db) as log:
        finished = [e.event for e in log.events(kinds=("CampaignFinished",))]
        sent = list(log.events(kinds=("AskSent",)))
    assert isinstance(finished[-1], CampaignFinished) and finished[-1].status == "aborted"
    # It stopped after a few failures instead of closing 40 cases as INVALID.
    in_flight = max(int(m.get("max_in_flight", 8)) for m in models)  # type: ignore[call-overload]
    assert len(sent) <= DEFAULT_THRESHOLD + in_flight
    assert all(isinstance(s.event, AskSent) for s in sent)
    return str(caught.value)


async def test_dead_port_aborts_with_the_url_and_its_expected_shape(
    tmp_path: Path, canary_keys: dict[str, str]
) -> None:
    port = _dead_port()
    url = f"http://user:{URL_SECRET}@127.0.0.1:{port}/v1"
    db = tmp_path / "dead.db"
    message = await _aborted(
        db, [{"name": "openai:gpt-4o-mini", "max_in_flight": 4, "options": {"base_url": url}}]
    )
    assert "openai:gpt-4o-mini" in message
    assert f"http://127.0.0.1:{port}/v1" in message
    assert "/v1" in message and "options.base_url" in message
    assert URL_SECRET not in message
    # The credential in the URL reached neither the recorded config nor any event.
    assert URL_SECRET not in _log_text(db)
    with EventReader(db) as log:
        started = next(e.event for e in log.events(kinds=("CampaignStarted",)))
    assert isinstance(started, CampaignStarted)
    assert started.endpoints == {
        "openai:gpt-4o-mini": {
            "url": f"http://127.0.0.1:{port}/v1",
            "source": "options.base_url",
        }
    }


async def test_404_on_every_call_aborts_naming_the_bare_host_shape(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    vendor.chooser = lambda n: "404"  # model not found, on every call
    message = await _aborted(
        tmp_path / "404.db",
        [
            {
                "name": "anthropic:claude-haiku-4-5",
                "max_in_flight": 4,
                "options": {"base_url": base_url("anthropic", vendor)},
            }
        ],
    )
    assert "anthropic:claude-haiku-4-5" in message and vendor.url in message
    assert "bare host" in message
    assert len(vendor.requests) <= DEFAULT_THRESHOLD + 4


async def test_gemini_key_in_the_url_never_reaches_log_or_error(
    tmp_path: Path, canary_keys: dict[str, str]
) -> None:
    port = _dead_port()
    db = tmp_path / "gemini.db"
    url = f"http://127.0.0.1:{port}/?key={URL_SECRET}"
    message = await _aborted(
        db, [{"name": "google:gemini-2.0-flash", "max_in_flight": 2, "options": {"base_url": url}}]
    )
    assert "google:gemini-2.0-flash" in message and f"127.0.0.1:{port}" in message
    assert URL_SECRET not in message and URL_SECRET not in _log_text(db)
    assert canary_keys["GEMINI_API_KEY"] not in message


async def test_base_url_from_the_environment_is_recorded_and_printed(
    tmp_path: Path,
    vendor: FakeVendor,
    canary_keys: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", base_url("openai", vendor))
    config = probe_config([{"name": "openai:gpt-4o-mini", "max_in_flight": 2}], cases=2)
    expected = {"url": base_url("openai", vendor), "source": "OPENAI_BASE_URL"}
    assert campaign_endpoints(config) == {"openai:gpt-4o-mini": expected}
    shown = format_estimate(estimate_cost(config, Plan(config)))
    assert f"openai:gpt-4o-mini -> {vendor.url}/v1 (from OPENAI_BASE_URL)" in shown
    db = tmp_path / "env.db"
    summary = await run_campaign(config, db)
    assert summary.status == "completed" and len(vendor.requests) == 4  # the env URL was used
    with EventReader(db) as log:
        started = next(e.event for e in log.events(kinds=("CampaignStarted",)))
    assert isinstance(started, CampaignStarted)
    assert started.endpoints == {"openai:gpt-4o-mini": expected}


def test_every_sdk_default_and_a_missing_compat_url_are_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.models.providers import endpoint_for
    from harness.vocabulary.model import ModelSpec

    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    shown = {
        scheme: endpoint_for(ModelSpec(name=f"{scheme}:m")).shown
        for scheme in ("openai", "anthropic", "google")
    }
    assert shown == {
        "openai": "https://api.openai.com/v1",
        "anthropic": "https://api.anthropic.com",
        "google": "https://generativelanguage.googleapis.com/",
    }
    compat = endpoint_for(ModelSpec(name="openai-compat:m"))
    assert compat.url == "" and "options.base_url" in compat.source
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://u:p4ss@proxy:8080")
    via_env = endpoint_for(ModelSpec(name="anthropic:m"))
    assert (via_env.shown, via_env.source) == ("http://proxy:8080", "ANTHROPIC_BASE_URL")


def test_after_a_wrong_base_url_the_printed_fix_resumes_the_campaign(
    tmp_path: Path,
    vendor: FakeVendor,
    canary_keys: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: `run` refused the log and `resume` re-used the URL stored in it; only a new
    # campaign escaped, and nothing said so. Now the abort prints a resume command with
    # --base-url, that command finishes the campaign, and the change is recorded and kept.
    import shlex

    import vendor_campaign  # noqa: F401  (registers the probe relation)
    from click.testing import CliRunner

    from harness.cli import main
    from harness.running.runner import load_resume_point
    from harness.vocabulary.events import CampaignResumed

    port = _dead_port()
    campaign = tmp_path / "wrong.toml"
    db = tmp_path / "wrong.db"
    campaign.write_text(
        f"""
name = "wrong-url"
[[models]]
name = "openai:gpt-4o-mini"
max_in_flight = 2
options = {{ base_url = "http://127.0.0.1:{port}/v1" }}
[[relations]]
name = "test-vendor-probe"
cases = 6
[limits]
max_attempts = 2
"""
    )
    runner = CliRunner()
    first = runner.invoke(main, ["run", str(campaign), "--db", str(db), "--no-report"])
    assert first.exit_code == 3, first.output
    fix = f"harness resume {db} --base-url 'openai:gpt-4o-mini=URL'"
    assert fix in first.output, first.output
    good = base_url("openai", vendor)
    command = shlex.split(fix.replace("=URL", f"={good}"))
    # The key variable can change the same way (recorded and kept as well).
    alt_key = "sk-test-ALT-key-0123456789"
    monkeypatch.setenv("ALT_OPENAI_KEY", alt_key)
    key_env = ["--api-key-env", "openai:gpt-4o-mini=ALT_OPENAI_KEY"]
    second = runner.invoke(main, [*command[1:], *key_env, "--no-report"])
    assert second.exit_code == 0, second.output
    assert len(vendor.requests) == 12  # every case, each turn once
    assert all(r.headers["authorization"] == f"Bearer {alt_key}" for r in vendor.requests)
    with EventReader(db) as log:
        resumed = [e.event for e in log.events(kinds=("CampaignResumed",))]
    assert isinstance(resumed[-1], CampaignResumed)
    key = "models[openai:gpt-4o-mini].options.base_url"
    assert resumed[-1].config_overrides == {
        key: good,
        "models[openai:gpt-4o-mini].options.api_key_env": "ALT_OPENAI_KEY",
    }
    assert resumed[-1].endpoints["openai:gpt-4o-mini"]["url"] == good
    # Later resumes keep the fixed URL (the recorded campaign still holds the wrong one).
    point = load_resume_point(db)
    assert point.config.models[0].options["base_url"] == good
    assert point.config.models[0].options["api_key_env"] == "ALT_OPENAI_KEY"
    # A name that is not a model of the campaign is a usage error naming the models.
    bad = runner.invoke(main, ["resume", str(db), "--base-url", f"openai:gpt-4=={good}"])
    assert bad.exit_code == 2 and "openai:gpt-4o-mini" in bad.output, bad.output
