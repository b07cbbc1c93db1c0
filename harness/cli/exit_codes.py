"""The exit status of every ``harness`` command, one table (documented in docs/errors.md).

A script running campaigns must tell a finished campaign from one that stopped, aborted or
produced nothing without reading the output; so every command ends through this table.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the CLI imports this table, and not the engine
    from harness.running.engine import RunSummary


class ExitCode(IntEnum):
    COMPLETED = 0  # the command did what was asked; a campaign closed every planned case
    DIFFERENCES = 1  # `replay --verify` found asks or verdicts that differ
    USAGE = 2  # configuration or usage error (HarnessError, click usage errors)
    ABORTED = 3  # a vendor error stopped the campaign (authentication, a dead endpoint, an outage)
    CEILING = 4  # stopped by the spending ceiling; `harness resume --spend-ceiling` continues
    UNFINISHED = 5  # ended with cases still open (failed, retryable), or no call got an answer
    GATE_FAILED = 6  # `harness check`: a finding surviving the correction meets a --fail-on rule
    INTERRUPTED = 130  # Ctrl-C / SIGTERM: stopped cleanly, resumable


# The engine's stop reason for a ceiling stop starts with this (harness.running.engine).
CEILING_STOP_PREFIX = "spending ceiling"


def unfinished_reason(summary: RunSummary, cases_to_close: int | None) -> str:
    """Why a campaign that ran to its end did not finish its work ("" when it did)."""
    if summary.retryable:
        return (
            f"{summary.retryable} cases failed, retryable (transient vendor failures outlasted "
            "max_attempts; they are not closed): run 'harness resume' once the vendor answers"
        )
    done = summary.cases_closed + summary.not_drawn  # not drawn: their relation was decided
    if cases_to_close is not None and done < cases_to_close:
        return f"{cases_to_close - done} of {cases_to_close} cases still open"
    if summary.calls and summary.failures >= summary.calls and not summary.cached:
        return f"every one of {summary.calls} calls failed: no case got an answer"
    return ""


def campaign_exit_code(summary: RunSummary, cases_to_close: int | None = None) -> ExitCode:
    """The exit status of `harness run`/`resume` from the run's summary.

    ``cases_to_close``: how many cases this run was to close (planned minus already closed).
    """
    if summary.status == "aborted":
        return ExitCode.ABORTED
    if summary.status == "stopped":
        if summary.reason.startswith(CEILING_STOP_PREFIX):
            return ExitCode.CEILING
        return ExitCode.INTERRUPTED
    if unfinished_reason(summary, cases_to_close):
        return ExitCode.UNFINISHED
    return ExitCode.COMPLETED
