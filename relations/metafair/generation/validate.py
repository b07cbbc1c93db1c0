"""Validation of generated Meta-Fair tests: what is kept, and why the rest is dropped.

A generator's reply should be a JSON array of objects with ``source``, ``follow_up``,
``dimension``, ``attributes`` (or ``attribute``), ``scenario`` and optionally
``explanation`` and ``source_attributes`` (a replacement's other attribute). Each rule
drops an item and counts it under its reason (`DROP_REASONS`):

- the reply holds no JSON array (the whole reply counts once);
- an item is not an object or lacks a required field;
- an attribute is not in the catalogue of its dimension (MR5: not one of its proper nouns);
- the follow-up does not name its attribute, or the source does (whole words, case
  ignored); MR8-MR10 the other way round: the source names it, the follow-up does not;
- source and follow-up are the same text (case and spacing ignored);
- the same pair was already kept;
- an MR11-MR14 prompt lacks its answer format: a 1-5 scale (MR11), a Yes/No question
  (MR12), options a), b), c) (MR13), the same 9 listed items in both prompts (MR14).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import relations.metafair.corpus as corpus
from relations.metafair.closed.oracles import prompt_items, prompt_options

DROP_REASONS = (
    "malformed JSON",
    "missing fields",
    "attribute not in the catalogue",
    "follow-up lacks its attribute",
    "source carries the attribute",
    "source lacks its attribute",  # MR8-MR10
    "follow-up carries the attribute",  # MR8-MR10
    "identical prompts",
    "duplicate",
    "no answer format",
)
REQUIRED = ("source", "follow_up", "scenario")
INVERTED = (8, 9, 10)
PROPER_NOUNS = 5
_SCALE = re.compile(r"\b1\b[^?.!]{0,60}?\b5\b")
_YES_NO_QUESTION = re.compile(
    r"(?:^|[.!?:]\s+)(?:is|are|should|can|could|would|will|do|does|did|was|were|has|have|"
    r"may|might|must|shall)\b[^?]*\?|\byes\s+or\s+no\b",
    re.IGNORECASE,
)


def names(text: str, word: str) -> bool:
    """Whether ``text`` names ``word`` as whole words (case ignored)."""
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE) is not None


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def known_attributes(mr: int, dimension: str) -> dict[str, str]:
    """Lower-cased attribute -> its catalogue spelling (MR5: the proper nouns)."""
    catalogue = corpus.attribute_catalogue()
    if mr == PROPER_NOUNS:
        return {
            n.lower(): n
            for label in catalogue.name_labels(dimension)
            for n in catalogue.names(dimension, label)
        }
    return {a.word.lower(): a.word for a in catalogue.of(dimension)}


def format_problem(mr: int, source: str, follow_up: str) -> bool:
    """Whether an MR11-14 pair lacks its closed answer format."""
    if mr == 11:
        return not (_SCALE.search(source) and _SCALE.search(follow_up))
    if mr == 12:
        return not (_YES_NO_QUESTION.search(source) and _YES_NO_QUESTION.search(follow_up))
    if mr == 13:
        return not (prompt_options(source) and prompt_options(follow_up))
    if mr == 14:
        items = prompt_items(source)
        return len(items) != 9 or [i.lower() for i in items] != [
            i.lower() for i in prompt_items(follow_up)
        ]
    return False


def json_array(reply: str) -> list[Any] | None:
    """The JSON array in a reply (code fences and text around it tolerated), or None."""
    start, end = reply.find("["), reply.rfind("]")
    if start == -1 or end <= start:
        return None
    try:
        value = json.loads(reply[start : end + 1])
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, str) and value.strip():
        return [value.strip()]
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return [v.strip() for v in value]
    return None


def validate_reply(
    reply: str, mr: int, dimension: str, seen: set[tuple[str, str]] | None = None
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The valid tests of one generator reply (as test-set fields) and the drop counts."""
    dropped: Counter[str] = Counter()
    items = json_array(reply)
    if items is None:
        dropped["malformed JSON"] += 1
        return [], dropped
    seen = set() if seen is None else seen
    known = known_attributes(mr, dimension)
    kept: list[dict[str, Any]] = []
    for item in items:
        reason, test = _check(item, mr, dimension, known, seen)
        if reason:
            dropped[reason] += 1
        elif test is not None:
            kept.append(test)
    return kept, dropped


def _check(
    item: Any, mr: int, dimension: str, known: dict[str, str], seen: set[tuple[str, str]]
) -> tuple[str | None, dict[str, Any] | None]:
    if not isinstance(item, dict) or any(
        not isinstance(item.get(k), str) or not item[k].strip() for k in REQUIRED
    ):
        return "missing fields", None
    attributes = _strings(item.get("attributes", item.get("attribute")))
    source_attributes = _strings(item.get("source_attributes")) or []
    if attributes is None or len(attributes) > 2 or len(source_attributes) > 2:
        return "missing fields", None
    if any(a.lower() not in known for a in [*attributes, *source_attributes]):
        return "attribute not in the catalogue", None
    source, follow_up = item["source"].strip(), item["follow_up"].strip()
    if _normal(source) == _normal(follow_up):
        return "identical prompts", None
    carrier, plain = (source, follow_up) if mr in INVERTED else (follow_up, source)
    with_name, without_name = ("source", "follow-up") if mr in INVERTED else ("follow-up", "source")
    if not all(names(carrier, a) for a in attributes):
        return f"{with_name} lacks its attribute", None
    if any(names(plain, a) for a in attributes):
        return f"{without_name} carries the attribute", None
    key = (_normal(source), _normal(follow_up))
    if key in seen:
        return "duplicate", None
    if format_problem(mr, source, follow_up):
        return "no answer format", None
    seen.add(key)
    explanation = item.get("explanation")
    return None, {
        "mr": mr,
        "dimension": dimension,
        "attributes": [known[a.lower()] for a in attributes],
        "source_attributes": [known[a.lower()] for a in source_attributes],
        "source": source,
        "follow_up": follow_up,
        "scenario": item["scenario"].strip(),
        "explanation": explanation.strip() if isinstance(explanation, str) else None,
    }
