"""The shape of the answer a relation asks for, and its structured (JSON) form.

A relation declares on each `Ask` what its answer is: a list drawn from given terms, Yes/No,
one option, a score on a scale, a ranking of given items, or a JSON verdict. With
``answer_format = "structured"`` the engine puts that shape into the request
(`GenerationParams.answer_shape`) and each backend makes the model answer in the JSON object
the shape describes (a grammar for llama.cpp, ``response_format`` for OpenAI and
OpenAI-compatible servers, ``response_schema`` for Gemini, a forced tool call for
Anthropic). With the default free format the shape is not sent, so free requests and their
keys are what they were before shapes existed.

`AnswerShape.json_schema` is the one schema every backend sends; it uses only ``enum``,
``type``, ``maxItems``, ``required`` and ``additionalProperties``, which every vendor's strict mode
accepts. `AnswerShape.free_text` turns a structured reply back into the free answer the
relation's parser already reads, so both formats yield the same evidence.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ShapeKind = Literal["terms", "yes_no", "choice", "score", "ranking", "json"]
AnswerFormat = Literal["free", "structured"]

# The key of the one property of each shape's JSON object.
_KEY: dict[str, str] = {
    "terms": "terms",
    "yes_no": "answer",
    "choice": "answer",
    "score": "score",
    "ranking": "ranking",
}


class AnswerShape(BaseModel):
    """What a relation's answer is. ``options``: the terms, options or items to draw from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: ShapeKind
    options: tuple[str, ...] = ()
    low: int = 1
    high: int = 5
    verdict_schema: dict[str, Any] | None = Field(default=None)  # for kind "json"

    @classmethod
    def terms(cls, terms: list[str] | tuple[str, ...]) -> AnswerShape:
        return (
            _terms_shape(tuple(terms))
            if cls is AnswerShape
            else cls(kind="terms", options=tuple(terms))
        )

    @classmethod
    def yes_no(cls) -> AnswerShape:
        return cls(kind="yes_no", options=("Yes", "No"))

    @classmethod
    def choice(cls, options: list[str] | tuple[str, ...]) -> AnswerShape:
        return cls(kind="choice", options=tuple(options))

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the structured answer (an object with one property)."""
        if self.kind == "json":
            return dict(self.verdict_schema or {"type": "object"})
        if self.kind in ("terms", "ranking"):
            items: dict[str, Any] = {"type": "string"}
            if self.options:
                items["enum"] = list(self.options)
            value: dict[str, Any] = {"type": "array", "items": items}
            if self.options:
                value["maxItems"] = len(self.options)  # bounded: a grammar cannot loop
        elif self.kind == "score":
            value = {"type": "integer", "enum": list(range(self.low, self.high + 1))}
        else:
            value = {"type": "string", "enum": list(self.options)}
        key = _KEY[self.kind]
        return {
            "type": "object",
            "properties": {key: value},
            "required": [key],
            "additionalProperties": False,
        }

    def read(self, text: str) -> Any | None:
        """The value of a structured reply (the list, word, option or score), or None when
        ``text`` is not such a JSON object."""
        if not text.lstrip(" \t\n\r").startswith("{"):
            # Not a JSON object (every value read is one): no parse, and no exception to
            # raise and catch for each of a million free-text answers an import reads.
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if self.kind == "json":
            return data if isinstance(data, dict) else None
        if not isinstance(data, dict) or _KEY[self.kind] not in data:
            return None
        value = data[_KEY[self.kind]]
        if self.kind in ("terms", "ranking"):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        elif self.kind == "score":
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, str)
        return value if ok else None

    def free_text(self, text: str) -> str:
        """A structured reply as the free answer the relation's parser reads ("[a, b]",
        "Yes", the option, "3"); any other text unchanged."""
        value = self.read(text)
        if value is None or self.kind == "json":
            return text
        if isinstance(value, list):
            return "[" + ", ".join(value) + "]"
        return str(value)

    def encode(self, value: Any) -> str:
        """``value`` as the structured reply a model constrained to this shape gives."""
        if self.kind == "json":
            return json.dumps(value, ensure_ascii=False)
        return json.dumps({_KEY[self.kind]: value}, ensure_ascii=False)


@functools.lru_cache(maxsize=1024)
def _terms_shape(terms: tuple[str, ...]) -> AnswerShape:
    # Frozen, so one instance per list can be shared: a term-list relation builds the
    # shape of the same list for its ask and again for every parse of its reply.
    return AnswerShape(kind="terms", options=terms)
