"""``harness export``: transcripts, one conversation per line (the default), or with
``--table`` a wide typed table (turns, verdicts or cases) as CSV, Parquet or JSONL."""

from __future__ import annotations

import sys

import click

from harness.cli.log_params import LogParam
from harness.reporting.conversation_export import write_jsonl
from harness.reporting.export_tables import (
    FORMATS,
    TABLES,
    require_pyarrow,
    table_rows,
    write_csv,
    write_parquet,
)
from harness.reporting.export_tables import write_jsonl as write_table_jsonl
from harness.reporting.output_files import atomic_output, check_output
from harness.store.log import Log
from harness.vocabulary.errors import ConfigError


@click.command("export")
@click.argument("db", type=LogParam())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default="jsonl",
    show_default=True,
    help="jsonl without --table: one conversation per line; with --table: csv, parquet or jsonl.",
)
@click.option(
    "--table",
    type=click.Choice(list(TABLES)),
    help="A wide table, one row per turn, verdict or case (columns: docs/export.md).",
)
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
@click.option("--force", is_flag=True, help="Replace the --out file if it exists.")
def command(
    db: Log, fmt: str, table: str | None, campaign: str | None, out: str | None, force: bool
) -> None:
    """Write every case of DB as one JSON object per line: case data, turns (prompt, full
    request, reply or error, usage) and verdicts (the relation's and any judge's); or, with
    --table, one typed table for pandas, polars, DuckDB or a spreadsheet."""
    if table is None:
        if fmt != "jsonl":
            raise ConfigError(
                f"--format {fmt} writes a table: say which",
                field="--table",
                fix="add --table turns, verdicts or cases (or leave --format out for "
                "conversations as JSONL)",
            )
        if out is None:
            n = write_jsonl(db, sys.stdout, campaign)
        else:
            check_output(out, inputs=[db], force=force)
            with atomic_output(out, inputs=[db], force=force) as fh:
                n = write_jsonl(db, fh, campaign)
        click.echo(f"exported {n} conversations", err=True)
        return
    if fmt == "parquet":
        require_pyarrow()
        if out is None:
            raise ConfigError(
                "parquet is binary and is not written to a terminal",
                field="--out",
                fix="add --out FILE.parquet",
            )
    if out is not None:
        check_output(out, inputs=[db], force=force)
    columns, _ = TABLES[table]
    with db.reader() as log:
        rows = table_rows(log, table, campaign)
        if out is None:
            n = (write_csv if fmt == "csv" else write_table_jsonl)(columns, rows, sys.stdout)
        else:
            newline = "" if fmt == "csv" else None
            with atomic_output(out, inputs=[db], force=force, newline=newline) as fh:
                if fmt == "parquet":
                    # The binary stream under the text handle: the same temporary file,
                    # renamed over the target only when the whole table is written.
                    n = write_parquet(columns, rows, fh.buffer)
                elif fmt == "csv":
                    n = write_csv(columns, rows, fh)
                else:
                    n = write_table_jsonl(columns, rows, fh)
    click.echo(f"exported {n} rows of {table}", err=True)
