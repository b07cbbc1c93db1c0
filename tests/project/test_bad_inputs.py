"""Bad inputs get one clear error naming the field and the fix, before the first call:
never a traceback, and never a campaign that "completes" having asked nothing.
docs/errors.md ("Bad inputs") tabulates the same cases."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.store.reader import EventReader
from harness.store.schema import connect

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = ROOT / "transcripts" / "smollm2.db"
JUDGES = '[[judges]]\nname = "sim:judge"\n' * 3
BASE = """
name = "bad"
[[models]]
name = "sim:planted"
{judges}
[[relations]]
name = "{relation}"
cases = {cases}
{options}
{extra}
"""


def _campaign(
    tmp_path: Path,
    *,
    relation: str = "metaquerier.mr1",
    cases: str = "2",
    options: str = "",
    extra: str = "",
) -> Path:
    path = tmp_path / "bad.toml"
    judges = JUDGES if relation.startswith("biaslens") else ""
    path.write_text(
        BASE.format(judges=judges, relation=relation, cases=cases, options=options, extra=extra)
    )
    return path


def _fails_cleanly(args: list[str], *expected: str) -> str:
    result = CliRunner().invoke(main, args)
    assert isinstance(result.exception, SystemExit), f"traceback: {result.exception!r}"
    assert result.exit_code == 2, result.output
    for text in expected:
        assert text in result.output, result.output
    return result.output


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ({"cases": '"3"'}, ("relations[0]", "cases", "integer")),
        ({"extra": "[defaults]\ntemperature = -2"}, ("defaults.temperature", "0 (greedy) to 2")),
        ({"extra": "[defaults]\nmax_tokens = -1"}, ("defaults.max_tokens", "at least 1")),
        (
            {
                "relation": "biaslens.answer",
                "options": 'options = { attributes = ["nonexistent"] }',
            },
            ("relations[0].options", "no case to run"),
        ),
        (
            # A file that holds no question set (the example was /etc/hostname).
            {"relation": "biaslens.answer", "options": 'options = { questions = "{HOSTNAME}" }'},
            ("relations[0].options", "no case to run"),
        ),
        (
            {"relation": "langbite", "options": "options = { concerns = [] }"},
            ("relations[0].options.concerns", "at least one"),
        ),
    ],
    ids=["cases-string", "temperature", "max-tokens", "attributes", "questions", "concerns"],
)
def test_bad_campaign_fails_before_the_first_call(
    tmp_path: Path, toml: dict[str, str], expected: tuple[str, ...]
) -> None:
    if "{HOSTNAME}" in toml.get("options", ""):
        hostname = tmp_path / "hostname"
        hostname.write_text("build-host-7\n", encoding="utf-8")
        toml = {**toml, "options": toml["options"].replace("{HOSTNAME}", str(hostname))}
    db = tmp_path / "bad.db"
    _fails_cleanly(["run", str(_campaign(tmp_path, **toml)), "--db", str(db)], *expected)
    # Nothing was asked: no log with calls in it.
    if db.exists():
        with connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM events WHERE kind='AskSent'").fetchone() == (
                0,
            )


def test_run_on_a_directory(tmp_path: Path) -> None:
    _fails_cleanly(["run", str(tmp_path)], "is a directory")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    copy = tmp_path / "smollm2.db"
    shutil.copy(SMOLLM2, copy)
    return copy


def test_resume_unknown_campaign(log: Path) -> None:
    with EventReader(log) as reader:
        recorded = reader.latest_campaign()
    _fails_cleanly(["resume", str(log), "--campaign", "bogus"], "bogus", recorded)


def test_rejudge_max_in_flight_zero(log: Path) -> None:
    _fails_cleanly(
        ["rejudge", str(log), "--judge", "sim:judge", "--max-in-flight", "0"], "--max-in-flight"
    )


def test_report_top_negative(log: Path) -> None:
    _fails_cleanly(["report", str(log), "--top", "-5"], "--top")


def test_report_mode_without_biaslens(log: Path) -> None:
    _fails_cleanly(["report", str(log), "--mode", "released"], "--mode", "BiasLens")


def test_report_on_a_log_with_a_malformed_payload(log: Path) -> None:
    with connect(log) as conn:
        (rowid,) = conn.execute(
            "SELECT rowid FROM events WHERE kind = 'VerdictReached' LIMIT 1"
        ).fetchone()
        conn.execute("UPDATE events SET payload = '{bad json' WHERE rowid = ?", (rowid,))
    _fails_cleanly(["report", str(log)], "VerdictReached", "is not JSON")
