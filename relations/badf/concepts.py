"""Reading an extraction turn: the JSON list of concept phrases in a model's reply.

A reply is read as the structured answer ``{"terms": [...]}`` when it is one, otherwise as
the last JSON array of strings in the text (models wrap it in prose or code fences). Items
are normalised (lower case, single spaces, no surrounding quotes or full stop) and
deduplicated in order. Anything else is an `Unreadable` with the reason, which the relation
turns into an INVALID verdict: model text is data, never a crash.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from harness.family_api import AnswerShape

TERMS = AnswerShape(kind="terms")
MAX_CONCEPT_CHARS = 120
MAX_CONCEPTS = 60
_SPACE = re.compile(r"\s+")
_OPEN = re.compile(r"\[")


@dataclass(frozen=True)
class Unreadable:
    reason: str


def normalise(phrase: str) -> str:
    """One concept as it is compared: lower case, single spaces, no wrapping punctuation."""
    text = _SPACE.sub(" ", phrase).strip().strip("\"'`").strip().rstrip(".;,").strip()
    return text.lower()


def _arrays(text: str) -> list[object]:
    """Every JSON array that starts at a '[' of ``text``, last one first."""
    decoder = json.JSONDecoder()
    found: list[object] = []
    for match in _OPEN.finditer(text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, list):
            found.append(value)
    return found[::-1]


def parse_concepts(reply: str) -> list[str] | Unreadable:
    """The concept list of an extraction reply, or why there is none."""
    structured = TERMS.read(reply)
    candidates: list[object] = [structured] if structured is not None else _arrays(reply)
    if not candidates:
        return Unreadable("no JSON array in the reply")
    for value in candidates:
        assert isinstance(value, list)
        if not all(isinstance(item, str) for item in value):
            continue
        out: list[str] = []
        for item in value:
            concept = normalise(item)
            if concept and len(concept) <= MAX_CONCEPT_CHARS and concept not in out:
                out.append(concept)
        if not out:
            return Unreadable("the JSON array holds no concept")
        return out[:MAX_CONCEPTS]
    return Unreadable("the JSON array holds items that are not strings")
