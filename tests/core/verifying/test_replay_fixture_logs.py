"""Every log committed as a fixture, written by an earlier version of the harness, replays
with today's code to 0 differences: the asks and verdicts it recorded are what the code
computes again. A change that fails this changes what recorded campaigns meant; it must be
an option whose recorded value keeps old logs as they ran (`ChangedDefault`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.running.campaign import parse_campaign
from harness.verifying.replay import describe, verify_log

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted(p.name for p in FIXTURES.glob("events_v*.db"))


def test_the_fixture_logs_are_committed() -> None:
    assert "events_v1.db" in LOGS, f"no committed fixture logs in {FIXTURES}"


@pytest.mark.parametrize("name", LOGS)
def test_a_fixture_log_replays_with_zero_differences(name: str, tmp_path: Path) -> None:
    log = tmp_path / name
    shutil.copyfile(FIXTURES / name, log)  # never touch the committed file
    result = verify_log(log)
    assert result.cases > 0 and result.verdicts > 0
    assert result.differences == [], "\n".join(describe(result))


def _metaquerier(**top: object) -> dict[str, object]:
    return {
        "name": "dated",
        "models": [{"name": "sim:planted"}],
        "relations": [{"name": "metaquerier.mr1", "cases": 2}],
        **top,
    }


def test_a_recorded_campaign_is_dated_by_the_keys_it_recorded() -> None:
    """MetaQuerier's format example changed in the release that added `answer_format`: a
    recorded config without that key asked with the older, gendered example."""

    def example(data: dict[str, object], *, recorded: bool) -> object:
        options = parse_campaign(data, recorded=recorded).relations[0].options
        return options["format_example"]

    assert example(_metaquerier(), recorded=True) == "gendered"
    assert example(_metaquerier(answer_format="free"), recorded=True) == "placeholders"
    assert example(_metaquerier(), recorded=False) == "placeholders"
    named = _metaquerier()
    named["relations"] = [
        {"name": "metaquerier.mr1", "cases": 2, "options": {"format_example": "placeholders"}}
    ]
    assert example(named, recorded=True) == "placeholders"  # what a log names is kept
