"""BADF relations: ``badf.story`` (a story, then four extraction turns per character) and
``badf.exclusivity`` (is a significant concept exclusive to its identity by definition?).

``badf.story``: the subject model writes the story in thread ``story``; the extractor (the
campaign's judge by default, or the subject itself) then works in one thread per character,
``extract-<i>``: extraction, self-refinement, decomposition, second self-refinement, each
answer a JSON list that the next turn is given. All of it is turns of one case, so resume,
replay, rejudge and the answer cache treat it like any other conversation. The verdict is
HELD with each character's final concept list in its evidence (what the analysis reads), or
INVALID naming the turn that could not be read.

``badf.exclusivity``: one case per significant (concept, identity) candidate, written into
the relation's options by ``harness badf analyze`` (see `relations.badf.analyze`); the
model answers YES/NO. VIOLATED = exclusive (YES): the concept is dropped and listed; HELD =
kept.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.family_api import (
    READING_KEY,
    READING_VERSION,
    AnswerShape,
    Ask,
    Case,
    Outcome,
    PlannedCalls,
    RelationBase,
    Transcript,
    Verdict,
    reading_version,
    refusal_reason,
)
from relations._common.answers import leading_yes_no
from relations._common.readers import read_yes_no
from relations.badf.concepts import TERMS, Unreadable, parse_concepts
from relations.badf.corpus import (
    IDENTITY_CATEGORIES,
    LOCATION_CATEGORIES,
    IdentityCategory,
    LocationCategory,
    locations,
)
from relations.badf.prompts import STAGES, exclusivity_prompt, extraction_prompt, story_prompt
from relations.badf.stories import PAPER_ARMS, Arm, StoryGrid

STORY_THREAD = "story"


def extract_thread(character: int) -> str:
    return f"extract-{character}"


class StoryOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arms: list[Arm] = Field(
        default_factory=lambda: list(PAPER_ARMS),
        min_length=1,
        description="setting-characters arms (base|balanced|negative)-(single|two); "
        "default: the paper's four",
    )
    identity_categories: list[IdentityCategory] = Field(
        default_factory=lambda: list(IDENTITY_CATEGORIES),
        min_length=1,
        description="gender, race, religion: whose descriptors the stories feature",
    )
    location_categories: list[LocationCategory] = Field(
        default_factory=lambda: list(LOCATION_CATEGORIES),
        min_length=1,
        description="location categories of corpora/badf/locations.toml (default: all 10)",
    )
    locations: list[str] | None = Field(
        default=None, description="only these locations (names from corpora/badf/locations.toml)"
    )
    stories: int | None = Field(
        default=None,
        ge=1,
        description="stories per location and descriptor group; null: the paper's counts",
    )
    extractor: Literal["judge", "subject"] = Field(
        default="judge", description="who extracts concepts: a campaign judge, or the subject"
    )
    extractor_judge: int = Field(default=0, ge=0, description="index into [[judges]]")
    story_max_tokens: int | None = Field(
        default=None, ge=1, description="story length limit; null: the model's default"
    )
    extraction_max_tokens: int | None = Field(
        default=None, ge=1, description="extraction answer limit; null: the model's default"
    )

    @field_validator("locations")
    @classmethod
    def _known_locations(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        known = {loc.name for loc in locations()}
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(
                f"unknown location {unknown[0]!r}; see corpora/badf/locations.toml "
                "(e.g. 'city hospital')"
            )
        return value


class BadfStory(RelationBase):
    name: ClassVar[str] = "badf.story"
    family: ClassVar[str] = "badf"
    summary: ClassVar[str] = (
        "BADF: a story featuring one or two characters at a location, then per character "
        "extraction -> self-refinement -> decomposition -> self-refinement of its concepts"
    )
    Options: ClassVar[type[BaseModel]] = StoryOptions
    options: StoryOptions

    @cached_property
    def grid(self) -> StoryGrid:
        o = self.options
        return StoryGrid(
            list(o.arms),
            list(o.identity_categories),
            list(o.location_categories),
            o.locations,
            o.stories,
        )

    @property
    def judges_needed(self) -> int:
        return self.options.extractor_judge + 1 if self.options.extractor == "judge" else 0

    def planned_calls(self, data: dict[str, Any]) -> PlannedCalls:
        """The story, then each character's extraction stages (no repair turn: an
        unreadable stage makes the case INVALID)."""
        extractions = len(data["characters"]) * len(STAGES)
        if self.options.extractor == "judge":
            judges = [0] * (self.options.extractor_judge + 1)
            judges[self.options.extractor_judge] = extractions
            return PlannedCalls(1, tuple(judges))
        return PlannedCalls(1 + extractions)

    def case_count(self) -> int | None:
        return len(self.grid)

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        cell = self.grid.cell(index)
        names = [d.text for d in cell.characters]
        return {
            "arm": cell.arm,
            "setting": cell.setting,
            "identity_category": cell.identity_category,
            "location": cell.location.name,
            "location_category": cell.location.category,
            "story": cell.story,
            "characters": [
                {"descriptor": d.text, "name": d.name, "identity": d.identity}
                for d in cell.characters
            ],
            "prompt": story_prompt(cell.setting, names, cell.location.name),
            READING_KEY: READING_VERSION,
        }

    def _extract_ask(self, thread: str, prompt: str) -> Ask:
        o = self.options
        role: Literal["subject", "judge"] = "judge" if o.extractor == "judge" else "subject"
        return Ask(
            thread=thread,
            prompt=prompt,
            role=role,
            judge=o.extractor_judge if role == "judge" else 0,
            max_tokens=o.extraction_max_tokens,
            answer=TERMS,
        )

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        data = case.data
        story_turn = transcript.last(STORY_THREAD)
        if story_turn is None:
            return [
                Ask(
                    thread=STORY_THREAD,
                    prompt=data["prompt"],
                    max_tokens=self.options.story_max_tokens,
                )
            ]
        base = {k: data[k] for k in ("arm", "setting", "identity_category", "location")}
        base |= {"location_category": data["location_category"], "story": data["story"]}
        careful = reading_version(data) >= 2
        if careful and (refused := refusal_reason(story_turn.reply, story_turn.error)):
            # A refused story has no characters to read: its own outcome, never a story.
            return Verdict(
                outcome=Outcome.REFUSED,
                reason=f"story refused ({refused})",
                evidence=base | {"refused": refused},
            )
        if story_turn.reply is None:
            return Verdict(
                outcome=Outcome.INVALID,
                reason=f"story call failed: {story_turn.error}",
                evidence=base,
            )
        story = story_turn.reply.strip()
        if not story:
            return Verdict(outcome=Outcome.INVALID, reason="the story is empty", evidence=base)
        asks: list[Ask] = []
        characters = []
        for i, character in enumerate(data["characters"]):
            name = character["name"]
            lists: list[list[str]] = []
            for stage, turn in zip(STAGES, transcript.thread(extract_thread(i)), strict=False):
                if turn.reply is None:
                    return Verdict(
                        outcome=Outcome.INVALID,
                        reason=f"extraction call failed ({stage}, {name}): {turn.error}",
                        evidence=base,
                    )
                parsed = parse_concepts(turn.reply)
                if isinstance(parsed, Unreadable):
                    return Verdict(
                        outcome=Outcome.INVALID,
                        reason=f"unreadable {stage} answer for {name}: {parsed.reason}",
                        evidence=base | {"character": name, "stage": stage},
                    )
                lists.append(parsed)
            if len(lists) < len(STAGES):
                stage = STAGES[len(lists)]
                prompt = extraction_prompt(
                    stage, name, story=story, phrases=lists[-1] if lists else ()
                )
                asks.append(self._extract_ask(extract_thread(i), prompt))
                continue
            characters.append(
                character | {"concepts": lists[-1], "stage_counts": [len(x) for x in lists]}
            )
        if asks:
            return asks
        total = sum(len(c["concepts"]) for c in characters)
        return Verdict(
            outcome=Outcome.HELD,
            reason=f"{total} concepts for {len(characters)} character(s)",
            evidence=base | {"characters": characters},
        )


class Candidate(BaseModel):
    """A significant (concept, identity) association awaiting the exclusivity question;
    everything the report shows about it travels with it, so the report reads the log only."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arm: str
    identity_category: str
    location_category: str
    identity: str
    concept: str
    members: list[str] = Field(default_factory=list)  # the unified cluster's phrases
    score: float
    a: int
    n: int
    p: float
    p_bh: float
    cases: list[str] = Field(default_factory=list)
    # The evidence rule's (`relations.badf.significance.identity_tests`): the rest of the
    # group's lists, the smallest attainable p; absent from candidates of the paper's rule
    # and of analyses recorded before the rule existed.
    rest_a: int | None = None
    rest_n: int | None = None
    p_min: float | None = None
    rule: Literal["evidence", "paper"] = "paper"
    # The score's interval with the story as the unit (`significance.score_interval`:
    # cluster-robust, stories as clusters): absent from candidates of the paper's rule and
    # of analyses recorded before it (their report keeps Newcombe's interval of lists).
    score_se: float | None = None
    score_low: float | None = None
    score_high: float | None = None
    clusters: int | None = None

    def case_data(self) -> dict[str, Any]:
        """The candidate as its case records it: the interval's fields only when present,
        so a candidate recorded before they existed makes the same case (replay, verify)."""
        data = self.model_dump()
        for key in _INTERVAL_FIELDS:
            if data[key] is None:
                del data[key]
        return data


_INTERVAL_FIELDS = ("score_se", "score_low", "score_high", "clusters")


class ExclusivityOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_campaign: str = Field(default="", description="the badf.story campaign analysed")
    analysis: dict[str, Any] = Field(
        default_factory=dict, description="the analysis settings (recorded, not read)"
    )
    candidates: list[Candidate] = Field(
        default_factory=list, description="the significant associations to ask about"
    )
    max_tokens: int | None = Field(
        default=None, ge=1, description="answer length limit; null: the model's default"
    )


class BadfExclusivity(RelationBase):
    name: ClassVar[str] = "badf.exclusivity"
    family: ClassVar[str] = "badf"
    summary: ClassVar[str] = (
        "BADF filter: is a significant concept exclusive to its identity by definition "
        "(YES: dropped, VIOLATED; NO: kept, HELD); cases written by 'harness badf analyze'"
    )
    Options: ClassVar[type[BaseModel]] = ExclusivityOptions
    options: ExclusivityOptions

    def case_count(self) -> int | None:
        return len(self.options.candidates)

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        c = self.options.candidates[index]
        prompt = exclusivity_prompt(c.concept, c.identity, c.identity_category)
        return c.case_data() | {"prompt": prompt, READING_KEY: READING_VERSION}

    def planned_calls(self, data: dict[str, Any]) -> PlannedCalls:
        return PlannedCalls(1)

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        turn = transcript.last("exclusive")
        if turn is None:
            return [
                Ask(
                    thread="exclusive",
                    prompt=case.data["prompt"],
                    max_tokens=self.options.max_tokens,
                    answer=AnswerShape.yes_no(),
                )
            ]
        careful = reading_version(case.data) >= 2
        if turn.reply is None:
            if careful and (refused := refusal_reason(None, turn.error)):
                return Verdict(outcome=Outcome.REFUSED, reason=f"refused ({refused})")
            return Verdict(outcome=Outcome.INVALID, reason=f"call failed: {turn.error}")
        free = AnswerShape.yes_no().free_text(turn.reply)
        word = read_yes_no(free)[0] if careful else leading_yes_no(free)
        if word is None:
            if careful and (refused := refusal_reason(turn.reply)):
                return Verdict(outcome=Outcome.REFUSED, reason=f"refused ({refused})")
            return Verdict(outcome=Outcome.INVALID, reason="no leading YES or NO in the answer")
        if word == "yes":
            return Verdict(outcome=Outcome.VIOLATED, reason="exclusive to the identity: dropped")
        return Verdict(outcome=Outcome.HELD, reason="not exclusive: kept")
