"""Every example campaign renders as an HTML report through ``harness run --html``: the
files of examples/ (a requirements file through ``harness langbite campaign``), the
embedded sim, and a log re-judged by a second model (the judge-vs-judge section)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
LOCAL = {"langbite-local.toml"}  # runs the real SmolLM2 model


def _campaign_file(example: Path, tmp_path: Path) -> str:
    """The campaign an example runs: itself, or the one a requirements file describes."""
    if "[scenario]" not in example.read_text(encoding="utf-8"):
        return str(example)
    out = tmp_path / "campaign.toml"
    result = CliRunner().invoke(main, ["langbite", "campaign", str(example), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return str(out)


def _run_with_html(campaign: str, tmp_path: Path) -> str:
    db, page = tmp_path / "run.db", tmp_path / "report.html"
    args = ["run", campaign, "--db", str(db), "--no-report", "--html", str(page)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, (result.output, result.exception)
    assert f"HTML report: {page}" in result.stderr
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert 'id="case-pack"' in text and '<section id="t-' in text
    return text


@pytest.mark.parametrize(
    "example",
    [
        pytest.param(e, marks=[pytest.mark.local_model] if e.name in LOCAL else [], id=e.name)
        for e in EXAMPLES
    ],
)
def test_every_example_renders(example: Path, tmp_path: Path) -> None:
    text = _run_with_html(_campaign_file(example, tmp_path), tmp_path)
    assert "<svg" in text  # every family's tables carry at least one plot hint


def test_the_sim_renders_and_a_rejudged_log_shows_the_judges(tmp_path: Path) -> None:
    text = _run_with_html("sim", tmp_path)
    assert 'id="t-co_violating_pairs"' in text
    db = tmp_path / "run.db"
    result = CliRunner().invoke(
        main, ["rejudge", str(db), "--judge", "sim:judge", "--limit", "40", "--no-report"]
    )
    assert result.exit_code == 0, result.output
    page = tmp_path / "judged.html"
    result = CliRunner().invoke(main, ["report", str(db), "--html", str(page)])
    assert result.exit_code == 0, result.output
    judged = page.read_text(encoding="utf-8")
    section = judged.split('<section id="t-judges"', 1)[1].split("</section>", 1)[0]
    assert "judge:sim:judge" in section and 'class="bar"' in section


@pytest.mark.local_model
def test_the_embedded_demo_renders(tmp_path: Path) -> None:
    _run_with_html("demo", tmp_path)
