"""The progress line at 80 columns keeps what a user needs: done/total, rate, ETA, spend
and elapsed; the detail is what gets cut."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from harness.cli.progress import RichProgress
from harness.vocabulary.relation import Case, Outcome, Verdict

CASE = Case(case_id="c", relation="r", model="m", index=0, repeat=0, seed=0, data={})
VENDOR = "openai:gpt-4o-mini 3.1 req/s (limit 5) tokens 123,456 retries 7 spend $0.0123 " * 2


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_essentials_stay_visible(width: int) -> None:
    buf = io.StringIO()
    progress = RichProgress(40, console=Console(file=buf, width=width))
    progress.set_status_source(lambda: VENDOR)
    with progress:
        for _ in range(12):
            progress.case_closed(CASE, Verdict(outcome=Outcome.HELD, reason=""))
        progress.spend = 0.0123
    line = buf.getvalue().rstrip("\n").splitlines()[-1]
    assert len(line) <= width
    assert "12/40" in line
    assert re.search(r"\d+\.\d/s", line), line
    assert re.search(r"ETA \d+:\d\d:\d\d", line), line
    assert "$0.0123" in line
    assert re.search(r"\d+:\d\d:\d\d\s+\S", line), line  # the elapsed time, then the detail


def test_figures_are_pushed_to_the_bar_at_most_ten_times_a_second() -> None:
    # The vendor status (a snapshot of every gate) and the stats line are rebuilt per
    # refresh, not per closed case: hundreds of cases a second must not pay for each.
    built = []

    def status() -> str:
        built.append(1)
        return "vendor"

    buf = io.StringIO()
    progress = RichProgress(5000, console=Console(file=buf, width=120))
    progress.set_status_source(status)
    with progress:
        for _ in range(5000):
            progress.case_closed(CASE, Verdict(outcome=Outcome.HELD, reason=""))
        assert len(built) < 50, len(built)
    assert "5000/5000" in buf.getvalue().splitlines()[-1]
