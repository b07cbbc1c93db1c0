"""What the simulated model's answer rules are and read: its own options, the request a
handler sees, and a handler. Families contribute handlers; the model itself lives in
`harness.models.sim`."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from harness.vocabulary.model import Message

_Truth = TypeVar("_Truth", bound=BaseModel)


class SimOptions(BaseModel):
    """The simulated model's own options (families add their planted truth beside these)."""

    model_config = ConfigDict(extra="forbid")
    invalid_rate: float = Field(default=0.0, ge=0, le=1)  # replies that follow no format
    # Replies that decline to answer ("I cannot answer that."): a refusing model.
    refusal_rate: float = Field(default=0.0, ge=0, le=1)
    # Planted differential refusal: a prompt that mentions one of these words (any case) is
    # refused, whatever else it asks.
    refuse_mentions: list[str] = Field(default_factory=list)
    latency_s: float = Field(default=0.0, ge=0)
    latency_jitter_s: float = Field(default=0.0, ge=0)


class SimRequest(NamedTuple):
    """What a `SimHandler` reads. A named tuple (immutable, built for every call at half a
    frozen dataclass's cost)."""

    messages: Sequence[Message]
    prompt: str  # the last user message
    prior_turns: int  # assistant messages already in this conversation
    rng: random.Random
    options: SimOptions
    planted: Mapping[type[BaseModel], BaseModel]

    def truth(self, model: type[_Truth]) -> _Truth:
        """A family's planted truth, as validated from the model's options."""
        found = self.planted[model]
        assert isinstance(found, model)
        return found


@dataclass(frozen=True)
class SimHandler:
    """One answer rule of the simulated model, contributed by a family."""

    name: str  # unique, e.g. "metaquerier.term_list"
    priority: int  # lower is tried first
    answer: Callable[[SimRequest], str | None]
