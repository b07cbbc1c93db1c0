"""The HTML report: one self-contained page per campaign (`render_html`), written by
``harness report DB --html OUT.html`` and ``harness run ... --html OUT.html``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.reporting.html.page import render_html
from harness.reporting.output_files import check_output, write_output
from harness.reporting.tables import ReportSection, Table
from harness.store.log import Log, LogLike

# Conversations embedded by default: enough for every case of most campaigns; a larger
# campaign keeps its violations first (docs/report.md has the sizes measured).
DEFAULT_MAX_CASES = 20000


def write_html_report(
    db: LogLike,
    out: str | Path,
    *,
    campaign: str | None = None,
    sections: Sequence[ReportSection],
    force: bool = False,
    max_cases: int | None = DEFAULT_MAX_CASES,
    tables: list[Table] | None = None,
    **options: Any,
) -> Path:
    """Render ``campaign`` of the log ``db`` (a SQLite path or a PostgreSQL URL) to ``out``
    (never over an existing file unless ``force``, never over the log); returns the path
    written. ``tables``: the report's tables when the caller has built them already (a
    report of a million answers is not computed twice); ``sections``: those to build
    otherwise (`harness.plugins.family_parts.report_sections` for every registered one)."""
    db = Log.at(db)
    target = check_output(out, inputs=[db], force=force, option="--html")
    with db.reader() as log:
        text = render_html(
            log, campaign, sections=sections, max_cases=max_cases, tables=tables, **options
        )
    write_output(target, text, inputs=[db], force=force, option="--html")
    return target


__all__ = ["DEFAULT_MAX_CASES", "render_html", "write_html_report"]
