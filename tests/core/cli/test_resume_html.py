"""``harness resume --html``: the page ``run --html`` wrote is refreshed when the campaign
ends (no --force needed for a page of the same campaign), any other file is refused before
the first call, and a stopped run's resume hint names its page."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.cli.commands._render import echo_summary
from harness.reporting.html import page_campaign
from harness.running.engine import RunSummary
from harness.store.log import Log
from harness.store.reader import EventReader
from harness.store.schema import connect

CAMPAIGN = """\
name = "pages"
seed = 3

[[models]]
name = "sim:planted"
max_in_flight = 2

[[relations]]
name = "metaquerier.mr1"
cases = 6
"""


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def crash(db: Path, keep_closed: int) -> None:
    """What a kill -9 leaves: no end of the campaign, only the first cases closed."""
    with connect(db) as conn:
        conn.execute("DELETE FROM events WHERE kind = 'CampaignFinished'")
        closed = [r[0] for r in conn.execute("SELECT gseq FROM events WHERE kind = 'CaseClosed'")]
        for gseq in closed[keep_closed:]:
            conn.execute("DELETE FROM events WHERE gseq = ?", (gseq,))


@pytest.fixture
def stale(tmp_path: Path) -> tuple[Path, Path]:
    """A log of a crashed campaign and the page that shows it unfinished, 2 of 6."""
    (tmp_path / "c.toml").write_text(CAMPAIGN, encoding="utf-8")
    db, page = tmp_path / "c.db", tmp_path / "page.html"
    result = invoke("run", tmp_path / "c.toml", "--db", db, "--no-report", "--html", page)
    assert result.exit_code == 0, result.output
    crash(db, keep_closed=2)
    assert invoke("report", db, "--html", page, "--force").exit_code == 0
    text = page.read_text(encoding="utf-8")
    assert 'status-unfinished">unfinished<' in text and "2 of 6" in text
    return db, page


def test_resume_refreshes_the_page_of_its_campaign(stale: tuple[Path, Path]) -> None:
    db, page = stale
    with EventReader(db) as log:
        campaign = log.latest_campaign()
    assert page_campaign(page) == campaign
    resumed = invoke("resume", db, "--no-report", "--html", page)
    assert resumed.exit_code == 0, resumed.output
    assert f"HTML report: {page}" in resumed.output
    text = page.read_text(encoding="utf-8")
    assert "6 of 6" in text and "2 of 6" not in text
    assert 'status-completed">completed<' in text and 'status-unfinished">' not in text


def test_resume_refuses_a_file_that_is_not_its_page_before_any_call(
    stale: tuple[Path, Path], tmp_path: Path
) -> None:
    db, page = stale
    other = tmp_path / "notes.html"
    other.write_text("<p>my notes</p>", encoding="utf-8")
    foreign = tmp_path / "foreign.html"  # another campaign's page
    foreign.write_text(
        page.read_text(encoding="utf-8").replace(page_campaign(page) or "?", "0123456789ab"),
        encoding="utf-8",
    )
    before = digest(db)
    for target in (other, foreign):
        refused = invoke("resume", db, "--no-report", "--html", target)
        assert refused.exit_code == 2, refused.output
        assert "--force" in refused.output
    assert digest(db) == before  # nothing ran
    assert other.read_text(encoding="utf-8") == "<p>my notes</p>"
    forced = invoke("resume", db, "--no-report", "--html", other, "--force")
    assert forced.exit_code == 0, forced.output
    assert page_campaign(other) == page_campaign(page)


def test_a_page_not_there_yet_is_written(stale: tuple[Path, Path], tmp_path: Path) -> None:
    db, _ = stale
    new = tmp_path / "new.html"
    assert invoke("resume", db, "--no-report", "--html", new).exit_code == 0
    assert "6 of 6" in new.read_text(encoding="utf-8")


def test_a_stopped_runs_resume_hint_names_its_page(capsys: pytest.CaptureFixture[str]) -> None:
    log = Log.at("c.db")
    echo_summary(RunSummary("c", status="stopped", reason="stopped by SIGINT"), log, "p.html")
    assert "resume with: harness resume c.db --html p.html" in capsys.readouterr().err
    ceiling = RunSummary("c", status="stopped", reason="ceiling", ceiling_usd=2.0)
    echo_summary(ceiling, log, "p.html")
    assert "--spend-ceiling 4 --html p.html" in capsys.readouterr().err
    echo_summary(RunSummary("c", status="stopped"), log)
    assert capsys.readouterr().err.rstrip().endswith("harness resume c.db")
