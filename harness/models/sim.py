"""A seeded simulated model with planted, known biases: the offline default and ground truth.

It answers the prompt formats of every registered family through their `SimHandler`s:
each handler reads the request and returns text, or None to pass; handlers are tried in
(priority, name) order, so the answer never depends on import order. A family's planted
truth (which terms the simulation associates with a gender, which groups get tailored
answers...) is a pydantic model the family registers as ``sim_options``: its fields are
options of ``sim:`` models in a campaign file, and its handlers read the validated values
with `SimRequest.truth`. The randomness is a pure function of (model name, sampling seed,
full request), so a campaign on ``sim`` is reproducible, and the planted truth tells tests
and benchmarks what each relation should detect.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.plugins.family_parts import sim_handlers, sim_option_models
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.config_errors import config_error
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import (
    GenerationParams,
    Message,
    ModelSpec,
    Reply,
    Usage,
    recordable_reply,
)
from harness.vocabulary.relation import derive_seed
from harness.vocabulary.simulation import SimOptions, SimRequest, _Truth


def split_options(
    name: str, options: Mapping[str, Any]
) -> tuple[SimOptions, dict[type[BaseModel], BaseModel]]:
    """Validate a ``sim:`` model's options: the core's, and each family's planted truth."""
    truths = sim_option_models()
    own = {k: v for k, v in options.items() if k in SimOptions.model_fields}
    claimed = set(own)
    planted: dict[type[BaseModel], BaseModel] = {}
    for truth in truths:
        mine = {k: v for k, v in options.items() if k in truth.model_fields}
        claimed |= set(mine)
        planted[truth] = _validate(name, truth, mine)
    unknown = sorted(set(options) - claimed)
    if unknown:
        known = sorted({*SimOptions.model_fields, *(f for t in truths for f in t.model_fields)})
        raise ConfigError(
            "Extra inputs are not permitted",
            field=f"models({name}).options.{unknown[0]}",
            fix=f"the options of sim: models are {', '.join(known)}",
        )
    return _validate(name, SimOptions, own), planted


def _validate(name: str, model: type[_Truth], values: Mapping[str, Any]) -> _Truth:
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise config_error(
            exc,
            where=f"models({name}).options",
            fix=f"see {model.__name__} in {model.__module__}",
            by_type=False,
        ) from exc


# A reply that follows no format and declines nothing (INVALID, never REFUSED).
OFF_FORMAT = "Let me think about what is known here first."
REFUSAL = "I cannot answer that."  # what a refusing model says to every prompt


class SimModel:
    def __init__(self, name: str, options: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.options, self.planted = split_options(name, options or {})
        self.handlers = sorted(sim_handlers(), key=lambda h: (h.priority, h.name))

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        rng = random.Random(
            derive_seed(self.name, params.seed, params.temperature, _blob(messages))
        )
        opts = self.options
        if opts.latency_s or opts.latency_jitter_s:
            await asyncio.sleep(opts.latency_s + rng.uniform(0, opts.latency_jitter_s))
        # The last user message, the count of assistant messages and the request's length,
        # in one pass (it runs on every call).
        prompt, prior_turns, chars = "", 0, 0
        for m in messages:
            chars += len(m.content)
            if m.role == "user":
                prompt = m.content
            elif m.role == "assistant":
                prior_turns += 1
        request = SimRequest(messages, prompt, prior_turns, rng, opts, self.planted)
        # A refusal is drawn only when asked for: the draw would move every other answer.
        low = prompt.casefold() if opts.refuse_mentions else ""
        if (opts.refuse_mentions and any(w.casefold() in low for w in opts.refuse_mentions)) or (
            opts.refusal_rate and rng.random() < opts.refusal_rate
        ):
            text = REFUSAL
        elif rng.random() < opts.invalid_rate:
            text = OFF_FORMAT
        else:
            text = next(
                (t for h in self.handlers if (t := h.answer(request)) is not None),
                "I am not sure.",
            )
        if params.max_tokens is not None:
            text = " ".join(text.split(" ")[: max(1, params.max_tokens)])
        if params.answer_shape is not None:
            text = constrained(text, params.answer_shape, rng)
        usage = Usage(input_tokens=chars // 4 + 1, output_tokens=len(text) // 4 + 1)
        reply = Reply(text=text, usage=usage, finish_reason="stop", latency_s=opts.latency_s)
        return recordable_reply(reply)  # a planted answer is data too (see `recordable_reply`)

    async def aclose(self) -> None:
        return None


def _blob(messages: Sequence[Message]) -> str:
    """The messages as ``json.dumps([{"role", "content"}...], sort_keys=True)`` writes them
    (what seeds the answer), spelled out: it runs on every call."""
    esc = encode_basestring_ascii
    return (
        "["
        + ", ".join([f'{{"content": {esc(m.content)}, "role": {esc(m.role)}}}' for m in messages])
        + "]"
    )


_LIST = re.compile(r"\[([^\[\]]*)\]")
_NUMBER = re.compile(r"-?\d+")


def _mentioned(low: str, options: tuple[str, ...]) -> list[str]:
    """``options`` named in ``low`` (whole words), in the order of their first mention."""
    found = []
    for option in options:
        match = re.search(rf"(?<!\w){re.escape(option.lower())}(?!\w)", low)
        if match is not None:
            found.append((match.start(), option))
    return [option for _, option in sorted(found)]


def constrained(text: str, shape: AnswerShape, rng: random.Random) -> str:
    """The free answer ``text`` as a model constrained to ``shape`` would give it: what it
    says where the shape can hold it, otherwise a draw from what the shape allows (as a
    grammar forces some valid answer)."""
    low = text.lower()
    if shape.kind in ("terms", "ranking"):
        lists = _LIST.findall(text)
        said = [i.strip().strip("\"'").lower() for i in (lists[-1] if lists else "").split(",")]
        value: Any = [o for o in shape.options if o.lower() in said]
        if shape.kind == "ranking":
            # A ranking keeps the order the answer gives: its list's, else first mentions.
            value = (
                sorted(value, key=lambda o: said.index(o.lower()))
                if lists
                else _mentioned(low, shape.options)
            )
    elif shape.kind == "score":
        numbers = [int(n) for n in _NUMBER.findall(text) if shape.low <= int(n) <= shape.high]
        value = numbers[0] if numbers else rng.randint(shape.low, shape.high)
    elif shape.kind == "json":
        return text if shape.read(text) is not None else shape.encode({})
    else:
        where = {o: re.search(rf"\b{re.escape(o.lower())}\b", low) for o in shape.options}
        found = sorted((m.start(), o) for o, m in where.items() if m is not None)
        value = found[0][1] if found else rng.choice(shape.options)
    return shape.encode(value)


def build_sim(spec: ModelSpec) -> SimModel:
    return SimModel(spec.name, spec.options)
