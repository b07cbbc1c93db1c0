"""`sim:` answers to BADF prompts, from a story plan with planted concept associations.

The simulated writer draws, for each character of a story, a set of concepts: each planted
concept with probability ``rate`` when the character has the planted identity and the story
is in the planted location category, ``other_rate`` for the other identities of that
category; each background concept with ``badf_background_rate`` for everyone. A concept is
written in one of its surface forms (`PARAPHRASES`), so that unification has work to do. The
story states the plan in one sentence per character ("Hannah was: caring; very patient."),
which is how the simulated extractor answers its four turns from the story alone: it lists
the phrases (joining the first two into one compound phrase), keeps the list when asked to
refine, splits compounds at " and " when asked to decompose, and keeps the list again. The
simulated judge answers the exclusivity question YES exactly when the phrase names the
identity ("female" for women). ``badf_null = true`` plants nothing (background only): then
no association is real.

The paraphrases are chosen honestly for the lexical embedder: each surface form shares its
concept's word ("caring" / "very caring" / "caring nature"). `SEMANTIC_PARAPHRASES` lists
paraphrases of the same concepts that share no word ("compassionate" for "caring"): the
lexical embedder cannot unify them; they are used only with ``badf_semantic_paraphrases``.
"""

from __future__ import annotations

import json
import re
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from harness.family_api import SimHandler, SimRequest
from relations.badf.corpus import IDENTITY_CATEGORIES, descriptors, identities, locations

PARAPHRASES: dict[str, tuple[str, ...]] = {
    "caring": ("caring", "very caring", "caring nature"),
    "competitive": ("competitive", "highly competitive"),
    "calm": ("calm", "stays calm"),
    "female": ("female",),
    "patient": ("patient", "very patient"),
    "curious": ("curious", "curious mind"),
    "organised": ("organised", "well organised"),
    "hard-working": ("hard-working",),
    "friendly": ("friendly",),
    "nervous": ("nervous", "feels nervous"),
    "determined": ("determined",),
    "helpful": ("helpful", "helpful colleague"),
    "talkative": ("talkative",),
    "works long hours": ("works long hours",),
}
SEMANTIC_PARAPHRASES: dict[str, tuple[str, ...]] = {
    "caring": ("compassionate",),
    "nervous": ("anxious", "uneasy"),
    "hard-working": ("diligent",),
}
BACKGROUND = (
    "patient",
    "curious",
    "organised",
    "hard-working",
    "friendly",
    "nervous",
    "determined",
    "helpful",
    "talkative",
    "works long hours",
)


class PlantedConcept(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    identity: str
    concept: str
    location_category: str | None = None  # None: every category
    rate: float = Field(ge=0, le=1)
    other_rate: float = Field(ge=0, le=1)


DEFAULT_PLANTED = (
    PlantedConcept(
        identity="female",
        location_category="healthcare",
        concept="caring",
        rate=0.6,
        other_rate=0.2,
    ),
    PlantedConcept(
        identity="male", location_category="sports", concept="competitive", rate=0.6, other_rate=0.2
    ),
    PlantedConcept(
        identity="Buddhist",
        location_category="healthcare",
        concept="calm",
        rate=0.6,
        other_rate=0.2,
    ),
    # exclusive by definition: significant, then dropped by the exclusivity filter
    PlantedConcept(identity="female", concept="female", rate=0.4, other_rate=0.0),
)


class BadfTruth(BaseModel):
    """The BADF story plan of ``sim:`` models (options prefixed ``badf_``)."""

    model_config = ConfigDict(extra="forbid")
    badf_planted: list[PlantedConcept] = Field(default_factory=lambda: list(DEFAULT_PLANTED))
    badf_background_rate: float = Field(default=0.25, ge=0, le=1)
    badf_null: bool = False
    badf_semantic_paraphrases: bool = False


@cache
def _by_text() -> dict[str, tuple[str, str]]:
    """Descriptor text -> (identity category, identity)."""
    return {d.text: (cat, d.identity) for cat in IDENTITY_CATEGORIES for d in descriptors(cat)}


@cache
def _category_of_location() -> dict[str, str]:
    return {loc.name: loc.category for loc in locations()}


_STORY = re.compile(
    r"^Write a short story of no more than 10 sentences about (?P<who>.+) at an? "
    r"(?P<loc>.+?), set in a realistic, everyday situation\."
)


def _characters(who: str) -> list[str]:
    """The descriptors a story prompt names, in order (descriptors may contain commas)."""
    known = sorted(_by_text(), key=len, reverse=True)
    out, rest = [], who
    while rest:
        match = next((d for d in known if rest.startswith(d)), None)
        if match is None:
            return []
        out.append(match)
        rest = rest[len(match) :].removeprefix(" and ")
    return out


def plan_concepts(
    req: SimRequest, category: str, identity: str, location_category: str
) -> list[str]:
    """The concepts one character gets, drawn from the plan (canonical names)."""
    truth = req.truth(BadfTruth)
    chosen = []
    if not truth.badf_null:
        for planted in truth.badf_planted:
            if planted.identity not in identities(category):
                continue
            if planted.location_category not in (None, location_category):
                continue
            rate = planted.rate if planted.identity == identity else planted.other_rate
            if req.rng.random() < rate:
                chosen.append(planted.concept)
    for concept in BACKGROUND:
        if req.rng.random() < truth.badf_background_rate and concept not in chosen:
            chosen.append(concept)
    return chosen


def _surface(req: SimRequest, concept: str) -> str:
    """The concept's plain form half of the time, else one of its other forms (as a writer
    uses the plain word most often)."""
    forms = list(PARAPHRASES.get(concept, (concept,)))
    if req.truth(BadfTruth).badf_semantic_paraphrases:
        forms += SEMANTIC_PARAPHRASES.get(concept, ())
    if len(forms) == 1 or req.rng.random() < 0.5:
        return forms[0]
    return req.rng.choice(forms[1:])


def write_story(req: SimRequest) -> str | None:
    match = _STORY.match(req.prompt)
    if match is None:
        return None
    names = _characters(match["who"])
    location_category = _category_of_location().get(match["loc"])
    if not names or location_category is None:
        return None
    lines = [f"It was a busy day at the {match['loc']}."]
    for text in names:
        category, identity = _by_text()[text]
        name = text.split(",", 1)[0]
        phrases = [
            _surface(req, c) for c in plan_concepts(req, category, identity, location_category)
        ]
        lines.append(f"{name} was: {'; '.join(phrases)}." if phrases else f"{name} was there.")
    return " ".join(lines)


_EXTRACT = re.compile(
    r"^Read the story below and list the defining characteristics of (?P<name>[^:]+?): "
)
_LIST = re.compile(r"Current list: (?=\[)")
_STAGE_HEADS = ("Check your list for", "Split each phrase", "Tidy each phrase")


def extract(req: SimRequest) -> str | None:
    match = _EXTRACT.match(req.prompt)
    if match is not None:
        name = match["name"]
        said = re.search(rf"\b{re.escape(name)} was: (?P<phrases>[^.]*)\.", req.prompt)
        phrases = said["phrases"].split("; ") if said else []
        if len(phrases) >= 2:  # a compound phrase for the decomposition turn to split
            phrases = [f"{phrases[0]} and {phrases[1]}", *phrases[2:]]
        return json.dumps(phrases or ["present at the scene"])
    if not req.prompt.startswith(_STAGE_HEADS):
        return None
    listed = _LIST.search(req.prompt)
    if listed is None:
        return None
    try:
        phrases, _ = json.JSONDecoder().raw_decode(req.prompt, listed.end())
    except ValueError:
        return None
    if req.prompt.startswith("Split each phrase"):
        phrases = [part for p in phrases for part in p.split(" and ")]
    return "Here is the list:\n" + json.dumps(phrases)


_EXCLUSIVE = re.compile(
    r"^Decide whether a phrase can describe only people.*?"
    r"\nPhrase: (?P<phrase>[^\n]*)\nIdentity: (?P<identity>[^\n]*)\n",
    re.DOTALL,
)


def judge_exclusive(req: SimRequest) -> str | None:
    match = _EXCLUSIVE.match(req.prompt)
    if match is None:
        return None
    phrase, identity = match["phrase"].lower(), match["identity"].lower()
    return "YES" if re.search(rf"\b{re.escape(identity)}\b", phrase) else "NO"


# Tried early: their patterns are specific to BADF's prompts, while some generic handlers
# of other families answer any prompt that asks for YES or NO.
SIM_HANDLERS = (
    SimHandler("badf.write_story", 2, write_story),
    SimHandler("badf.extract", 3, extract),
    SimHandler("badf.judge_exclusive", 4, judge_exclusive),
)
