"""The engine's hot path spells some encodings out by hand for speed (request keys, the sim's
answer seed, events built from validated parts). Each must give exactly the bytes of the
plain formula it replaced: a request key or a sim answer that changed would change every
log, cache hit and replay."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.answer_shape import AnswerShape
from harness.model import GenerationParams, Message, request_key, request_key_text
from harness.relation import derive_seed, seed_deriver
from harness.sim import SimModel, _blob

# Any text, surrogates included (json.dumps passes them through; both must agree).
texts = st.text(alphabet=st.characters(), max_size=40) | st.sampled_from(
    ["", '"', "\\", "\n\t\x00\x1f\x7f", "é ü 中文 🙂", "\ud800", "</script>", "\u2028"]
)
messages = st.lists(
    st.builds(Message, role=st.sampled_from(["system", "user", "assistant"]), content=texts),
    max_size=5,
)
params = st.builds(
    GenerationParams,
    temperature=st.none() | st.floats(0, 2) | st.floats(),  # NaN and infinities included
    max_tokens=st.none() | st.integers(1, 4096) | st.integers(),
    seed=st.none() | st.integers(0, 2**31) | st.integers(),
    top_p=st.none() | st.floats(0, 1) | st.floats(),
    answer_shape=st.none()
    | st.builds(lambda o: AnswerShape(kind="terms", options=tuple(o)), st.lists(texts, max_size=3)),
)


def reference_text(model: str, msgs: list[Message], p: GenerationParams) -> str:
    """What request_key hashed as it was first written: json.dumps of the whole request."""
    payload = {
        "model": model,
        "messages": [m.model_dump() for m in msgs],
        "params": p.model_dump(exclude_none=True),
    }
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(model=texts, msgs=messages, p=params)
def test_request_key_is_the_json_dumps_key(model: str, msgs: list[Message], p: GenerationParams):
    expected = reference_text(model, msgs, p)
    assert request_key_text(model, msgs, p) == expected
    try:
        blob = expected.encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate: no key either way (request_key raises as before)
    assert request_key(model, msgs, p) == hashlib.sha256(blob).hexdigest()[:32]


def test_request_key_knows_every_generation_param():
    """The key writes the parameters field by field: a new field must be added there."""
    from harness.model import _FLAT_PARAMS

    assert set(GenerationParams.model_fields) == {"answer_shape", *_FLAT_PARAMS}
    assert list(_FLAT_PARAMS) == sorted(_FLAT_PARAMS) and _FLAT_PARAMS[0] > "answer_shape"


@settings(max_examples=300, deadline=None)
@given(msgs=messages)
def test_sim_blob_is_the_json_dumps_text(msgs: list[Message]):
    expected = json.dumps([{"role": m.role, "content": m.content} for m in msgs], sort_keys=True)
    assert _blob(msgs) == expected


async def test_sim_answer_seed_unchanged():
    """The sim seeds its answer from the blob: same seed, same answer as the formula."""
    model = SimModel("sim:x")
    msgs = [Message(role="user", content="Name the terms: [nurse, pilot] é")]
    p = GenerationParams(seed=7, temperature=0.0)
    blob = json.dumps([m.model_dump() for m in msgs], sort_keys=True)
    assert derive_seed("sim:x", 7, 0.0, _blob(msgs)) == derive_seed("sim:x", 7, 0.0, blob)
    assert (await model.complete(msgs, p)).text == (await model.complete(msgs, p)).text


# Seeds hash UTF-8: no surrogates (derive_seed cannot encode them either).
seed_texts = st.text(max_size=40)
parts = st.lists(
    st.one_of(seed_texts, st.integers(), st.floats(allow_nan=False), st.none()), max_size=4
)


@settings(max_examples=300, deadline=None)
@given(parts, st.one_of(seed_texts, st.integers()))
def test_seed_deriver_is_derive_seed_with_a_last_part(leading: list[object], last: object) -> None:
    assert seed_deriver(*leading)(last) == derive_seed(*leading, last)


@settings(max_examples=300, deadline=None)
@given(st.integers(), seed_texts, st.integers(min_value=0))
def test_turn_seeder_is_derive_seed_of_campaign_case_and_turn(
    campaign_seed: int, case_id: str, turn: int
) -> None:
    from harness.engine import turn_seeder

    assert turn_seeder(campaign_seed)(case_id, turn) == derive_seed(campaign_seed, case_id, turn)


@settings(max_examples=200, deadline=None)
@given(msgs=messages)
async def test_sim_request_reads_the_messages_as_the_formulas_did(msgs: list[Message]) -> None:
    """The sim reads prompt, prior turns and request length in one pass over the messages:
    each as the formula it replaced (a differing one would change the sim's answers)."""
    from harness.sim import SimHandler, SimRequest

    seen: list[SimRequest] = []
    model = SimModel("sim:x")
    model.handlers = [SimHandler("capture", 0, lambda req: seen.append(req) or "[a, b]")]
    reply = await model.complete(msgs, GenerationParams(seed=1))
    assert seen[0].prompt == next((m.content for m in reversed(msgs) if m.role == "user"), "")
    assert seen[0].prior_turns == sum(1 for m in msgs if m.role == "assistant")
    assert reply.usage.input_tokens == sum(len(m.content) for m in msgs) // 4 + 1
