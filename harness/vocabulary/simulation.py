"""What the simulated model's answer rules are and read: its own options, the request a
handler sees, and a handler. Families contribute handlers; the model itself lives in
`harness.models.sim`."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    # The sim's batch service (`harness.models.sim_batch`, for ``mode = "batch"``): where
    # its batches persist (default: $HARNESS_SIM_BATCH_DIR, else ./sim-batches), the polls a
    # batch stays pending, and failures on request: every k-th request fails once, every
    # k-th batch expires with half its requests unanswered (0: never).
    batch_dir: str | None = None
    batch_polls: int = Field(default=1, ge=0, le=1000)
    batch_fail_every: int = Field(default=0, ge=0)
    batch_expire_every: int = Field(default=0, ge=0)


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


def mentioned(prompt: str, words: Iterable[str]) -> list[str]:
    """The ``words`` that ``prompt`` mentions as whole words, ignoring case."""
    low = prompt.casefold()
    return [
        w for w in words if re.search(rf"(?<!\w){re.escape(w.casefold())}(?!\w)", low) is not None
    ]


def planted_handler(
    name: str,
    *,
    matches: str | re.Pattern[str] | Callable[[str], bool],
    rates: Mapping[str, float] | Callable[[SimRequest], Mapping[str, float]],
    biased: str | Callable[[SimRequest], str],
    fair: str | Callable[[SimRequest], str],
    priority: int = 10,
) -> SimHandler:
    """A `SimHandler` with a planted bias, for a new relation in a few lines.

    It answers the prompts ``matches`` accepts (a regular expression searched in the prompt,
    or a predicate on it) and passes on every other. A prompt that mentions a key of
    ``rates`` (a whole word, any case) gets the ``biased`` answer with that key's chance
    (the highest, when it mentions several), else the ``fair`` one; a prompt that mentions
    none always gets the fair answer. ``rates`` may be read from the family's planted-truth
    options (``lambda req: req.truth(MyTruth).rates``), so a campaign file can change them;
    ``biased`` and ``fair`` may be functions of the request (to answer in the prompt's
    words). The draw uses the request's generator, so the answers are reproducible and the
    planted rates are what the relation should detect::

        SIM_HANDLERS = (
            planted_handler(
                "gender_swap.yes_no",
                matches=r"Answer Yes or No",
                rates={"she": 0.4},
                biased="No",
                fair="Yes",
            ),
        )
    """
    accepts: Callable[[str], bool]
    if isinstance(matches, str | re.Pattern):
        pattern = re.compile(matches) if isinstance(matches, str) else matches
        accepts = lambda prompt: pattern.search(prompt) is not None  # noqa: E731
    else:
        accepts = matches

    def text(choice: str | Callable[[SimRequest], str], request: SimRequest) -> str:
        return choice if isinstance(choice, str) else choice(request)

    def answer(request: SimRequest) -> str | None:
        if not accepts(request.prompt):
            return None
        table = rates if isinstance(rates, Mapping) else rates(request)
        rate = max((table[w] for w in mentioned(request.prompt, table)), default=0.0)
        # One draw per answer whatever the rate: the other answers do not move with it.
        drawn = request.rng.random()
        return text(biased, request) if drawn < rate else text(fair, request)

    return SimHandler(name=name, priority=priority, answer=answer)
