"""Unfinished work is visible: the report header, ``harness campaigns``, a second ``run``
into a log that holds a campaign, a killed import, and long text reports."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.cli.commands._render import SUMMARY_ROWS, TEXT_ROW_LIMIT, render_tables
from harness.reporting.campaign_status import campaign_statuses
from harness.reporting.tables import Table
from harness.store.reader import EventReader
from harness.store.schema import connect
from tests.families.biaslens.test_biaslens_released import toy_folder  # noqa: F401  (a released-style folder)

REPO_ROOT = Path(__file__).resolve().parents[3]
CAMPAIGN = """\
name = "status"
seed = 5

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
    """What a kill -9 leaves: the committed events, without the end of the campaign and
    without the cases that were not yet closed."""
    with connect(db) as conn:
        conn.execute("DELETE FROM events WHERE kind = 'CampaignFinished'")
        closed = [r[0] for r in conn.execute("SELECT gseq FROM events WHERE kind = 'CaseClosed'")]
        for gseq in closed[keep_closed:]:
            conn.execute("DELETE FROM events WHERE gseq = ?", (gseq,))


@pytest.fixture
def campaign_file(tmp_path: Path) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN, encoding="utf-8")
    return path


def header(db: Path, *extra: str) -> dict[str, Any]:
    """The JSON report's header: typed fields, not rows."""
    result = invoke("report", db, "--format", "json", *extra)
    assert result.exit_code == 0, result.output
    fields: dict[str, Any] = json.loads(result.stdout)["campaign"]
    assert "rows" not in fields
    return fields


def test_every_report_starts_with_the_campaign_header(campaign_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    assert invoke("run", campaign_file, "--db", db, "--no-report").exit_code == 0
    fields = header(db)
    assert fields["name"] == "status" and fields["status"] == "completed"
    assert fields["reason"] == ""
    assert (fields["cases_planned"], fields["cases_closed"], fields["seed"]) == (6, 6, 5)
    started = datetime.strptime(fields["started"], "%Y-%m-%dT%H:%M:%SZ")
    finished = datetime.strptime(fields["finished"], "%Y-%m-%dT%H:%M:%SZ")
    assert started <= finished
    assert fields["models"] == [
        {"name": "sim:planted", "role": "model", "params": {}, "options": {}}
    ]
    assert len(fields["id"]) == 12 and fields["code_version"] and fields["harness_version"]
    assert fields["order"] == "interleaved"
    text = invoke("report", db).output
    assert "cases closed" in text and "6 of 6" in text  # the text report keeps its words
    assert text.index("Campaign") < text.index("Violation rate")
    csv_text = invoke("report", db, "--format", "csv").stdout
    assert csv_text.splitlines()[1].startswith("campaign,0,field,campaign")


def test_a_crashed_campaign_is_unfinished_in_the_header_and_the_list(
    campaign_file: Path, tmp_path: Path
) -> None:
    db = tmp_path / "c.db"
    assert invoke("run", campaign_file, "--db", db, "--no-report").exit_code == 0
    crash(db, keep_closed=2)
    fields = header(db)
    assert fields["status"] == "unfinished" and fields["reason"].startswith("no end recorded")
    assert (fields["cases_closed"], fields["cases_planned"]) == (2, 6)
    assert fields["finished"] is None
    assert "warning: campaign" in invoke("report", db).output
    listed = invoke("campaigns", db, "--format", "json")
    rows = json.loads(listed.stdout)["campaigns"]["rows"]
    # Typed fields as the JSON report's header has them, not a "2 of 6" string.
    assert [(r["name"], r["status"], r["cases_closed"], r["cases_planned"]) for r in rows] == [
        ("status", "unfinished", 2, 6)
    ]
    assert rows[0]["finished"] is None and rows[0]["started"].endswith("Z")
    assert rows[0]["reason"] == fields["reason"] and "cases closed" not in rows[0]
    assert "2 of 6" in invoke("campaigns", db).output  # the text keeps its words
    assert invoke("resume", db, "--no-report").exit_code == 0
    assert header(db)["status"] == "completed"


def test_run_refuses_a_log_that_holds_a_campaign(campaign_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    assert invoke("run", campaign_file, "--db", db, "--no-report").exit_code == 0
    with connect(db) as conn:
        paid = conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'ReplyReceived'").fetchone()
    crash(db, keep_closed=3)  # finished or interrupted: the same refusal
    before = digest(db)
    again = invoke("run", campaign_file, "--db", db)
    assert again.exit_code == 2, again.output
    for fix in (f"harness resume {db}", "--reuse", "--new-campaign"):
        assert fix in again.output
    # The replies of the cases left open are recorded too: a new campaign pays them all again.
    assert f"pay again for the {paid[0]} replies" in again.output
    assert digest(db) == before
    forced = invoke("run", campaign_file, "--db", db, "--new-campaign", "--no-report")
    assert forced.exit_code == 0, forced.output
    assert (
        len(json.loads(invoke("campaigns", db, "--format", "json").stdout)["campaigns"]["rows"])
        == 2
    )


def test_a_killed_import_is_unfinished_and_never_resumed(toy_folder: Path, tmp_path: Path) -> None:  # noqa: F811
    db = tmp_path / "import.db"
    imported = invoke("import", "biaslens", toy_folder, "--db", db)
    assert imported.exit_code == 0, imported.output
    fields = header(db)
    assert fields["status"] == "completed"
    assert fields["cases_closed"] == fields["cases_planned"] and fields["imported_from"]
    crash(db, keep_closed=5)
    fields = header(db)
    assert fields["status"] == "unfinished"
    assert fields["reason"].startswith("the import was interrupted")
    assert fields["cases_closed"] == 5
    before = digest(db)
    resumed = invoke("resume", db)
    assert resumed.exit_code == 2, resumed.output
    assert "an import is not resumed" in resumed.output
    assert "harness import biaslens" in resumed.output
    assert digest(db) == before
    assert str(header(db)["status"]).startswith("unfinished")


def test_long_tables_are_cut_in_text_with_the_option_that_shows_all(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    rows = [[f"answer {i}"] for i in range(TEXT_ROW_LIMIT * 50)]
    table = Table("unreadable", "Unreadable answers", ["answer"], rows)
    buf = io.StringIO()
    render_tables([table], Console(file=buf, width=100), row_limit=TEXT_ROW_LIMIT)
    text = buf.getvalue()
    assert len(text.splitlines()) < TEXT_ROW_LIMIT + 10
    assert f"{TEXT_ROW_LIMIT * 49} more rows of {TEXT_ROW_LIMIT * 50}" in text
    assert "--all" in text


def test_report_all_shows_every_row_and_json_keeps_them(tmp_path: Path) -> None:
    # Half the answers unreadable: the BiasLens list of unreadable answers is long.
    example = (REPO_ROOT / "examples" / "biaslens_sim.toml").read_text(encoding="utf-8")
    campaign = tmp_path / "b.toml"
    campaign.write_text(
        example.replace(
            'name = "sim:planted"', 'name = "sim:planted"\noptions = { invalid_rate = 0.5 }'
        ),
        encoding="utf-8",
    )
    db = tmp_path / "b.db"
    assert invoke("run", campaign, "--db", db, "--no-report").exit_code == 0
    tables = json.loads(invoke("report", db, "--format", "json").stdout)
    rows = {name: t["rows"] for name, t in tables.items() if "rows" in t}  # not the header
    long = {name: len(r) for name, r in rows.items() if len(r) > TEXT_ROW_LIMIT}
    assert long, {name: len(r) for name, r in rows.items()}
    default = invoke("report", db).output
    everything = invoke("report", db, "--all").output
    for name, n in long.items():
        assert f"{n - SUMMARY_ROWS} more rows of {n} in {name!r}" in default
    assert "more rows of" not in everything
    assert len(everything.splitlines()) > len(default.splitlines()) + sum(long.values()) // 2


def test_statuses_read_each_campaign_through_its_index(campaign_file: Path, tmp_path: Path) -> None:
    # The lifecycle events of every campaign were read by kind alone: a scan of the whole
    # events table (4.7 GB at six BiasLens models) for a few dozen rows. Two campaigns, so
    # the per-campaign reading is checked against the order and the counts too.
    db = tmp_path / "two.db"
    for _ in range(2):
        assert (
            invoke("run", campaign_file, "--db", db, "--no-report", "--new-campaign").exit_code == 0
        )
    with EventReader(db) as log:
        statements: list[str] = []
        log.connection.set_trace_callback(statements.append)
        statuses = campaign_statuses(log)
        log.connection.set_trace_callback(None)
        ids = [cid for cid, _ in log.campaigns()]
        scans = [
            (sql, detail)
            for sql in statements
            if "events" in sql and not sql.lstrip().upper().startswith("PRAGMA")
            for *_, detail in log.connection.execute("EXPLAIN QUERY PLAN " + sql)
            if detail.startswith("SCAN events")
        ]
    assert [s.campaign for s in statuses] == ids and len(ids) == 2
    assert all(s.status == "completed" and (s.opened, s.closed) == (6, 6) for s in statuses)
    assert scans == []
    # Nor does the status read the replies (every payload's `cached` flag): only the HTML
    # header and `harness run`'s refusal count the paid ones (`paid_replies`).
    assert not [sql for sql in statements if "ReplyReceived" in sql]
