"""Every example campaign renders as an HTML report through ``harness run --html``: the
files of examples/ (a requirements file through ``harness langbite campaign``), the
embedded sim, and a log re-judged by a second model (the judge-vs-judge section)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))


def _runs_the_local_model(value: Any) -> bool:
    """Whether a parsed campaign file names or backs any model or judge with local:."""
    if isinstance(value, dict):
        return any(
            (key in ("name", "backend") and str(item).startswith("local:"))
            or _runs_the_local_model(item)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_runs_the_local_model(item) for item in value)
    return False


# Examples that run the real SmolLM2 model: minutes each on 2 cores, so they carry the
# local_model mark (`just test-fast` leaves them out; the README's `uv run pytest`, which
# CI runs, runs them). Read from the files, so a new local example is marked by itself.
LOCAL = {e.name for e in EXAMPLES if _runs_the_local_model(tomllib.loads(e.read_text("utf-8")))}


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


def test_the_examples_on_the_local_model_are_marked() -> None:
    assert {"badf_local.toml", "langbite-local.toml", "metafair_local.toml"} <= LOCAL
    assert not any("sim" in name for name in LOCAL)


@pytest.mark.local_model
def test_the_embedded_demo_renders(tmp_path: Path) -> None:
    _run_with_html("demo", tmp_path)
