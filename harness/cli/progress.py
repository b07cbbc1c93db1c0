"""The live progress display: cases, outcomes, calls, tokens, spend and retries."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column

from harness.reporting.terminal_text import printable
from harness.vocabulary.errors import ModelError
from harness.vocabulary.model import Reply
from harness.vocabulary.relation import Case, Verdict


class RichProgress:
    """A `ProgressSink` drawing one bar on stderr (a plain line per second when not a TTY).

    At 80 columns the essentials stay visible: done/total, the case rate, the ETA, the
    spend and the elapsed time come first and have fixed widths; the bar shrinks and the
    detail (outcomes, calls, tokens, retries, vendor status) is cut with an ellipsis.
    """

    def __init__(
        self, total: int | None, *, console: Console | None = None, label: str = "cases"
    ) -> None:
        """``total``: the planned cases (None: not known yet, see `cases_planned`)."""
        self.console = console or Console(stderr=True)
        self.outcomes: Counter[str] = Counter()
        self.calls = self.failures = self.retries = 0
        self.tokens = 0
        self.spend = 0.0
        self._started = time.monotonic()
        self._progress = Progress(
            # TextColumn formats its text with str.format: braces in a label are literal.
            TextColumn(
                printable(label, keep_layout=False).replace("{", "{{").replace("}", "}}"),
                markup=False,
            ),
            BarColumn(bar_width=None, table_column=Column(min_width=4, ratio=1)),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            # Rates, spend and the detail are data, never markup.
            TextColumn("{task.fields[rate]}", markup=False, table_column=Column(no_wrap=True)),
            TextColumn("ETA", markup=False, table_column=Column(no_wrap=True)),
            TimeRemainingColumn(table_column=Column(no_wrap=True)),
            TextColumn("{task.fields[spend]}", markup=False, table_column=Column(no_wrap=True)),
            TimeElapsedColumn(table_column=Column(no_wrap=True)),
            TextColumn(
                "{task.fields[stats]}",
                markup=False,
                table_column=Column(no_wrap=True, overflow="ellipsis", ratio=3, min_width=1),
            ),
            console=self.console,
            transient=False,
            expand=True,
        )
        self._task = self._progress.add_task(label, total=total, stats="", rate="", spend="")
        self._status: Callable[[], str] | None = None
        self._refreshed_at = 0.0

    def set_status_source(self, source: Callable[[], str]) -> None:
        """Extra status (vendor rate, tokens, spend, retries) shown after the counters."""
        self._status = source

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._refresh()
        self._progress.stop()

    # The bar is drawn 10 times a second by Rich's thread: figures pushed more often than
    # that (a case closes hundreds of times a second) would never be seen.
    REFRESH_S = 0.1

    def _refresh(self) -> None:
        now = time.monotonic()
        self._refreshed_at = now
        elapsed = max(now - self._started, 1e-6)
        o = self.outcomes
        done = sum(o.values())
        stats = (
            f"violated {o['VIOLATED']} held {o['HELD']} invalid {o['INVALID']}"
            + (f" refused {o['REFUSED']}" if o["REFUSED"] else "")
            + " | "
            f"calls {self.calls} ({self.calls / elapsed:.1f}/s) tokens {self.tokens} "
            f"retries {self.retries} failed {self.failures}"
        )
        extra = self._status() if self._status is not None else ""
        if extra:
            stats += f" | {extra}"
        self._progress.update(
            self._task,
            completed=done,
            stats=printable(stats, keep_layout=False),
            rate=f"{done / elapsed:.1f}/s",
            spend=f"${self.spend:.4f}",
        )

    def case_started(self, case: Case) -> None:
        pass

    def case_closed(self, case: Case, verdict: Verdict) -> None:
        self.outcomes[verdict.outcome.value] += 1
        if time.monotonic() - self._refreshed_at >= self.REFRESH_S:
            self._refresh()

    def cases_planned(self, total: int) -> None:
        """The planned cases, once known (an import counts them while it starts reading)."""
        self._progress.update(self._task, total=total)

    def cases_closed(self, outcomes: Mapping[str, int]) -> None:
        """Cases closed elsewhere, counted by outcome (an import's reading process)."""
        self.outcomes.update(outcomes)
        if time.monotonic() - self._refreshed_at >= self.REFRESH_S:
            self._refresh()

    def call_ended(self, model: str, reply: Reply | None, error: ModelError | None) -> None:
        self.calls += 1
        if reply is not None:
            self.tokens += reply.usage.input_tokens + reply.usage.output_tokens
            self.spend += reply.cost_usd or 0.0
        else:
            self.failures += 1

    def retry_scheduled(self, model: str, wait_s: float) -> None:
        self.retries += 1
