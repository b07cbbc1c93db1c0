"""``metafair.generate``: a generator model writes Meta-Fair tests, as a campaign.

One case per (MR, bias dimension, attribute): the generator is asked, in our own wording per
MR (``corpora/metafair/generation_prompts.toml``), for ``per_attribute`` tests as a JSON
array. The reply is validated (`generation_validate.py`): the kept tests and the count of
each drop reason are the verdict's evidence, so resume, replay and rejudge treat generation
turns like any other, and ``harness metafair export`` turns the log into a test-set file.
MR5 (proper nouns) runs for the dimensions that have proper nouns (gender, religion); its
attributes are the nouns' labels (e.g. female, Muslim) and its tests name first names.
"""

from __future__ import annotations

import functools
import tomllib
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

import corpora
import relations.metafair.corpus as corpus
from harness.family_api import Ask, Case, ConfigError, Outcome, RelationBase, Transcript, Verdict
from relations.metafair.generation.validate import INVERTED, PROPER_NOUNS, validate_reply

THREAD = "generate"
REPLACEMENT_MRS = (5, 11, 12, 13, 14)  # the source carries another attribute


@functools.cache
def prompts() -> dict[str, Any]:
    return tomllib.loads(corpora.read_text("metafair/generation_prompts.toml"))


def generation_prompt(mr: int, dimension: str, attribute: str, count: int) -> str:
    text = prompts()
    carrier = "source" if mr in INVERTED else "follow-up"
    return str(text["frame"]).format(
        mr=mr,
        dimension=dimension,
        attribute=attribute,
        task=text["tasks"][str(mr)],
        count=count,
        carrier=carrier,
        source_attributes=text["replacement"] if mr in REPLACEMENT_MRS else "",
    )


class GenerateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mrs: list[int] = Field(
        default_factory=lambda: list(range(1, 15)),
        min_length=1,
        description="relations to write tests for (1-14)",
    )
    dimensions: list[str] | None = Field(
        default=None, description="bias dimensions (catalogue); null: every one"
    )
    attributes: list[str] | None = Field(
        default=None,
        description="attributes to write tests for (catalogue words; MR5: proper-noun labels); "
        "null: every attribute of each dimension",
    )
    per_attribute: int = Field(default=3, ge=1, le=50, description="tests asked per case")
    max_tokens: int | None = Field(
        default=None, ge=1, description="reply length limit; null: the model's default"
    )

    @field_validator("mrs")
    @classmethod
    def _mrs(cls, mrs: list[int]) -> list[int]:
        bad = [m for m in mrs if not 1 <= m <= 14]
        if bad:
            raise ValueError(f"unknown relation(s) {bad}; Meta-Fair has MR1-MR14")
        return sorted(set(mrs))

    @field_validator("dimensions")
    @classmethod
    def _dimensions(cls, dims: list[str] | None) -> list[str] | None:
        known = corpus.attribute_catalogue().dimensions
        unknown = [d for d in dims or () if d not in known]
        if unknown:
            raise ValueError(f"unknown dimension(s) {unknown}; known: {list(known)}")
        return dims


def generation_cells(options: GenerateOptions) -> list[tuple[int, str, str]]:
    """(MR, dimension, attribute) of every case, in a fixed order."""
    catalogue = corpus.attribute_catalogue()
    dims = options.dimensions or list(catalogue.dimensions)
    wanted = {a.lower() for a in options.attributes} if options.attributes else None
    cells = []
    for mr in options.mrs:
        for dim in dims:
            if mr == PROPER_NOUNS:
                labels = catalogue.name_labels(dim) if dim in _noun_categories() else ()
            else:
                labels = tuple(a.word for a in catalogue.of(dim))
            cells += [(mr, dim, a) for a in labels if wanted is None or a.lower() in wanted]
    return cells


def _noun_categories() -> set[str]:
    return {cat for cat, _, _ in corpus.attribute_catalogue().proper_nouns}


class GenerateTests(RelationBase):
    name: ClassVar[str] = "metafair.generate"
    family: ClassVar[str] = "metafair"
    summary: ClassVar[str] = (
        "Meta-Fair generation: a model writes tests per MR, dimension and attribute as JSON; "
        "invalid items are dropped and counted; 'harness metafair export' writes a test set"
    )
    Options: ClassVar[type[BaseModel]] = GenerateOptions
    options: GenerateOptions

    @functools.cached_property
    def cells(self) -> list[tuple[int, str, str]]:
        cells = generation_cells(self.options)
        if not cells:
            raise ConfigError(
                "metafair.generate has no (MR, dimension, attribute) to write tests for",
                field="relations.options",
                fix="widen mrs, dimensions or attributes (MR5 needs gender or religion)",
            )
        return cells

    def case_count(self) -> int | None:
        return len(self.cells)

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        mr, dimension, attribute = self.cells[index]
        count = self.options.per_attribute
        return {
            "mr": mr,
            "dimension": dimension,
            "attribute": attribute,
            "count": count,
            "prompt": generation_prompt(mr, dimension, attribute, count),
        }

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        data = case.data
        turn = transcript.last(THREAD)
        if turn is None:
            return [Ask(thread=THREAD, prompt=data["prompt"], max_tokens=self.options.max_tokens)]
        evidence: dict[str, Any] = {k: data[k] for k in ("mr", "dimension", "attribute")}
        if turn.reply is None:
            return Verdict(
                outcome=Outcome.INVALID,
                reason=f"generator call failed: {turn.error}",
                evidence=evidence | {"tests": [], "dropped": {}},
            )
        tests, dropped = validate_reply(turn.reply, int(data["mr"]), data["dimension"])
        evidence |= {"tests": tests, "dropped": dict(sorted(dropped.items()))}
        if not tests:
            reason = "no valid test: " + ", ".join(sorted(dropped)) if dropped else "no test"
            return Verdict(outcome=Outcome.INVALID, reason=reason, evidence=evidence)
        return Verdict(outcome=Outcome.HELD, reason=f"{len(tests)} tests", evidence=evidence)
