"""Telling a model that cannot be reached at all from one that fails now and then.

A wrong base URL, a dead port, a DNS failure or a model name the server does not know
makes every call fail the same way; retrying each case's turns until they give up would
close the whole campaign as INVALID and report it "completed". `ReachabilityWatch` sees
every attempt's outcome and, once a model has failed ``threshold`` times in a row with
such an error and has never answered, says why the campaign must abort.

`OutageWatch` does the same for transient failures (5xx, timeouts, 429s...): a run of them
pauses the model, and one that outlasts its pauses aborts the campaign instead of leaving
case after case failed, retryable.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from harness.vocabulary.errors import ModelError
from harness.vocabulary.model import Reply

# Failures that mean "this endpoint or model name is wrong", not "try again later".
UNREACHABLE_KINDS = frozenset({"connection", "not_found"})
DEFAULT_THRESHOLD = 5


class ReachabilityWatch:
    """Counts, per model, consecutive unreachable-kind failures until its first answer."""

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._answered: set[str] = set()
        self._streak: Counter[str] = Counter()

    def observe(self, model: str, reply: Reply | None, error: ModelError | None) -> str | None:
        """Record one attempt's outcome; the abort message once ``model`` is unreachable."""
        if model in self._answered:
            return None
        if reply is not None:
            self._answered.add(model)
            self._streak.pop(model, None)
            return None
        if error is None or error.kind not in UNREACHABLE_KINDS:
            self._streak[model] = 0  # a different failure: the endpoint answered something
            return None
        self._streak[model] += 1
        if self._streak[model] < self.threshold:
            return None
        return (
            f"{model}: {self._streak[model]} calls in a row failed and none has succeeded; "
            f"last error: {error}. The campaign stopped before closing cases as INVALID; "
            f"nothing recorded is paid again. Fix: harness resume LOG --base-url "
            f"'{model}=URL' (recorded in the log, replacing options.base_url, or an http: "
            "target's options.url), or fix the "
            "SDK's environment variable and run harness resume LOG; a wrong model name "
            "needs a new campaign (harness run FILE --new-campaign)"
        )


@dataclass(frozen=True)
class OutagePause:
    """Start no call to the model for ``seconds``."""

    seconds: float


@dataclass(frozen=True)
class OutageAbort:
    """The outage outlasted every pause: abort the campaign with ``message``."""

    message: str


class OutageWatch:
    """Tells a vendor outage from failures now and then, per model.

    A run of ``pause_after`` transient failures (timeouts, 5xx, 429s, malformed bodies,
    dropped connections) with no answer in between pauses the model: no call starts for
    ``first_pause_s``, doubled at each further pause (capped at ``cap_s``), and at least the
    server's Retry-After. Failures of calls that were already under way when a pause began
    are not counted again. When the failures go on after ``max_pauses`` pauses, the
    campaign aborts (exit 3): closing its cases, or suspending them one after another,
    would only burn attempts against a vendor that is down. One answer ends the outage.
    """

    def __init__(
        self,
        *,
        pause_after: int = 4,
        first_pause_s: float = 1.0,
        max_pauses: int = 4,
        cap_s: float = 60.0,
    ) -> None:
        self.pause_after = pause_after
        self.first_pause_s = first_pause_s
        self.max_pauses = max_pauses
        self.cap_s = cap_s
        self._streak: Counter[str] = Counter()
        self._pauses: Counter[str] = Counter()
        self._failed: Counter[str] = Counter()  # transient failures since the last answer
        self._since: dict[str, float] = {}  # when the current run of failures began
        self._quiet_until: dict[str, float] = {}  # failures before this are of calls paused
        self._answered: set[str] = set()  # models that answered at least once in this run
        self._last_error: dict[str, ModelError] = {}

    def observe(
        self,
        model: str,
        reply: Reply | None,
        error: ModelError | None,
        *,
        now: float | None = None,
    ) -> OutagePause | OutageAbort | None:
        """Record one attempt's outcome; what the engine must do about the model."""
        now = time.monotonic() if now is None else now
        if reply is not None:
            self._answered.add(model)
        elif error is not None and error.kind != "cancelled":
            self._last_error[model] = error
        if reply is not None or error is None or not error.retryable:
            # An answer, or a failure the server chose (a 400, a refusal): it is up.
            self._streak.pop(model, None)
            self._pauses.pop(model, None)
            self._failed.pop(model, None)
            self._since.pop(model, None)
            return None
        if error.kind == "cancelled":
            return None
        self._failed[model] += 1
        self._since.setdefault(model, now)
        if now < self._quiet_until.get(model, 0.0):
            return None  # a call sent before the pause began
        self._streak[model] += 1
        if self._streak[model] < self.pause_after:
            return None
        self._streak[model] = 0
        self._pauses[model] += 1
        if self._pauses[model] > self.max_pauses:
            return OutageAbort(
                f"{model}: vendor outage: {self._failed[model]} calls failed in "
                f"{now - self._since[model]:.0f}s with transient errors and none was answered, "
                f"through {self.max_pauses} pauses; last error: {error}"
            )
        wait = min(self.cap_s, self.first_pause_s * 2 ** (self._pauses[model] - 1))
        if error.retry_after is not None:
            wait = max(wait, min(error.retry_after, self.cap_s))
        self._quiet_until[model] = now + wait
        return OutagePause(wait)

    def never_answered(self, model: str) -> str | None:
        """Why ``model`` counts as not answering at all (every call of this run failed with
        a transient error), or None. A run too short to reach ``max_pauses`` still ends
        as an abort, not as a run with work left, when its model never answered."""
        error = self._last_error.get(model)
        if model in self._answered or error is None or not error.retryable:
            return None
        return (
            f"{model}: vendor outage: no call was answered in this run "
            f"({self._failed[model]} failed with transient errors); last error: {error}"
        )
