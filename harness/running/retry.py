"""Retry decisions: whether a failed attempt is retried, given up or aborts the campaign.

Decisions are values (`RetryDecision`) that are logged in `AskFailed` before the caller
acts on them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from harness.vocabulary.errors import AuthenticationError, ModelError, TargetConfigError
from harness.vocabulary.events import AskFailed


@dataclass(frozen=True)
class RetryDecision:
    action: Literal["retry", "give_up", "abort", "suspend"]
    wait_s: float
    reason: str


def failure_event(turn: int, attempt: int, error: ModelError, decision: RetryDecision) -> AskFailed:
    """The logged record of a failed attempt and the retry decision taken about it."""
    return AskFailed(
        turn=turn,
        attempt=attempt,
        error_kind=error.kind,
        message=str(error),
        retryable=error.retryable,
        decision=decision.action,
        wait_s=decision.wait_s,
        status=error.status,
        retry_after=error.retry_after,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, honouring the server's Retry-After."""

    max_attempts: int = 4
    base_s: float = 0.5
    cap_s: float = 60.0
    seed: int = 0

    def decide(self, error: ModelError, attempt: int) -> RetryDecision:
        """What to do after ``attempt`` (counted) attempts of a turn, the last with ``error``.

        A transient failure (timeout, 5xx, 429, malformed body, reset connection) that
        outlasts ``max_attempts`` is *suspended*, never given up: a vendor failure is not a
        verdict, so the turn stays open for `harness resume` and its case is not closed.
        Only a failure that retrying cannot change (a 400, a refusal) is given up."""
        if isinstance(error, AuthenticationError):
            return RetryDecision("abort", 0.0, "authentication failed: no call can succeed")
        if isinstance(error, TargetConfigError):
            return RetryDecision(
                "abort", 0.0, "the target's options are wrong: no call can succeed"
            )
        if not error.retryable:
            return RetryDecision("give_up", 0.0, f"{error.kind} is not retryable")
        if attempt >= self.max_attempts:
            return RetryDecision(
                "suspend", 0.0, f"{attempt} attempts made; the turn stays open for resume"
            )
        if error.retry_after is not None:
            return RetryDecision(
                "retry", min(max(error.retry_after, 0.0), self.cap_s), "retry-after"
            )
        # Jitter is seeded by the attempt so retry schedules are reproducible in tests.
        backoff = min(self.cap_s, self.base_s * 2 ** (attempt - 1))
        wait = random.Random(self.seed * 1000 + attempt).uniform(backoff / 2, backoff)
        return RetryDecision("retry", wait, "backoff")
