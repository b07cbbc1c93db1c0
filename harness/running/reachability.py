"""Telling a model that cannot be reached at all from one that fails now and then.

A wrong base URL, a dead port, a DNS failure or a model name the server does not know
makes every call fail the same way; retrying each case's turns until they give up would
close the whole campaign as INVALID and report it "completed". `ReachabilityWatch` sees
every attempt's outcome and, once a model has failed ``threshold`` times in a row with
such an error and has never answered, says why the campaign must abort.
"""

from __future__ import annotations

from collections import Counter

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
            f"last error: {error}. The campaign stopped before closing cases as INVALID: fix "
            "the model's base URL (options.base_url or the SDK's environment variable) or "
            "its name, then run the campaign again"
        )
