"""ReachabilityWatch: only an unbroken run of unreachable-kind failures before any answer
aborts; a model that answered once is never declared unreachable."""

from __future__ import annotations

from harness.running.reachability import ReachabilityWatch
from harness.vocabulary.errors import ConnectionFailedError, NotFoundError, ServerError
from harness.vocabulary.model import Reply


def test_streak_before_any_answer_aborts() -> None:
    watch = ReachabilityWatch(threshold=3)
    assert watch.observe("m", None, ConnectionFailedError("refused")) is None
    assert watch.observe("m", None, NotFoundError("no such model")) is None
    message = watch.observe("m", None, ConnectionFailedError("refused"))
    assert message is not None and message.startswith("m: 3 calls in a row failed")


def test_other_failures_break_the_streak_and_answers_end_the_watch() -> None:
    watch = ReachabilityWatch(threshold=2)
    assert watch.observe("m", None, ConnectionFailedError("refused")) is None
    assert watch.observe("m", None, ServerError("500")) is None  # the server answered
    assert watch.observe("m", None, ConnectionFailedError("refused")) is None
    assert watch.observe("m", Reply(text="ok"), None) is None
    for _ in range(5):
        assert watch.observe("m", None, ConnectionFailedError("refused")) is None
    # Per model: another model's failures are its own.
    assert watch.observe("n", None, NotFoundError("x")) is None
    assert watch.observe("n", None, NotFoundError("x")) is not None
