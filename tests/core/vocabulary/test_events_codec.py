"""`harness.vocabulary.events.encode_event` and `decode_event` call pydantic's serializer and
validator directly (not the model and adapter wrappers): the payload is still exactly
``model_dump_json()``, it decodes back to the same event, and a payload that does not
validate is still an `EventDecodeError`."""

from __future__ import annotations

import pytest
from fixtures.event_strategies import case_data, cases, texts, verdicts
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.vocabulary.errors import EventDecodeError
from harness.vocabulary.events import (
    CaseClosed,
    CaseOpened,
    ReplyReceived,
    VerdictReached,
    decode_event,
    encode_event,
)
from harness.vocabulary.model import Reply

_text, _data = texts, case_data
_finite = st.floats(allow_nan=False, allow_infinity=False)

_events = st.one_of(
    st.builds(CaseOpened, case=cases),
    st.builds(
        ReplyReceived,
        turn=st.integers(min_value=0),
        attempt=st.integers(min_value=1),
        reply=st.builds(
            Reply,
            text=_text,
            finish_reason=st.none() | _text,
            request_id=st.none() | _text,
            latency_s=_finite,
            cost_usd=st.none() | _finite,
        ),
        cached=st.booleans(),
    ),
    st.builds(
        VerdictReached,
        verdict=verdicts,
        source=_text,
    ),
    st.builds(CaseClosed, outcome=_text),
)


@settings(deadline=None)  # a shared, loaded machine: no per-example time limit
@given(_events)
def test_encode_is_model_dump_json_and_decodes_back(event: object) -> None:
    kind, version, payload = encode_event(event)  # type: ignore[arg-type]
    assert payload == event.model_dump_json()  # type: ignore[attr-defined]
    assert decode_event(kind, version, payload) == event


@pytest.mark.parametrize(
    "payload",
    [
        '{"kind":"CaseClosed"}',  # a required field missing
        '{"kind":"CaseClosed","outcome":"held","x":1}',  # a key the event does not have
        '{"kind":"CaseClosed","outcome":3}',  # a field of the wrong type
        '{"kind":"CaseClosed","outcome":"held"',  # not JSON
    ],
)
def test_a_payload_that_does_not_validate_is_an_event_decode_error(payload: str) -> None:
    with pytest.raises(EventDecodeError):
        decode_event("CaseClosed", 1, payload)
