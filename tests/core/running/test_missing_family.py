"""A log whose family is not installed: replay, verify and resume name the relation, its
family and what to install, not "unknown relation" as if the log's campaign were wrong."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness
from harness.plugins import registry as registry_module
from harness.vocabulary.errors import ConfigError, FamilyNotInstalledError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "events_v1.db"  # metaquerier.mr1


@pytest.fixture
def without_metaquerier(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry as it is where the metaquerier family's package is not installed."""
    real = registry_module.entry_point_families

    def installed() -> Iterator[tuple[registry_module.Family, str]]:
        return ((f, origin) for f, origin in real() if f.name != "metaquerier")

    monkeypatch.setattr(registry_module, "entry_point_families", installed)
    monkeypatch.setattr(registry_module, "_registry", None)
    yield
    registry_module._registry = None


@pytest.fixture
def log(tmp_path: Path) -> Path:
    copy = tmp_path / "log.db"
    shutil.copy(FIXTURE, copy)
    return copy


def test_verify_names_the_missing_family_and_the_entry_point_group(
    log: Path, without_metaquerier: None
) -> None:
    with pytest.raises(FamilyNotInstalledError) as caught:
        harness.verify(log)
    message = str(caught.value)
    assert "relation 'metaquerier.mr1' of family 'metaquerier', which is not installed" in message
    assert "bias_harness.families" in message and "unknown relation" not in message
    assert (caught.value.family, caught.value.relation) == ("metaquerier", "metaquerier.mr1")
    assert not isinstance(caught.value, ConfigError)


def test_resume_names_the_missing_family(log: Path, without_metaquerier: None) -> None:
    with pytest.raises(FamilyNotInstalledError, match="family 'metaquerier'"):
        harness.resume(log)


def test_an_installed_family_without_the_relation_says_so(tmp_path: Path) -> None:
    from harness.running.campaign import parse_recorded_campaign

    data = {
        "name": "x",
        "models": [{"name": "sim:planted"}],
        "relations": [{"name": "metaquerier.mr99", "cases": 1}],
    }
    with pytest.raises(FamilyNotInstalledError) as caught:
        parse_recorded_campaign(data, source="log.db (recorded campaign)")
    assert "which the installed family (installed: bias-harness" in str(caught.value)
    assert caught.value.family == "metaquerier"


def test_a_campaign_file_keeps_its_config_error() -> None:
    from harness.running.campaign import parse_campaign

    data = {"name": "x", "models": [{"name": "sim:planted"}], "relations": [{"name": "nope.x"}]}
    with pytest.raises(ConfigError, match=r"relations\[0\].name: unknown relation"):
        parse_campaign(data)


def test_with_the_family_installed_the_log_replays(log: Path) -> None:
    # The v1 fixture predates today's prompts (differences expected); it must replay.
    assert harness.verify(log).cases == 12
