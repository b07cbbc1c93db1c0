"""``harness export --table turns|verdicts|cases``: wide typed tables that pandas and DuckDB
load in one call, with as many rows as the log's views hold, every column documented."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.reporting.export_tables import TABLES
from harness.running.campaign import resolve_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader

REPO = Path(__file__).resolve().parents[3]
pd = pytest.importorskip("pandas", reason="pandas is a dev dependency (uv sync --all-groups)")
duckdb = pytest.importorskip("duckdb", reason="duckdb is a dev dependency (uv sync --all-groups)")


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config, _ = resolve_campaign("sim")
    db = tmp_path_factory.mktemp("sim") / "sim.db"
    asyncio.run(run_campaign(config, db))
    return db


def _expected_rows(db: Path, table: str) -> int:
    """What the views say: one row per turn (not per attempt), verdict, or opened case."""
    sql = {
        "turns": "SELECT COUNT(DISTINCT case_id || '#' || turn) FROM turns",
        "verdicts": "SELECT COUNT(*) FROM verdicts",
        "cases": "SELECT COUNT(*) FROM events WHERE kind = 'CaseOpened'",
    }[table]
    with EventReader(db) as log:
        return int(log.connection.execute(sql).fetchone()[0])


def _export(db: Path, out: Path, table: str, fmt: str) -> None:
    result = CliRunner().invoke(
        main, ["export", str(db), "--table", table, "--format", fmt, "--out", str(out)]
    )
    assert result.exit_code == 0, (result.output, result.exception)


def _load_pandas(path: Path, fmt: str) -> pd.DataFrame:
    if fmt == "parquet":
        return pd.read_parquet(path)
    if fmt == "csv":
        return pd.read_csv(path)
    return pd.read_json(path, lines=True)


def _load_duckdb(path: Path, fmt: str) -> tuple[int, dict[str, str]]:
    reader = {"parquet": "read_parquet", "csv": "read_csv", "jsonl": "read_json"}[fmt]
    con = duckdb.connect()
    n = con.execute(f"SELECT COUNT(*) FROM {reader}(?)", [str(path)]).fetchone()[0]
    types = {
        name: kind
        for name, kind, *_ in con.execute(
            f"DESCRIBE SELECT * FROM {reader}(?)", [str(path)]
        ).fetchall()
    }
    return n, types


@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_each_table_loads_in_pandas_and_duckdb(
    sim_log: Path, tmp_path: Path, table: str, fmt: str
) -> None:
    out = tmp_path / f"{table}.{fmt}"
    _export(sim_log, out, table, fmt)
    expected = _expected_rows(sim_log, table)
    columns, _ = TABLES[table]
    frame = _load_pandas(out, fmt)
    assert len(frame) == expected > 0
    assert list(frame.columns) == [c.name for c in columns]
    n, types = _load_duckdb(out, fmt)
    assert n == expected
    for column in columns:
        if column.type == "int64" and frame[column.name].notna().all():
            assert pd.api.types.is_integer_dtype(frame[column.name]), column.name
            assert types[column.name] in ("BIGINT", "INTEGER", "UBIGINT", "SMALLINT", "TINYINT")
        if column.type == "timestamp":
            assert "TIMESTAMP" in types[column.name], (column.name, types[column.name])
        if column.type == "bool":
            assert types[column.name] == "BOOLEAN", column.name


def test_parquet_keeps_the_declared_types(sim_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "cases.parquet"
    _export(sim_log, out, "cases", "parquet")
    frame = pd.read_parquet(out)
    assert str(frame["opened_at"].dtype) == "datetime64[us, UTC]"
    assert frame["closed"].dtype == bool and frame["closed"].all()
    assert set(frame["outcome"]) <= {"VIOLATED", "HELD", "INVALID"}
    # JSON columns hold the case data the log recorded.
    with EventReader(sim_log) as log:
        case_id, data = log.connection.execute(
            "SELECT case_id, json_extract(payload, '$.case.data') FROM events"
            " WHERE kind = 'CaseOpened' ORDER BY case_id LIMIT 1"
        ).fetchone()
    row = frame.set_index("case_id").loc[case_id]
    assert json.loads(row["data"]) == json.loads(data)


def test_the_turns_table_matches_the_view_and_a_duckdb_join(sim_log: Path, tmp_path: Path) -> None:
    """Turn-level totals agree with the view; the tables join on case_id in DuckDB."""
    turns, cases = tmp_path / "turns.parquet", tmp_path / "cases.parquet"
    _export(sim_log, turns, "turns", "parquet")
    _export(sim_log, cases, "cases", "parquet")
    with EventReader(sim_log) as log:
        tokens = log.connection.execute("SELECT SUM(output_tokens) FROM turns").fetchone()[0]
    con = duckdb.connect()
    joined = con.execute(
        "SELECT SUM(t.output_tokens), COUNT(DISTINCT c.case_id) FROM read_parquet(?) t"
        " JOIN read_parquet(?) c USING (case_id)",
        [str(turns), str(cases)],
    ).fetchone()
    assert joined[0] == tokens  # no retried turn in the sim: one attempt per turn
    assert joined[1] == _expected_rows(sim_log, "cases")


def test_every_column_is_documented() -> None:
    doc = (REPO / "docs" / "export.md").read_text(encoding="utf-8")
    for table, (columns, _) in TABLES.items():
        section = doc.split(f"### {table}", 1)[1].split("\n### ", 1)[0]
        for column in columns:
            assert f"| `{column.name}` | {column.type} |" in section, (table, column.name)


def test_the_default_export_is_still_conversations(sim_log: Path) -> None:
    result = CliRunner().invoke(main, ["export", str(sim_log)])
    assert result.exit_code == 0
    first = json.loads(result.stdout.splitlines()[0])
    assert {"case_id", "turns", "verdicts"} <= set(first)


def test_a_table_format_without_a_table_names_the_fix(sim_log: Path) -> None:
    result = CliRunner().invoke(main, ["export", str(sim_log), "--format", "csv"])
    assert result.exit_code != 0
    assert "--table" in result.output


def test_parquet_needs_a_file(sim_log: Path) -> None:
    result = CliRunner().invoke(
        main, ["export", str(sim_log), "--table", "cases", "--format", "parquet"]
    )
    assert result.exit_code != 0
    assert "--out" in result.output


def test_an_export_never_replaces_a_file_unasked(sim_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "cases.csv"
    out.write_text("keep me", encoding="utf-8")
    args = ["export", str(sim_log), "--table", "cases", "--format", "csv", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and out.read_text(encoding="utf-8") == "keep me"
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0
    assert out.read_text(encoding="utf-8").startswith("campaign,case_id,")


@pytest.mark.parametrize("table", list(TABLES))
def test_an_old_log_exports(table: str, tmp_path: Path) -> None:
    """tests/fixtures/events_v1.db, written by an earlier version, exports every table."""
    old = REPO / "tests" / "fixtures" / "events_v1.db"
    out = tmp_path / f"{table}.parquet"
    _export(old, out, table, "parquet")
    assert len(pd.read_parquet(out)) == _expected_rows(old, table) > 0
