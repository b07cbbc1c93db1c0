"""Exit codes: every command ends through the table of harness.cli.exit_codes, the one that
docs/errors.md and the README document."""

from __future__ import annotations

import os
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.cli.exit_codes import ExitCode, campaign_exit_code
from harness.plugins.registry import Family, extra_family
from harness.running.engine import RunSummary
from harness.testing import FakeModel
from harness.vocabulary.errors import AuthenticationError, BadRequestError
from harness.vocabulary.model import ModelSpec

REPO_ROOT = Path(__file__).resolve().parents[3]


def always_fails(spec: ModelSpec) -> FakeModel:
    return FakeModel(
        lambda m: BadRequestError("the vendor refuses every request", status=400), name=spec.name
    )


def bad_key(spec: ModelSpec) -> FakeModel:
    return FakeModel(lambda m: AuthenticationError("invalid api key", status=401), name=spec.name)


CTRL_C = {"pressed": False}


def ctrl_c(spec: ModelSpec) -> FakeModel:
    """Answers "[]", but the first call is a Ctrl-C of the user, as the terminal sends it."""

    def press(messages: Any, params: Any) -> None:
        if not CTRL_C["pressed"]:
            CTRL_C["pressed"] = True
            os.kill(os.getpid(), signal.SIGINT)

    return FakeModel(lambda m: "[]", name=spec.name, on_call=press)


FAULTY = Family(
    name="faulty",
    summary="model backends that fail",
    model_backends={"fails": always_fails, "badkey": bad_key, "ctrlc": ctrl_c},
)


def campaign(tmp_path: Path, model: str, cases: int = 4) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(
        f'name = "exit"\nseed = 1\n[[models]]\nname = "{model}"\nmax_in_flight = 1\n'
        f'[[relations]]\nname = "metaquerier.mr1"\ncases = {cases}\n',
        encoding="utf-8",
    )
    return path


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_campaign_in_which_every_call_failed_is_unfinished(tmp_path: Path) -> None:
    with extra_family(FAULTY):
        result = invoke("run", campaign(tmp_path, "fails:x"), "--db", tmp_path / "c.db")
    assert result.exit_code == ExitCode.UNFINISHED, result.output
    assert "unfinished: every one of 4 calls failed" in result.output


def test_an_authentication_error_aborts_with_3(tmp_path: Path) -> None:
    with extra_family(FAULTY):
        result = invoke("run", campaign(tmp_path, "badkey:x"), "--db", tmp_path / "c.db")
    assert result.exit_code == ExitCode.ABORTED, result.output
    assert "aborted:" in result.output


def test_a_ctrl_c_stop_exits_130_and_resume_completes(tmp_path: Path) -> None:
    CTRL_C["pressed"] = False
    db = tmp_path / "c.db"
    with extra_family(FAULTY):
        stopped = invoke("run", campaign(tmp_path, "ctrlc:x", cases=30), "--db", db)
        assert stopped.exit_code == ExitCode.INTERRUPTED, stopped.output
        assert "stopped by SIGINT" in stopped.output
        resumed = invoke("resume", db, "--no-report")
    assert resumed.exit_code == ExitCode.COMPLETED, resumed.output


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{db}", "--campaign", "nosuch"],
        ["report", "{db}", "--format", "json", "--campaign", "nosuch"],
        ["export", "{db}", "--campaign", "nosuch"],
        ["show", "{db}", "1", "--campaign", "nosuch"],
        ["replay", "{db}", "--campaign", "nosuch"],
    ],
)
def test_an_unknown_campaign_is_a_usage_error(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "c.db"
    assert invoke("run", "sim", "--db", db, "--no-report").exit_code == 0
    result = invoke(*(a.format(db=db) for a in command))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "has no campaign 'nosuch'" in result.output and "harness campaigns" in result.output


@pytest.mark.parametrize(
    ("status", "reason", "closed", "calls", "failures", "code"),
    [
        ("completed", "", 4, 8, 0, ExitCode.COMPLETED),
        ("completed", "", 3, 8, 0, ExitCode.UNFINISHED),
        ("completed", "", 4, 4, 4, ExitCode.UNFINISHED),
        ("aborted", "openai:x: invalid api key", 1, 1, 1, ExitCode.ABORTED),
        ("stopped", "spending ceiling reached: $1.00", 2, 2, 0, ExitCode.CEILING),
        ("stopped", "stopped by SIGTERM", 2, 2, 0, ExitCode.INTERRUPTED),
    ],
)
def test_a_summary_maps_to_one_exit_code(
    status: str, reason: str, closed: int, calls: int, failures: int, code: ExitCode
) -> None:
    summary = RunSummary("c", status, reason, closed, Counter(), calls=calls, failures=failures)
    assert campaign_exit_code(summary, 4) == code


@pytest.mark.parametrize("doc", ["docs/errors.md", "README.md"])
def test_the_documented_table_is_the_table_of_the_code(doc: str) -> None:
    text = (REPO_ROOT / doc).read_text(encoding="utf-8")
    section = text[text.index("Exit codes") :]
    documented = {int(n) for n in re.findall(r"^\|\s*(\d+)\s*\|", section, flags=re.M)}
    assert documented == {int(c) for c in ExitCode}
