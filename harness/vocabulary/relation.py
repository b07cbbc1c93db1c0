"""Relations: pure step functions from (case, transcript) to the next asks or a verdict.

``step`` must be a pure function of its arguments: no clock, no global random state, no
I/O. Randomness comes from ``case.seed``. That is what lets replay prove that today's code
computes the same follow-ups and verdicts as the code that ran the campaign.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from harness.vocabulary.answer_shape import AnswerShape


class Outcome(StrEnum):
    """How a case ended. REFUSED: the model declined to answer (`harness.vocabulary.refusal`),
    neither a fair nor an unfair answer and not an unreadable one (INVALID); both are left
    out of violation rates and tested by group on their own."""

    HELD = "HELD"
    VIOLATED = "VIOLATED"
    INVALID = "INVALID"
    REFUSED = "REFUSED"


class Ask(BaseModel):
    """One prompt to send. ``thread`` names the chat context inside the case.

    A thread that already has turns is continued (its history is sent first). A new thread
    starts empty, or from a copy of ``fork_of``'s history when that is set. ``system`` is
    used only when the thread starts. ``answer``: the shape of the answer, sent to models
    whose answer format is structured (None: free text only; logs from before shapes
    existed decode with None).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    thread: str
    prompt: str
    role: Literal["subject", "judge"] = "subject"
    judge: int = 0  # index into the campaign's judges when role == "judge"
    system: str | None = None
    fork_of: str | None = None
    max_tokens: int | None = None
    answer: AnswerShape | None = None


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    outcome: Outcome
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)


class Turn(BaseModel):
    """A finished ask as the relation sees it: the reply text, or the failure."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    index: int
    ask: Ask
    reply: str | None = None
    error: str | None = None  # "kind: message" when the call failed for good

    @property
    def ok(self) -> bool:
        return self.reply is not None


class Transcript(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    turns: tuple[Turn, ...] = ()

    def thread(self, name: str) -> list[Turn]:
        return [t for t in self.turns if t.ask.thread == name]

    def last(self, thread: str) -> Turn | None:
        found = self.thread(thread)
        return found[-1] if found else None

    def first_error(self) -> Turn | None:
        return next((t for t in self.turns if not t.ok), None)

    def extend(self, turns: Sequence[Turn]) -> Transcript:
        return Transcript(turns=(*self.turns, *turns))


class Case(BaseModel):
    """One concrete instance of a relation against one model, for one repeat."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    case_id: str
    relation: str
    model: str
    index: int
    repeat: int
    seed: int
    data: dict[str, Any]


def derive_seed(*parts: object) -> int:
    """Stable 63-bit seed from any printable parts (independent of PYTHONHASHSEED)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def seed_deriver(*parts: object) -> Callable[[object], int]:
    """``derive_seed(*parts, last)`` as a function of ``last``, the leading parts joined
    once (a bulk importer derives one seed per case)."""
    prefix = "".join(str(part) + "\x1f" for part in parts)  # str(), as derive_seed
    sha256 = hashlib.sha256

    def seed(last: object) -> int:
        return int.from_bytes(sha256((prefix + str(last)).encode()).digest()[:8], "big") >> 1

    return seed


def case_rng(seed: int, index: int, salt: str = "") -> random.Random:
    """The generator a case draws from: ``random.Random(derive_seed(seed, index, salt))``."""
    return random.Random(derive_seed(seed, index, salt))


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


@runtime_checkable
class Relation(Protocol):
    """The plug-in point for a metamorphic relation or an oracle-driven test."""

    name: ClassVar[str]
    family: ClassVar[str]
    summary: ClassVar[str]

    def case_count(self) -> int | None:
        """How many distinct cases exist; ``None`` when any number can be generated."""
        ...

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        """The data of case ``index``; a pure function of (options, index, seed)."""
        ...

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict: ...


@dataclass(frozen=True)
class ChangedDefault:
    """An option whose default changed: ``recorded`` is the value a log recorded without the
    option ran with, ``new`` the value a new campaign whose file leaves it out gets (and
    records). The Options model's own default is what a relation built in code gets.

    ``older`` with ``older_without``: for a behaviour that changed once before it became an
    option. A recorded campaign whose config has no top-level key ``older_without`` (a key
    the harness added in the same change) was recorded before that change and ran with
    ``older``; one that has the key, with ``recorded``."""

    recorded: Any
    new: Any
    older: Any = None
    older_without: str | None = None


class RelationBase:
    """Convenience base: options validated by the class's ``Options`` model."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = NoOptions
    # Options whose default changed after logs were recorded without them (`ChangedDefault`):
    # a new campaign records the new value of each explicitly, and a recorded campaign that
    # left one out is read with the value it ran with, so old logs resume and replay exactly
    # as they ran (`harness.running.campaign.parse_campaign`).
    changed_defaults: ClassVar[Mapping[str, ChangedDefault]] = {}
    # Keys of the case data (`make_case`) that label a case: the group it is about, an
    # occupation, a topic. The report tabulates each for free (`harness.reporting.label_rates`):
    # the violation rate per value against the other values, and the excess over the matched
    # control per value, corrected with the relation's other claims. A case whose data lacks
    # a key is left out of that key's rows; a list value is one value (its items joined).
    labels: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: BaseModel | None = None) -> None:
        self.options = options if options is not None else self.Options()

    def case_count(self) -> int | None:
        return None

    @property
    def forks_threads(self) -> bool:
        """Whether this relation, with its options, asks in a thread forked from another's
        history (`Ask.fork_of`). An ``http:`` target that keeps the conversation on its
        endpoint (``conversation = "id"``) cannot fork one: the campaign refuses that pair
        before the first call. The relation contract checks that a relation that forks
        says so (`harness.testing.contract`)."""
        return False


@dataclass(frozen=True)
class PlannedCalls:
    """The calls one case makes, declared by its relation for the planner and cost estimate.

    ``subject`` and ``judges`` (one count per judge index) are the calls when every reply
    reads (no repair turn, no second look); ``subject_most`` / ``judges_most`` the calls when
    every repair or follow-up a reply can trigger is taken (None: the same as expected).
    A relation declares them with a ``planned_calls(data) -> PlannedCalls`` method (``data``
    is the case's `make_case` result); without one the planner assumes ``turns_per_case``
    subject calls (default 2) and one call per judge the relation needs. A relation whose
    cases all make the same calls may also declare ``uniform_planned_calls() ->
    PlannedCalls | None`` (None: they differ): the planner then counts them without
    generating any case.
    """

    subject: int
    judges: tuple[int, ...] = ()
    subject_most: int | None = None
    judges_most: tuple[int, ...] | None = None

    @property
    def most(self) -> PlannedCalls:
        """The upper bound as a `PlannedCalls` of its own."""
        judges = self.judges_most if self.judges_most is not None else self.judges
        subject = self.subject_most if self.subject_most is not None else self.subject
        return PlannedCalls(subject, judges)
