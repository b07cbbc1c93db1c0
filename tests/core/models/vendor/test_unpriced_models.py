"""A vendor model missing from its price list is named before the first call and priced
"unknown" (only with --allow-unpriced or a price in the campaign file), never priced as the
listed model its name starts with (``gpt-4o-mimi`` is not ``gpt-4o``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.models.providers import check_priced, list_price
from harness.running.campaign import parse_campaign
from harness.vocabulary.errors import ConfigError
from tests.fixtures.counting_vendor import CountingVendor


@pytest.mark.parametrize(
    ("scheme", "name", "listed_as"),
    [
        ("openai", "gpt-4o", "gpt-4o"),
        ("openai", "gpt-4o-2024-08-06", "gpt-4o"),
        ("openai", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("anthropic", "claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("anthropic", "claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("google", "gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("openai", "gpt-4o-mimi", None),  # a typo
        ("openai", "gpt-4o-audio-preview", None),  # another model
        ("openai", "gpt-4oo", None),
        ("anthropic", "claude-3-5-sonnetx", None),
    ],
)
def test_only_a_snapshot_shares_its_models_price(
    scheme: str, name: str, listed_as: str | None
) -> None:
    price = list_price(scheme, name)
    assert price == (list_price(scheme, listed_as) if listed_as else None)


def _config(name: str, **options: object) -> object:
    return parse_campaign(
        {
            "models": [{"name": name, "options": {"base_url": "http://127.0.0.1:9/v1", **options}}],
            "relations": [{"name": "metaquerier.mr1", "cases": 1}],
        }
    )


def test_an_unlisted_model_is_refused_naming_it_and_the_ways_on() -> None:
    with pytest.raises(ConfigError) as err:
        check_priced(_config("openai:gpt-4o-mimi"), allow_unpriced=False)
    message = str(err.value)
    assert "openai:gpt-4o-mimi is not in the openai price list" in message
    assert "price_in_per_mtok" in message and "--allow-unpriced" in message
    assert check_priced(_config("openai:gpt-4o-mimi"), allow_unpriced=True) == [
        "openai:gpt-4o-mimi"
    ]
    priced = _config("openai:gpt-4o-mimi", price_in_per_mtok=1.0, price_out_per_mtok=2.0)
    assert check_priced(priced, allow_unpriced=False) == []
    assert check_priced(_config("openai-compat:my-server"), allow_unpriced=False) == []


HARNESS = [sys.executable, "-c", "from harness.cli import main; main()"]


def _run(tmp_path: Path, name: str, base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    campaign = tmp_path / "c.toml"
    campaign.write_text(
        f'name = "priced"\n[[models]]\nname = "{name}"\nmax_in_flight = 2\n'
        f'options = {{ base_url = "{base_url}" }}\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 2\n'
    )
    return subprocess.run(
        [*HARNESS, "run", str(campaign), "--db", "out.db", "--no-report", *extra],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "OPENAI_API_KEY": "sk-test"},
    )


def test_the_cli_names_the_model_before_the_first_call(tmp_path: Path) -> None:
    vendor = CountingVendor((0.0, 1.0)).start()
    try:
        refused = _run(tmp_path, "openai:gpt-4o-mimi", vendor.url)
        assert refused.returncode == 2, refused.stderr
        assert "openai:gpt-4o-mimi is not in the openai price list" in refused.stderr
        assert vendor.total == 0 and not (tmp_path / "out.db").exists()
        allowed = _run(tmp_path, "openai:gpt-4o-mimi", vendor.url, "--allow-unpriced")
        assert allowed.returncode == 0, allowed.stderr
        assert "openai:gpt-4o-mimi: not in the price list; its cost is unknown" in allowed.stderr
        row = next(line for line in allowed.stderr.splitlines() if line.startswith("openai:"))
        assert row.split()[-1] == "unknown"  # the estimate's USD column: not gpt-4o's price
        assert vendor.total > 0
    finally:
        vendor.stop()


def test_resume_applies_the_same_rule_and_does_not_record_the_allowance(tmp_path: Path) -> None:
    # --allow-unpriced is agreed to by each process that spends: a resume of a campaign run
    # with it is refused before any call unless given it again.
    vendor = CountingVendor((0.0, 1.0)).start()
    try:
        allowed = _run(tmp_path, "openai:gpt-4o-mimi", vendor.url, "--allow-unpriced")
        assert allowed.returncode == 0, allowed.stderr
        import sqlite3

        with sqlite3.connect(tmp_path / "out.db") as conn:  # a case left open, as by a crash
            last = conn.execute("SELECT max(case_id) FROM events").fetchone()[0]
            conn.execute("DELETE FROM events WHERE case_id = ? AND kind != 'CaseOpened'", (last,))
        conn.close()
        paid = vendor.total

        def resume(*extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*HARNESS, "resume", "out.db", "--no-report", *extra],
                capture_output=True,
                text=True,
                cwd=tmp_path,
                timeout=120,
                env={**os.environ, "OPENAI_API_KEY": "sk-test"},
            )

        refused = resume()
        assert refused.returncode == 2, refused.stderr
        assert "openai:gpt-4o-mimi is not in the openai price list" in refused.stderr
        assert "--allow-unpriced" in refused.stderr and vendor.total == paid
        resumed = resume("--allow-unpriced")
        assert resumed.returncode == 0, resumed.stderr
        assert "openai:gpt-4o-mimi: not in the price list; its cost is unknown" in resumed.stderr
        assert vendor.total > paid
    finally:
        vendor.stop()
