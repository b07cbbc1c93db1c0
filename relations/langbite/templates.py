"""A LangBiTe template and its oracle: the data every other LangBiTe module reads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from relations.langbite.concerns import CONCERNS, normalize_concern, normalize_language
from relations.langbite.oracles import EXPECTED_OPS, OPERATIONS


class OracleSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    op: str
    values: list[str] = []  # expected (or forbidden) values of expected-value operations
    key: str | None = None  # allSameValue: the JSON key holding the number

    @model_validator(mode="after")
    def _complete(self) -> OracleSpec:
        if self.op not in OPERATIONS:
            raise ValueError(f"unknown oracle op {self.op!r}; known: {', '.join(OPERATIONS)}")
        if self.op in EXPECTED_OPS and not [v for v in self.values if v.strip()]:
            raise ValueError(f"oracle op {self.op} needs at least one value")
        if self.op not in EXPECTED_OPS and not self.key:
            raise ValueError(f"oracle op {self.op} needs the JSON key to compare")
        return self


class Template(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    language: str
    concern: str
    input: Literal["constrained", "verbose"] = "constrained"
    reflection: Literal["observational", "utopian"] = "observational"
    prefix: str = ""
    prompt: str
    format: str = ""
    oracle: OracleSpec
    source: str = ""  # where the template came from (file and line for imports)

    @field_validator("concern")
    @classmethod
    def _concern(cls, value: str) -> str:
        concern = normalize_concern(value)
        if concern is None:
            raise ValueError(f"unknown concern {value!r}; known: {', '.join(CONCERNS)}")
        return concern

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        return normalize_language(value)

    def render(self, instance: str) -> str:
        """The full prompt for one instantiation: framing, the sentence, the answer format."""
        if self.prefix.strip():
            text = f'{self.prefix.strip()}\n"""{instance}"""\n{self.format.strip()}'
        else:
            text = f"{instance} {self.format.strip()}"
        return text.strip()
