"""ReachabilityWatch: only an unbroken run of unreachable-kind failures before any answer
aborts; a model that answered once is never declared unreachable."""

from __future__ import annotations

from harness.running.reachability import OutageAbort, OutagePause, OutageWatch, ReachabilityWatch
from harness.vocabulary.errors import (
    BadRequestError,
    ConnectionFailedError,
    ModelTimeoutError,
    NotFoundError,
    RateLimitedError,
    ServerError,
)
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


# --- OutageWatch: a run of transient failures pauses the model, then aborts -------------


def test_a_run_of_transient_failures_pauses_doubling_then_aborts() -> None:
    watch = OutageWatch(pause_after=3, first_pause_s=1.0, max_pauses=2, cap_s=60.0)
    now = 0.0
    actions = []
    for _ in range(9):
        now += 0.1
        actions.append(watch.observe("m", None, ServerError("HTTP 500"), now=now))
        if isinstance(actions[-1], OutagePause):
            now += actions[-1].seconds  # the pause is kept: the next call starts after it
    assert actions[:2] == [None, None] and actions[2] == OutagePause(1.0)
    assert actions[3:5] == [None, None] and actions[5] == OutagePause(2.0)
    last = actions[8]
    assert isinstance(last, OutageAbort)
    assert last.message.startswith("m: vendor outage: 9 calls failed")
    assert "HTTP 500" in last.message


def test_retry_after_lengthens_a_pause_and_calls_under_way_are_not_counted() -> None:
    watch = OutageWatch(pause_after=2, first_pause_s=1.0, max_pauses=5)
    assert watch.observe("m", None, RateLimitedError("429"), now=0.0) is None
    pause = watch.observe("m", None, RateLimitedError("429", retry_after=7.0), now=0.1)
    assert pause == OutagePause(7.0)
    # Calls sent before the pause come back during it: not a new run of failures.
    for t in (0.2, 1.0, 5.0):
        assert watch.observe("m", None, ModelTimeoutError("timeout"), now=t) is None
    assert watch.observe("m", None, ModelTimeoutError("timeout"), now=7.5) is None
    assert watch.observe("m", None, ModelTimeoutError("timeout"), now=7.6) == OutagePause(2.0)


def test_an_answer_or_a_server_verdict_ends_the_outage() -> None:
    watch = OutageWatch(pause_after=2, first_pause_s=1.0, max_pauses=0)
    assert watch.observe("m", None, ServerError("500"), now=0.0) is None
    assert watch.observe("m", Reply(text="ok"), None, now=0.1) is None
    assert watch.observe("m", None, ServerError("500"), now=0.2) is None
    assert watch.observe("m", None, BadRequestError("400"), now=0.3) is None  # it answered
    assert watch.observe("m", None, ServerError("500"), now=0.4) is None
    assert watch.observe("n", None, ServerError("500"), now=0.4) is None  # per model
    assert isinstance(watch.observe("m", None, ServerError("500"), now=0.5), OutageAbort)
