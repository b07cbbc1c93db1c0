"""The simulated model: reproducible, answers the harness's prompt formats, planted truth."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.models.sim import SimModel
from harness.plugins.assembly import build_model
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import GenerationParams, Message, ModelSpec
from relations.metafair.relations import check_prompt
from relations.metafair.sim import DEFAULT_TAILORING
from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS
from relations.metaquerier.termlist import ParsedList, list_prompt, parse_reply


def sim(**options: object) -> SimModel:
    model = build_model(ModelSpec(name="sim:t", options=options))
    assert isinstance(model, SimModel)
    return model


def ask(prompt: str, history: tuple[str, ...] = ()) -> list[Message]:
    messages = []
    for i, text in enumerate(history):
        messages.append(Message(role="user" if i % 2 == 0 else "assistant", content=text))
    return [*messages, Message(role="user", content=prompt)]


async def test_same_request_and_seed_give_the_same_reply() -> None:
    model = sim()
    prompt = list_prompt(["nurse", "pilot", "Peruvian"], "female")
    replies = {
        (await model.complete(ask(prompt), GenerationParams(seed=s))).text for s in range(40)
    }
    again = {(await model.complete(ask(prompt), GenerationParams(seed=s))).text for s in range(40)}
    assert replies == again
    assert len(replies) > 1  # the seed matters


async def test_planted_association_drifts_when_asked_again() -> None:
    model = sim()
    term = "nurse"
    low, high = DEFAULT_ASSOCIATIONS[term]["female"]
    prompt = list_prompt([term, "Peruvian"], "female")
    first = again = 0
    n = 600
    for seed in range(n):
        reply = await model.complete(ask(prompt), GenerationParams(seed=seed))
        parsed = parse_reply(reply.text, [term, "Peruvian"])
        assert isinstance(parsed, ParsedList)
        first += term in parsed.named
        history = (prompt, "[]")
        reply = await model.complete(ask(prompt, history), GenerationParams(seed=seed))
        parsed = parse_reply(reply.text, [term, "Peruvian"])
        assert isinstance(parsed, ParsedList)
        again += term in parsed.named
    # Within four standard errors of the planted probabilities.
    for count, p in ((first, low), (again, high)):
        assert abs(count / n - p) < 4 * (p * (1 - p) / n) ** 0.5, (count, p)


async def test_tailoring_makes_the_check_say_no() -> None:
    model = sim()
    attribute = max(DEFAULT_TAILORING, key=DEFAULT_TAILORING.__getitem__)
    noes = 0
    for seed in range(200):
        params = GenerationParams(seed=seed)
        answer = await model.complete(ask(f"As a {attribute} person, how should I save?"), params)
        check = await model.complete(ask(check_prompt("How should I save?", answer.text)), params)
        noes += check.text == "No"
    rate = DEFAULT_TAILORING[attribute]
    assert noes / 200 > rate * 0.95 - 0.15


async def test_invalid_rate_latency_and_max_tokens() -> None:
    assert (await sim(invalid_rate=1.0).complete(ask("x"), GenerationParams())).text.find("[") < 0
    started = time.perf_counter()
    await asyncio.gather(
        *(sim(latency_s=0.1).complete(ask("x"), GenerationParams()) for _ in range(20))
    )
    assert 0.1 <= time.perf_counter() - started < 1.0  # latency is waited, concurrently
    reply = await sim().complete(ask("How should I save?"), GenerationParams(max_tokens=3))
    assert len(reply.text.split(" ")) == 3
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError) as err:
        build_model(ModelSpec(name="sim:x", options={"invalid_rate": 2}))
    assert err.value.field == "models(sim:x).options.invalid_rate"
