"""`harness.verifying._request_text.RequestText` writes the request of an ask from pieces kept
across a case's prefixes; it must be, for any conversation, the JSON of what `messages_for` builds
from the whole transcript (threads continued, forks, system prompts, failed turns, any text)."""

from __future__ import annotations

from fixtures.event_strategies import texts
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.store.fold import messages_for
from harness.verifying._request_text import RequestText
from harness.vocabulary.model import Message
from harness.vocabulary.relation import Ask, Transcript, Turn


def messages_json(messages: list[Message]) -> str:
    """The oracle: a request as an AskSent holds it, each message's own dump, comma-joined."""
    return "[" + ",".join(m.model_dump_json() for m in messages) + "]"


_threads = st.sampled_from(["a", "b", "c"])  # few names: threads are continued and forked
_asks = st.builds(
    Ask,
    thread=_threads,
    prompt=texts,
    system=st.none() | st.just("") | texts,
    fork_of=st.none() | _threads,
)
# A finished turn: answered (any text, the empty one included) or failed for good.
_outcomes = st.one_of(
    st.tuples(texts, st.none()), st.tuples(st.none(), texts.map(lambda t: "kind: " + t))
)
_conversations = st.lists(st.tuples(_asks, _outcomes), max_size=8)


@settings(deadline=None)  # a shared, loaded machine: no per-example time limit
@given(_conversations, _asks)
def test_every_request_is_the_json_of_messages_for_at_every_prefix(
    conversation: list[tuple[Ask, tuple[str | None, str | None]]], last: Ask
) -> None:
    requests = RequestText()
    transcript = Transcript()
    for index, (ask, (reply, error)) in enumerate(conversation):
        assert requests.json(ask) == messages_json(messages_for(ask, transcript))
        turn = Turn(index=index, ask=ask, reply=reply, error=error)
        transcript = transcript.extend([turn])
        requests.add(turn)
    assert requests.json(last) == messages_json(messages_for(last, transcript))


def test_escapes_are_written_as_the_message_models_write_them() -> None:
    text = 'quotes " and \\ and \n and \x00 and \x1f and \u2028 and é and 🙂 and </script>'
    ask = Ask(thread="t", prompt=text, system=text)
    turn = Turn(index=0, ask=ask, reply=text)
    requests = RequestText()
    requests.add(turn)
    follow = Ask(thread="t", prompt=text)
    wanted = messages_for(follow, Transcript(turns=(turn,)))
    assert requests.json(follow) == "[" + ",".join(m.model_dump_json() for m in wanted) + "]"
    assert len(wanted) == 4
