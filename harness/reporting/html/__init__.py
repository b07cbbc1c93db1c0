"""The HTML report: one self-contained page per campaign (`render_html`), written by
``harness report DB --html OUT.html`` and ``harness run ... --html OUT.html``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.reporting.html.page import CAMPAIGN_META, render_html, write_page
from harness.reporting.output_files import atomic_output, check_output
from harness.reporting.tables import ReportSection, Table
from harness.store.log import Log, LogLike

# Conversations embedded by default: enough for every case of most campaigns; a larger
# campaign keeps its violations first (docs/report.md has the sizes measured).
DEFAULT_MAX_CASES = 20000


_HEAD_BYTES = 4096  # the page's <head> opens with its meta tags
_CAMPAIGN_TAG = re.compile(rf'<meta name="{CAMPAIGN_META}" content="([0-9A-Za-z_-]+)">'.encode())


def page_campaign(path: str | Path) -> str | None:
    """The campaign id of the HTML report at ``path`` (None: no such file, or not a page of
    this harness that names its campaign: pages written before the tag existed)."""
    try:
        with Path(path).open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return None
    found = _CAMPAIGN_TAG.search(head)
    return found.group(1).decode() if found else None


def check_html_output(
    db: Log, out: str | Path, *, campaign: str, force: bool = False, refresh: bool = False
) -> Path:
    """``out`` if the page of ``campaign`` may be written there (`check_output`); with
    ``refresh``, an existing page of the same campaign (a stale view of the same log) is
    replaced without ``force``."""
    same = refresh and page_campaign(out) == campaign
    return check_output(out, inputs=[db], force=force or same, option="--html")


def write_html_report(
    db: LogLike,
    out: str | Path,
    *,
    campaign: str | None = None,
    sections: Sequence[ReportSection],
    force: bool = False,
    refresh: bool = False,
    max_cases: int | None = DEFAULT_MAX_CASES,
    tables: list[Table] | None = None,
    **options: Any,
) -> Path:
    """Render ``campaign`` of the log ``db`` (a SQLite path or a PostgreSQL URL) to ``out``
    (never over an existing file unless ``force``, or ``refresh`` and the file is this
    campaign's page, never over the log); returns the path written. ``tables``: the
    report's tables when the caller has built them already (a report of a million answers
    is not computed twice); ``sections``: those to build otherwise
    (`harness.plugins.family_parts.report_sections` for every registered one)."""
    db = Log.at(db)
    with db.reader() as log:
        campaign = log.campaign_id(campaign)
        target = check_html_output(db, out, campaign=campaign, force=force, refresh=refresh)
        force = force or (refresh and page_campaign(target) == campaign)
        # Written in pieces as the page is made (`write_page`), to a temporary file that
        # replaces the target only once the page is whole.
        with atomic_output(target, inputs=[db], force=force, option="--html", newline="") as fh:
            write_page(
                fh, log, campaign, sections=sections, max_cases=max_cases, tables=tables,
                **options,
            )  # fmt: skip
    return target


__all__ = [
    "DEFAULT_MAX_CASES",
    "check_html_output",
    "page_campaign",
    "render_html",
    "write_html_report",
    "write_page",
]
