"""Shared fixtures: generic builders only (a log path, campaign configs, the repo root)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from harness.running.campaign import CampaignConfig, parse_campaign
from harness.store.open import open_writer

REPO_ROOT = Path(__file__).resolve().parents[1]

# The suite's property tests draw the same examples on every run (seeded per test), so a green
# run is reproducible and a red one replays exactly. HYPOTHESIS_PROFILE=explore draws fresh
# examples (500 where a test sets no number) for a hunt before a release; what it finds becomes an
# @example. Neither profile times examples (no deadline, no too-slow health check): speed is
# measured by the benchmarks in bench/, and on a loaded machine a timed property fails for the
# machine, not for the code.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("default", derandomize=True, print_blob=True, **_UNTIMED)
settings.register_profile(
    "explore", derandomize=False, max_examples=500, print_blob=True, **_UNTIMED
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where a test's event log goes (a real SQLite file, created on first open)."""
    return tmp_path / "campaign.db"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A throwaway PostgreSQL server on loopback for the whole session (tests/postgres_server);
    skips, saying why, where none can run."""
    from tests.postgres_server import server_or_skip

    with server_or_skip() as server:
        yield server


@pytest.fixture
def pg_url(postgres_server: Any) -> Iterator[str]:
    """The connection string of a fresh, empty database, dropped after the test."""
    name = postgres_server.create_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)


@pytest.fixture(params=["sqlite", "sqlite-compact", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's event log goes, once per store: a SQLite file path, the path of an empty
    log laid out in format 2 (`harness copy --compact`'s layout), then the URL of a fresh
    PostgreSQL database. Tests taking it form the one contract every store meets."""
    if request.param == "sqlite":
        return str(tmp_path / "campaign.db")
    if request.param == "sqlite-compact":
        path = tmp_path / "campaign.db"
        asyncio.run(_lay_out_compact(path))
        return str(path)
    return str(request.getfixturevalue("pg_url"))


async def _lay_out_compact(path: Path) -> None:
    async with await open_writer(path, compact=True):
        pass


def campaign_dict(
    *relations: tuple[str, int, dict[str, Any]],
    model: str = "sim:test",
    max_in_flight: int = 8,
    model_options: dict[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A campaign as the TOML parser would return it: one model, the given relations."""
    return {
        "name": top.pop("name", "test-campaign"),
        "seed": top.pop("seed", 11),
        "models": [{"name": model, "max_in_flight": max_in_flight, "options": model_options or {}}],
        "relations": [
            {"name": name, "cases": cases, "options": options} for name, cases, options in relations
        ],
        **top,
    }


@pytest.fixture
def make_campaign() -> Callable[..., CampaignConfig]:
    """Build a validated `CampaignConfig`; arguments as `campaign_dict`."""

    def build(*relations: tuple[str, int, dict[str, Any]], **kwargs: Any) -> CampaignConfig:
        return parse_campaign(campaign_dict(*relations, **kwargs), source="test")

    return build
