"""The commands on a PostgreSQL log: run, report, show, export, campaigns, replay --verify
and resume read either store; ``harness copy`` moves a log both ways with byte-identical
reports; a password in the connection string reaches no output, log or error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from tests.postgres_server import PASSWORD, PASSWORD_ROLE, raw_sql

REPO_ROOT = Path(__file__).resolve().parents[3]
# The example campaigns: together they run every report section (the BiasLens tallies query
# the events table with json_extract, the judges section the verdicts view).
CAMPAIGNS = {
    "sim": "sim",
    "biaslens": str(REPO_ROOT / "examples" / "biaslens_sim.toml"),
    "langbite": str(REPO_ROOT / "examples" / "langbite.toml"),
}


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def outputs(db: str, html: Path) -> dict[str, str]:
    """Everything the read commands print about the log at ``db``, and its HTML page."""
    out = {fmt: invoke("report", db, "--format", fmt).stdout for fmt in ("text", "json", "csv")}
    invoke("report", db, "--html", str(html), "--html-max-cases", "5", "--force")
    out["html"] = html.read_text(encoding="utf-8")
    out["show"] = invoke("show", db, "1").stdout
    out["export"] = invoke("export", db).stdout
    # Its title names the log (a path or a URL): the rows are compared.
    out["campaigns"] = invoke("campaigns", db).stdout.split("\n", 1)[1]
    return out


@pytest.fixture(scope="module", params=sorted(CAMPAIGNS))
def sqlite_log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp(f"pg-{request.param}") / "source.db"
    invoke("run", CAMPAIGNS[request.param], "--db", str(db), "--no-report")
    return db


def test_copy_to_postgresql_and_back_gives_identical_reports(
    sqlite_log: Path, pg_url: str, tmp_path: Path
) -> None:
    html = tmp_path / "page.html"
    before = outputs(str(sqlite_log), html)
    invoke("copy", str(sqlite_log), pg_url)
    on_postgres = outputs(pg_url, html)
    back = tmp_path / "back.db"
    invoke("copy", pg_url, str(back))
    after = outputs(str(back), html)
    for name, text in before.items():
        assert on_postgres[name] == text, f"{name} differs on PostgreSQL"
        assert after[name] == text, f"{name} differs after the round trip"
    invoke("replay", pg_url, "--verify")  # exit 0: no difference (3 when there is one)


def test_copy_never_overwrites_a_log(sqlite_log: Path, pg_url: str, tmp_path: Path) -> None:
    invoke("copy", str(sqlite_log), pg_url)
    again = CliRunner().invoke(main, ["copy", str(sqlite_log), pg_url])
    assert again.exit_code == 2 and "already holds events" in again.output
    existing = tmp_path / "x.db"
    existing.write_bytes(b"keep me")
    refused = CliRunner().invoke(main, ["copy", pg_url, str(existing)])
    assert refused.exit_code == 2 and existing.read_bytes() == b"keep me"


SMALL = """\
name = "pg"
seed = 3
[[models]]
name = "sim:planted"
max_in_flight = 8
[[relations]]
name = "metaquerier.mr1"
cases = 12
"""


def test_run_resume_and_read_on_postgresql_never_show_the_password(
    postgres_server: Any, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgres_server.ensure_password_role()
    database = pg_url.rsplit("/", 1)[1]
    url = postgres_server.url(database, user=PASSWORD_ROLE, password=PASSWORD)
    campaign = tmp_path / "pg.toml"
    campaign.write_text(SMALL, encoding="utf-8")
    seen: list[str] = []

    def run(*args: str, code: int = 0) -> Result:
        result = CliRunner().invoke(main, list(args))
        seen.append(result.output)
        assert result.exit_code == code, result.output
        return result

    first = run("run", str(campaign), "--db", url)
    assert "completed: 12 cases closed" in first.stderr
    # Make it look interrupted: two cases lose their verdict; resume closes them again.
    raw_sql(pg_url, "DELETE FROM events WHERE kind IN ('VerdictReached', 'CaseClosed')"
            " AND case_id IN (SELECT case_id FROM events WHERE kind = 'CaseOpened'"
            " ORDER BY gseq LIMIT 2)")  # fmt: skip
    # A crash takes a commit's digests with its events; a hand-made one must drop them too.
    raw_sql(pg_url, "DELETE FROM case_digests WHERE case_id IN (SELECT case_id FROM events"
            " WHERE kind = 'CaseOpened' ORDER BY gseq LIMIT 2)")  # fmt: skip
    resumed = run("resume", url, "--no-report")
    assert "10 of 12 cases closed, 2 open" in resumed.stderr
    for args in (("report", url), ("show", url, "1"), ("export", url), ("campaigns", url)):
        run(*args)
    run("replay", url, "--verify")
    wrong = postgres_server.url(database, user=PASSWORD_ROLE, password=PASSWORD + "-wrong")
    failed = run("report", wrong, code=2)
    assert "password authentication failed" in failed.output
    seen.append(failed.output)
    # The log itself: no event holds the password.
    monkeypatch.delenv("PGPASSWORD", raising=False)
    dump = invoke("export", pg_url).stdout + "".join(outputs(pg_url, tmp_path / "p.html").values())
    assert PASSWORD not in dump
    for text in seen:
        assert PASSWORD not in text


def test_a_campaign_file_names_its_store_but_never_a_password(
    postgres_server: Any, pg_url: str, tmp_path: Path
) -> None:
    campaign = tmp_path / "stored.toml"
    campaign.write_text(f'store = "{pg_url}"\n' + SMALL, encoding="utf-8")
    result = invoke("run", str(campaign), "--no-report")
    assert "completed: 12 cases closed" in result.stderr
    assert "completed" in invoke("campaigns", pg_url).stdout  # the log went to the store
    secret = postgres_server.url("x", user=PASSWORD_ROLE, password=PASSWORD)
    campaign.write_text(f'store = "{secret}"\n' + SMALL, encoding="utf-8")
    refused = CliRunner().invoke(main, ["run", str(campaign), "--no-report"])
    assert refused.exit_code == 2
    assert "store" in refused.output and "PGPASSWORD" in refused.output
    assert PASSWORD not in refused.output


def test_spawned_workers_get_the_password_in_their_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``harness run --workers N`` starts N - 1 processes: their command lines, which any
    user of the machine can list, never hold the password."""
    import harness.running.worker

    seen: list[tuple[list[str], dict[str, str]]] = []

    class Recorded:
        def __init__(self, argv: list[str], env: dict[str, str], **_: Any) -> None:
            seen.append((argv, env))

    monkeypatch.setattr(harness.running.worker.subprocess, "Popen", Recorded)
    harness.running.worker.spawn_workers(f"postgresql://u:{PASSWORD}@h:5/db", "c1", 2, 30.0)
    assert len(seen) == 2
    for argv, env in seen:
        assert PASSWORD not in " ".join(argv) and "postgresql://u@h:5/db" in argv
        assert env["PGPASSWORD"] == PASSWORD
