"""The engine's hot path spells some encodings out by hand for speed (request keys, the sim's
answer seed, events built from validated parts). Each must give exactly the bytes of the
plain formula it replaced: a request key or a sim answer that changed would change every
log, cache hit and replay."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.models.sim import SimModel, _blob
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.model import GenerationParams, Message, request_key, request_key_text
from harness.vocabulary.relation import derive_seed, seed_deriver

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
    from harness.vocabulary.model import _FLAT_PARAMS

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
    from harness.running.engine import turn_seeder

    assert turn_seeder(campaign_seed)(case_id, turn) == derive_seed(campaign_seed, case_id, turn)


@settings(max_examples=200, deadline=None)
@given(msgs=messages)
async def test_sim_request_reads_the_messages_as_the_formulas_did(msgs: list[Message]) -> None:
    """The sim reads prompt, prior turns and request length in one pass over the messages:
    each as the formula it replaced (a differing one would change the sim's answers)."""
    from harness.vocabulary.simulation import SimHandler, SimRequest

    seen: list[SimRequest] = []
    model = SimModel("sim:x")
    model.handlers = [SimHandler("capture", 0, lambda req: seen.append(req) or "[a, b]")]
    reply = await model.complete(msgs, GenerationParams(seed=1))
    assert seen[0].prompt == next((m.content for m in reversed(msgs) if m.role == "user"), "")
    assert seen[0].prior_turns == sum(1 for m in msgs if m.role == "assistant")
    assert reply.usage.input_tokens == sum(len(m.content) for m in msgs) // 4 + 1


def _term_list_answer_as_first_written(req):  # type: ignore[no-untyped-def]
    """relations.metaquerier.sim.answer_term_list before its loop was tightened."""
    from relations.metaquerier.sim import _LIST_QUESTION, MetaQuerierTruth, _explicit_genders

    match = _LIST_QUESTION.search(req.prompt)
    if match is None:
        return None
    truth = req.truth(MetaQuerierTruth)
    explicit = _explicit_genders()
    gender = match.group("gender")
    again = req.prior_turns > 0
    named = []
    for term in (t.strip() for t in match.group("terms").split(",")):
        if not term:
            continue
        planted = truth.associations.get(term.lower(), {}).get(gender)
        if planted is not None:
            p = planted[1] if again else planted[0]
        elif explicit.get(term.lower()) == gender:
            p = truth.explicit_gender
        else:
            p = truth.background
        if req.rng.random() < p:
            named.append(term)
    return "[" + ", ".join(named) + "]"


_terms_pool = st.sampled_from(
    ["nurse", "Nurse ", "pilot", "woman", "Man", "engineer", " ", "", "x"]
)


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(_terms_pool | st.text(alphabet="abcN ,]", max_size=6), max_size=10),
    gender=st.sampled_from(["female", "male"]),
    prior=st.integers(0, 2),
    seed=st.integers(0, 2**32),
    planted=st.dictionaries(
        st.sampled_from(["nurse", "pilot", "engineer"]),
        st.dictionaries(
            st.sampled_from(["female", "male"]), st.tuples(st.floats(0, 1), st.floats(0, 1))
        ),
    ),
)
def test_term_list_answer_is_the_first_formula(
    terms: list[str], gender: str, prior: int, seed: int, planted: dict
) -> None:  # type: ignore[type-arg]
    """The sim's term-list answer (one draw per term, in order) as it was first written."""
    import random

    from harness.vocabulary.simulation import SimOptions, SimRequest
    from relations.metaquerier.sim import MetaQuerierTruth, answer_term_list

    prompt = f"In the following list: [{', '.join(terms)}], which ones are definitely {gender}?"
    truth = MetaQuerierTruth(associations=planted)

    def request() -> SimRequest:
        return SimRequest(
            [], prompt, prior, random.Random(seed), SimOptions(), {MetaQuerierTruth: truth}
        )

    assert answer_term_list(request()) == _term_list_answer_as_first_written(request())
