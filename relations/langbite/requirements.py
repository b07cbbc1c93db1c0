"""The ethical-requirements file (TOML): what to test, for whom, in which languages.

A requirement names a concern, the sensitive communities per language, how to combine
them, and when the concern counts as met (its pass threshold). The ``[scenario]`` table
says which models, languages and how many templates per concern; it is what
``harness langbite campaign`` turns into a campaign file. Every error names the field
and says how to fix it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.family_api import ConfigError, config_error, read_toml_file
from relations.langbite.concerns import CONCERNS, MARKUPS, normalize_concern, normalize_language

DEFAULT_REQUIREMENTS = "langbite/requirements.toml"  # inside the corpora package

Combination = Literal["all", "unordered", "chosen"]


class Requirement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    concern: str
    rationale: str = ""
    communities: dict[str, list[str]] = Field(default_factory=dict)  # language -> names
    # Further placeholders a concern's templates use, e.g. {PRONOUN}: markup -> language -> names.
    extra_markups: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    combinations: Combination = "all"
    chosen: dict[str, list[list[str]]] = Field(default_factory=dict)  # language -> tuples
    max_instances: int | None = Field(default=None, ge=1)
    templates: int | None = Field(default=None, ge=1)  # overrides the scenario's count
    pass_threshold: float = Field(default=0.9, ge=0, le=1)
    value_tolerance: float = Field(default=2.0, ge=0)  # allSameValue: max - min allowed
    inputs: list[Literal["constrained", "verbose"]] = ["constrained", "verbose"]
    reflections: list[Literal["observational", "utopian"]] = ["observational", "utopian"]

    @field_validator("concern")
    @classmethod
    def _known_concern(cls, value: str) -> str:
        concern = normalize_concern(value)
        if concern is None:
            raise ValueError(f"unknown concern {value!r}; known: {', '.join(CONCERNS)}")
        return concern

    @field_validator("communities", "chosen")
    @classmethod
    def _languages(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {normalize_language(k): v for k, v in value.items()}

    @property
    def markup(self) -> str | None:
        return MARKUPS[self.concern]

    def communities_for(self, language: str) -> dict[str, list[str]]:
        """Placeholder root -> communities in ``language`` (empty when none are given)."""
        out: dict[str, list[str]] = {}
        if self.markup and self.communities.get(language):
            out[self.markup] = list(self.communities[language])
        for markup, per_language in self.extra_markups.items():
            names = {normalize_language(k): v for k, v in per_language.items()}.get(language)
            if names:
                out[markup.upper()] = list(names)
        return out


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    models: list[str] = Field(default_factory=lambda: ["sim:planted"])
    languages: list[str] = Field(default_factory=lambda: ["en"], min_length=1)
    templates_per_concern: int | None = Field(default=None, ge=1)  # None: every template
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    reassess: bool = False  # a second model re-assesses failed cases
    judge: str | None = None  # that second model; required when reassess is on
    seed: int = 0

    @field_validator("languages")
    @classmethod
    def _norm(cls, value: list[str]) -> list[str]:
        return [normalize_language(v) for v in value]


class EthicalRequirements(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = "ethical-requirements"
    scenario: Scenario = Field(default_factory=Scenario)
    requirements: list[Requirement] = Field(min_length=1)

    def by_concern(self) -> dict[str, Requirement]:
        return {r.concern: r for r in self.requirements}


def parse_requirements(
    data: dict[str, Any], *, source: str = "requirements"
) -> EthicalRequirements:
    try:
        reqs = EthicalRequirements.model_validate(data)
    except ValidationError as exc:
        raise config_error(
            exc,
            data=data,
            source=source,
            label_key="concern",
            fix="use a value the message names (see relations/langbite/docs.md)",
        ) from exc
    _check_consistency(reqs, source)
    return reqs


def _check_consistency(reqs: EthicalRequirements, source: str) -> None:
    seen: set[str] = set()
    for i, req in enumerate(reqs.requirements):
        where = f"requirements[{i}]({req.concern})"
        if req.concern in seen:
            raise ConfigError(
                f"concern {req.concern} is listed twice (in {source})",
                field=where,
                fix="merge the two requirements into one",
            )
        seen.add(req.concern)
        if req.markup is None:
            continue
        for language in reqs.scenario.languages:
            names = req.communities.get(language, [])
            if len(names) < 2 and req.combinations != "chosen":
                raise ConfigError(
                    f"needs at least two communities in language {language!r}, has "
                    f"{len(names)} (in {source})",
                    field=f"{where}.communities.{language}",
                    fix=f'add e.g. communities.{language} = ["...", "..."] or drop '
                    f"{language!r} from scenario.languages",
                )
            if len(set(names)) != len(names):
                raise ConfigError(
                    f"lists a community twice (in {source})",
                    field=f"{where}.communities.{language}",
                    fix="give each community once",
                )
            known = set(names)
            for j, combo in enumerate(req.chosen.get(language, [])):
                unknown = [c for c in combo if c not in known]
                if not combo or unknown or len(set(combo)) != len(combo):
                    raise ConfigError(
                        f"chosen combination {combo} must name distinct communities of "
                        f"communities.{language} (in {source})",
                        field=f"{where}.chosen.{language}[{j}]",
                        fix=f"use names from {sorted(known)}",
                    )
            if req.combinations == "chosen" and not req.chosen.get(language):
                raise ConfigError(
                    f'combinations = "chosen" but no combinations for {language!r} (in {source})',
                    field=f"{where}.chosen.{language}",
                    fix=f'add chosen.{language} = [["a", "b"], ...] or use combinations = "all"',
                )
    if reqs.scenario.reassess and not reqs.scenario.judge:
        raise ConfigError(
            f"reassess is on but no judge model is named (in {source})",
            field="scenario.judge",
            fix='name the second model, e.g. judge = "sim:judge"',
        )


def load_requirements(path: str | Path | None = None) -> EthicalRequirements:
    """Read and validate a requirements file; ``None`` reads the embedded default."""
    if path is None:
        from corpora import read_text

        return parse_requirements(
            tomllib.loads(read_text(DEFAULT_REQUIREMENTS)), source="embedded requirements"
        )
    path = Path(path)
    data = read_toml_file(path, "requirements file")
    return parse_requirements(data, source=str(path))
