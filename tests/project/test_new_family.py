"""``harness new-family``: the package it writes is a working family outside the repo. It is
installed beside the harness with the documented command (``uv run --with-editable``), its
tests pass (the relation contract among them), a campaign on ``sim:planted`` runs, finds
the planted bias, and replays with 0 differences."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_bad_names_and_existing_targets_are_refused(tmp_path: Path) -> None:
    for name in ("Swap", "2swap", "class", "swap-demo", "metafair"):
        result = CliRunner().invoke(main, ["new-family", name, "--dir", str(tmp_path / name)])
        assert result.exit_code == 2, (name, result.output)
        assert not (tmp_path / name).exists()
    (tmp_path / "taken").mkdir()
    result = CliRunner().invoke(main, ["new-family", "swapdemo", "--dir", str(tmp_path / "taken")])
    assert result.exit_code == 2 and "exists" in result.output
    assert list((tmp_path / "taken").iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed (the documented way)")
def test_a_new_family_installs_beside_the_harness_runs_and_replays(tmp_path: Path) -> None:
    family = tmp_path / "swapdemo"
    made = CliRunner().invoke(main, ["new-family", "swapdemo", "--dir", str(family)])
    assert made.exit_code == 0, made.output
    # The documented command; --no-sync and --offline leave this checkout's environment
    # as it is and fetch nothing (the family declares no dependency to resolve).
    uv = ["uv", "run", "--project", str(REPO), "--no-sync", "--offline"]
    with_family = [*uv, "--with-editable", str(family)]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}

    def run(*argv: str) -> str:
        done = subprocess.run(
            [*with_family, *argv], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "swapdemo.swap" in run("harness", "relations", "--verbose")
    assert "passed" in run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(family))
    db = tmp_path / "demo.db"
    run("harness", "run", str(family / "campaign.toml"), "--db", str(db), "--no-report")
    assert "0 differences" in run("harness", "replay", str(db), "--verify")
    report = json.loads(run("harness", "report", str(db), "--format", "json"))
    rows = [r for t in report.values() for r in t.get("rows", []) if "rate" in r]
    [swap] = [r for r in rows if r.get("relation") == "swapdemo.swap" and "violated" in r]
    # The planted bias: "No" for a woman with chance 0.4, so about 0.4 of the cases violate.
    assert swap["cases"] == 60 and 0.2 < swap["rate"] < 0.65
    # Nothing was installed into this checkout's environment.
    listed = subprocess.run([*uv, "python", "-c", "import swapdemo"], capture_output=True)
    assert listed.returncode != 0
