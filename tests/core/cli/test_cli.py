"""The command line through click's CliRunner: run, show, report, relations, and bad input."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.store.schema import connect

CAMPAIGN = """\
name = "cli"
seed = 5

[[models]]
name = "sim:planted"
max_in_flight = 8

[[relations]]
name = "metaquerier.mr1"
cases = 20

[[relations]]
name = "metaquerier.mr2"
cases = 20

[[relations]]
name = "metafair.mr8"
cases = 20
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cli")
    path = tmp / "cli.toml"
    path.write_text(CAMPAIGN, encoding="utf-8")
    db = tmp / "cli.db"
    result = invoke("run", str(path), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert "completed: 60 cases closed" in result.stderr
    assert "Violation rate per model and relation" in result.stdout
    return db


def test_run_writes_a_log_with_a_verdict_per_case(log: Path) -> None:
    with connect(log) as conn:
        assert conn.execute("SELECT count(*) FROM verdicts").fetchone() == (60,)


def test_show_prints_the_conversation_and_verdict(log: Path) -> None:
    with connect(log) as conn:
        case_id, reply = conn.execute(
            "SELECT case_id, reply FROM turns WHERE reply LIKE '[_%]' AND prompt LIKE 'In the%'"
            " ORDER BY case_id LIMIT 1"
        ).fetchone()
    result = invoke("show", str(log), case_id)
    assert result.exit_code == 0, result.output
    out = " ".join(re.sub("[│╭╮╰╯─]", " ", result.stdout).split())  # unwrap the panels
    assert case_id in out
    assert "In the following list: [" in out
    assert "e.g. [first term, second term]" in out
    # Replies are bracketed lists: they must be printed, not eaten as console markup.
    assert " ".join(reply.split()) in out
    assert "verdict (relation):" in out


def test_show_finds_a_case_by_number(log: Path) -> None:
    result = invoke("show", str(log), "1")
    assert result.exit_code == 0
    assert "turn 0" in result.stdout


def test_report_formats_agree(log: Path) -> None:
    text = invoke("report", str(log), "--all")  # every table whole
    summary = invoke("report", str(log)).stdout  # the default: summaries in 100 columns
    as_json = json.loads(invoke("report", str(log), "--format", "json").stdout)
    as_csv = list(csv.DictReader(io.StringIO(invoke("report", str(log), "--format", "csv").stdout)))
    rates = as_json["violation_rates"]["rows"]
    assert {r["relation"] for r in rates} >= {"metaquerier.mr1", "metaquerier.mr2", "metafair.mr8"}
    for i, row in enumerate(rates):
        for column, value in row.items():
            [cell] = [
                c["value"]
                for c in as_csv
                if (c["table"], c["row"], c["column"]) == ("violation_rates", str(i), column)
            ]
            assert cell == ("" if value is None else str(value))
        # The text table shows the same counts.
        line = next(
            ln
            for ln in text.stdout.splitlines()
            if row["relation"] in ln and "sim:planted" in ln and "│" in ln
        )
        cells = [c.strip() for c in line.split("│") if c.strip()]
        assert cells[2:6] == [str(row[k]) for k in ("cases", "violated", "held", "invalid")]
        # The summary's row of the relation (its one model said above the table) too.
        short = next(
            ln.split() for ln in summary.splitlines() if ln.split()[:1] == [row["relation"]]
        )
        assert short[1:5] == [str(row[k]) for k in ("cases", "violated", "held", "invalid")]


def test_report_to_a_file(log: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert invoke("report", str(log), "--format", "json", "--out", str(out)).exit_code == 0
    assert "violation_rates" in json.loads(out.read_text())


def test_relations_lists_one_line_each() -> None:
    result = invoke("relations")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    for name in ("metaquerier.mr1", "metaquerier.mr2", "metafair.mr8"):
        [line] = [ln for ln in lines if ln.startswith(name + " ")]
        assert len(line.split(maxsplit=1)[1]) > 20
    verbose = invoke("relations", "--verbose").stdout
    assert "list_size = 8" in verbose


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    return lines[0]


def test_bad_input_is_one_clear_line_and_exit_code_2(tmp_path: Path, log: Path) -> None:
    runner = CliRunner()
    missing = tmp_path / "missing.db"
    line = one_line_error(runner.invoke(main, ["report", str(missing)]))
    assert "does not exist" in line
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n" * 50)
    assert "not a harness event log" in one_line_error(
        runner.invoke(main, ["show", str(notes), "1"])
    )
    assert "no case matches" in one_line_error(runner.invoke(main, ["show", str(log), "zzz-none"]))
    bad = tmp_path / "bad.toml"
    bad.write_text(CAMPAIGN.replace("cases = 20", "cases = twenty", 1))
    assert "line" in one_line_error(
        runner.invoke(main, ["run", str(bad), "--db", str(tmp_path / "b.db")])
    )
    bad.write_text(CAMPAIGN.replace("metafair.mr8", "metafair.mr99"))
    line = one_line_error(runner.invoke(main, ["run", str(bad), "--db", str(tmp_path / "b.db")]))
    assert "relations[2].name" in line and "harness relations" in line
    assert not (tmp_path / "b.db").exists()
    line = one_line_error(runner.invoke(main, ["run", str(tmp_path / "nope.toml")]))
    assert "does not exist" in line
