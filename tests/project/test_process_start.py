"""Every ``harness`` command starts by importing `harness.cli` (and so the `harness` package):
what those import is paid by each command, `--help` included. The engine, the answer cache
and the event models are imported by the commands that use them, on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = (
    "harness.running.engine",
    "harness.running.cache",
    "harness.vocabulary.events",
    "harness.running.campaign",
    "asyncio",
)


def _imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return out.split()


def test_the_cli_module_imports_no_engine_cache_or_event_models() -> None:
    assert _imported_after("import harness.cli") == []


def test_the_package_imports_its_names_on_first_use() -> None:
    assert _imported_after("import harness") == []
    assert "harness.running.campaign" in _imported_after("import harness\nharness.CampaignConfig")


def test_the_package_names_are_the_modules_objects() -> None:
    import harness
    from harness.reporting.tables import Table
    from harness.running.campaign import CampaignConfig
    from harness.vocabulary.relation import Case

    assert harness.CampaignConfig is CampaignConfig
    assert harness.Case is Case
    assert harness.Table is Table
    assert sorted(harness.__all__) == sorted(set(harness.__all__))
    for name in harness.__all__:
        assert getattr(harness, name) is not None
    with pytest.raises(AttributeError, match="no_such_name"):
        harness.no_such_name  # noqa: B018


def test_replay_verify_imports_no_engine_or_rich() -> None:
    # `replay --verify` derives asks and verdicts without the engine: the engine (with the
    # answer cache) and the report renderer (rich) are imported only by `replay --out`.
    probe = (
        "import harness.cli, harness.cli.commands.replay\nimport sys\n"
        "print(' '.join(m for m in ('harness.running.engine', 'harness.running.cache',"
        " 'rich.table', 'harness.cli.commands._render') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == []
