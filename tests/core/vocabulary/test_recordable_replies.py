"""A reply is data: any text a vendor sends can be recorded (`recordable_reply`), and the
event that carries the repaired text keeps the original escaped, in a schema that old logs
still decode byte for byte (ReplyReceived v2, AskFailed v2)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harness.vocabulary.events import (
    AskFailed,
    ReplyReceived,
    decode_event,
    encode_event,
    reads_as_current,
)
from harness.vocabulary.model import Reply, recordable_reply, recordable_text

# Every code point, lone surrogates included (what a JSON "\ud800" decodes to).
ANY_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))


@given(ANY_TEXT, st.one_of(st.none(), ANY_TEXT))
def test_any_reply_becomes_recordable_and_keeps_its_original(text: str, finish: str | None) -> None:
    reply = recordable_reply(Reply(text=text, finish_reason=finish))
    kind, version, payload = encode_event(ReplyReceived(turn=0, reply=reply))
    decoded = decode_event(kind, version, payload)
    assert isinstance(decoded, ReplyReceived) and decoded.reply == reply
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert reply.raw_escaped is not None
        assert reply.raw_escaped.encode("ascii").decode("unicode_escape") == text
        # Only the unencodable code points changed.
        assert len(reply.text) <= len(text)
        assert reply.text.replace("\ufffd", "") == "".join(
            c for c in text if not 0xD800 <= ord(c) <= 0xDFFF
        ).replace("\ufffd", "")
    else:
        assert reply.text == text and reply.raw_escaped is None


def test_clean_replies_are_untouched_and_written_as_before() -> None:
    reply = Reply(text="plain \x00 text é 😀", request_id="r1")
    assert recordable_reply(reply) is reply
    _, version, payload = encode_event(ReplyReceived(turn=1, reply=reply))
    assert version == 2 and "raw_escaped" not in payload
    # The v1 payload of the same event is the same bytes, and reads as the current version.
    assert decode_event("ReplyReceived", 1, payload) == ReplyReceived(turn=1, reply=reply)
    assert reads_as_current("ReplyReceived", 1) and reads_as_current("AskFailed", 1)
    assert not reads_as_current("ReplyReceived", 3)


def test_surrogate_pairs_are_joined_and_lone_ones_replaced() -> None:
    assert recordable_text("a\ud83d\ude00b") == "a😀b"
    assert recordable_text("a\ud800b\udfffc") == "a\ufffdb\ufffdc"


def test_old_ask_failed_rows_decode_and_suspend_is_new() -> None:
    old = json.dumps(
        {
            "kind": "AskFailed",
            "turn": 0,
            "attempt": 4,
            "error_kind": "server_error",
            "message": "HTTP 500",
            "retryable": True,
            "decision": "give_up",
        },
        separators=(",", ":"),
    )
    event = decode_event("AskFailed", 1, old)
    assert isinstance(event, AskFailed) and event.decision == "give_up"
    suspended = event.model_copy(update={"decision": "suspend"})
    kind, version, payload = encode_event(suspended)
    assert version == 2 and decode_event(kind, version, payload) == suspended
