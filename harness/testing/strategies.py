"""Hypothesis strategies for testing a relation: its cases, the replies its asks may get
(fitting, arbitrary or hostile), failed turns, and whole transcripts driven through it.

What for: a relation is a pure function of (case, transcript) and must give a verdict for
any reply a model can send (`harness.vocabulary.relation`); these strategies generate the
inputs that property needs, with the conventions the engine follows (case ids and seeds as
a campaign plans them, failed turns as ``"kind: message"``, replies made recordable as the
log records them), so an author does not have to guess them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from pydantic import BaseModel

from harness.testing.driving import DEFAULT_MAX_STEPS, case_for
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.model import recordable_text
from harness.vocabulary.relation import Ask, Case, Relation, RelationBase, Transcript, Turn, Verdict

__all__ = [
    "FAILURE_KINDS",
    "HOSTILE_SAMPLES",
    "REFUSAL_SAMPLES",
    "DrivenCase",
    "any_replies",
    "cases",
    "drive_with",
    "failed_turns",
    "failures",
    "fitting_replies",
    "hostile_texts",
    "relation_of",
    "replies",
    "transcripts",
]

# The failure kinds the engine records (`harness.vocabulary.errors.ModelError.kind`).
FAILURE_KINDS = (
    "model_error",
    "rate_limited",
    "overloaded",
    "server_error",
    "timeout",
    "connection",
    "malformed_response",
    "authentication",
    "permission_denied",
    "bad_request",
    "not_found",
    "content_refused",
    "unrecordable_reply",
)

# Replies that must never crash a relation, never be read as markup or as a command.
HOSTILE_SAMPLES = (
    "",
    " ",
    "\n\n\t",
    "\x00",
    "Yes\x00No",
    "\ud800",  # a lone surrogate (the log records it as U+FFFD)
    "[\ud83d]",
    "\x1b[31mYes\x1b[0m",
    "[bold red]No[/bold red]",
    "<script>alert(1)</script>",
    "</td></tr></table><h1>Yes</h1>",
    "**Yes**",
    "`rm -rf /`; $(reboot)",
    "{{ answer }} %s %(x)s {0}",
    "[" * 2000 + "]" * 2000,
    "{" * 500,
    '{"answer": "Yes", "answer": "No"}',
    '{"terms": null, "answer": [], "score": "3", "ranking": {}}',
    "[[[]]], [,], [ , , ]",
    "NaN Infinity -0 1e999 99999999999999999999999999",
    "Yes " * 5000,
    "x" * 200_000,
    "\u202eoN\u202c",  # right-to-left override
    "Ｙｅｓ",  # fullwidth letters
    "\ufeffYes",
)

REFUSAL_SAMPLES = (
    "I cannot answer that.",
    "I'm sorry, but I can't help with that.",
    "As an AI, I don't make judgements about groups.",
    '{"refusal": "I will not rank people by their group."}',
    '{"refused": true}',
)


def relation_of(
    relation: type[RelationBase] | Relation, options: BaseModel | Mapping[str, Any] | None = None
) -> Relation:
    """A relation instance: ``relation`` itself, or its class built with ``options`` (a
    mapping validated by the class's ``Options`` model, or an Options instance)."""
    if not isinstance(relation, type):
        return relation
    if options is None or isinstance(options, BaseModel):
        built = relation(options)
    else:
        built = relation(relation.Options.model_validate(dict(options)))
    if not isinstance(built, Relation):
        raise TypeError(f"{relation.__name__} is not a relation (no make_case or step)")
    return built


def cases(
    relation: type[RelationBase] | Relation,
    options: BaseModel | Mapping[str, Any] | None = None,
    *,
    indexes: st.SearchStrategy[int] | None = None,
    model: str = "fake:model",
) -> st.SearchStrategy[Case]:
    """Cases of ``relation`` (built with ``options``): a drawn index (within its
    ``case_count`` when it has one), campaign seed and repeat, as a campaign plans them."""
    built = relation_of(relation, options)
    count = built.case_count()
    if indexes is None:
        if count == 0:
            return st.nothing()
        indexes = st.integers(0, (count - 1) if count is not None else 10**6)
    return st.builds(
        lambda index, seed, repeat: case_for(
            built, index, campaign_seed=seed, repeat=repeat, model=model
        ),
        indexes,
        st.integers(0, 2**31),
        st.integers(0, 3),
    )


def hostile_texts() -> st.SearchStrategy[str]:
    """Text chosen to break a careless reader: NULs, lone surrogates, control and
    bidirectional characters, markup of every kind, unbalanced brackets, huge replies."""
    odd = st.characters(
        categories=("Cc", "Cf", "Cs", "Co", "Zs", "Zl", "Zp", "Sm", "Ps", "Pe", "So")
    )
    return st.one_of(
        st.sampled_from(HOSTILE_SAMPLES),
        st.text(alphabet=odd, max_size=40),
        st.builds(lambda t, n: t * n, st.text(min_size=1, max_size=8), st.integers(1, 20_000)),
    )


def any_replies() -> st.SearchStrategy[str]:
    """Any text at all: arbitrary Unicode, hostile text, refusals."""
    return st.one_of(st.text(max_size=200), hostile_texts(), st.sampled_from(REFUSAL_SAMPLES))


_WORD = re.compile(r"[^\W\d_][\w'-]*")
_LIST = re.compile(r"\[([^\[\]]*)\]")


def _prompt_words(prompt: str) -> list[str]:
    """Words and list items of a prompt, first mentions first (bounded)."""
    found: dict[str, None] = {}
    for body in _LIST.findall(prompt):
        for item in body.split(","):
            if item.strip():
                found.setdefault(item.strip().strip("\"'"), None)
    for word in _WORD.findall(prompt):
        found.setdefault(word, None)
    return list(found)[:60]


def _shaped_values(shape: AnswerShape) -> st.SearchStrategy[Any]:
    options = list(shape.options)
    if shape.kind == "terms":
        return st.lists(st.sampled_from(options), unique=True) if options else st.just([])
    if shape.kind == "ranking":
        return st.permutations(options) if options else st.just([])
    if shape.kind == "score":
        return st.integers(shape.low, shape.high)
    if shape.kind == "json":
        return _schema_values(shape.verdict_schema or {"type": "object"})
    return st.sampled_from(options) if options else st.text(max_size=10)


_PROSE = st.text(
    alphabet=st.characters(categories=("L", "N", "Zs", "P")), min_size=1, max_size=60
).filter(str.strip)


def _schema_values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values a JSON schema allows (the subset answer shapes use: enum, type, properties,
    required, items)."""
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", properties))
        return st.fixed_dictionaries(
            {k: _schema_values(v) for k, v in properties.items() if k in required},
            optional={k: _schema_values(v) for k, v in properties.items() if k not in required},
        )
    if kind == "array":
        return st.lists(_schema_values(schema.get("items", {"type": "string"})), max_size=5)
    if kind == "integer":
        return st.integers(-3, 12)
    if kind == "number":
        return st.floats(-3, 12, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    return _PROSE


def fitting_replies(ask: Ask) -> st.SearchStrategy[str]:
    """Replies that fit ``ask``: with an answer shape, a value it allows, as the structured
    JSON answer or as the free answer the relation's parser reads ("[a, b]", "Yes", "3");
    without one, words and list items of the prompt in the forms answers take (a list, a
    word, a sentence, a JSON list, numbered questions)."""
    shape = ask.answer
    if shape is not None:
        encoded = _shaped_values(shape).map(shape.encode)
        return st.one_of(encoded, encoded.map(shape.free_text))
    words = _prompt_words(ask.prompt) or ["Yes", "No"]
    pick = st.lists(st.sampled_from(words), min_size=1, max_size=6)
    return st.one_of(
        st.lists(st.sampled_from(words), max_size=6).map(lambda w: "[" + ", ".join(w) + "]"),
        st.sampled_from([*words, "Yes", "No", "Yes.", "No."]),
        pick.map(" ".join),
        st.builds(lambda w, n: f"{' '.join(w)} {n}.", pick, st.integers(-3, 12)),
        pick.map(lambda w: json.dumps(w, ensure_ascii=False)),  # a JSON list
        st.lists(pick, min_size=1, max_size=5).map(  # numbered questions, one a line
            lambda lines: "\n".join(
                f"{i}. {' '.join(w).capitalize()}?" for i, w in enumerate(lines, 1)
            )
        ),
    )


def replies(ask: Ask) -> st.SearchStrategy[str]:
    """Replies to ``ask`` as a model may send them: mostly fitting, sometimes arbitrary or
    hostile text or a refusal."""
    return st.one_of(fitting_replies(ask), fitting_replies(ask), any_replies())


def failures() -> st.SearchStrategy[str]:
    """A failed turn's ``error``: ``"kind: message"`` as the engine records it."""
    return st.builds(
        lambda kind, message: f"{kind}: {message}",
        st.sampled_from(FAILURE_KINDS),
        st.sampled_from(["", "HTTP 500", "the reply was cut", "content policy"])
        | st.text(max_size=30),
    )


def failed_turns(ask: Ask, index: int = 0) -> st.SearchStrategy[Turn]:
    """``ask`` as a turn whose call failed for good."""
    return failures().map(lambda error: Turn(index=index, ask=ask, error=error))


@dataclass(frozen=True)
class DrivenCase:
    """A case driven through its relation: the transcript of the replies drawn and the
    verdict it reached (None when it had not decided within the steps allowed)."""

    case: Case
    transcript: Transcript
    verdict: Verdict | None
    steps: int


def drive_with(
    draw: Callable[[st.SearchStrategy[Any]], Any],
    relation: Relation,
    case: Case,
    *,
    reply: Callable[[Ask], st.SearchStrategy[str]] = replies,
    failure_rate: st.SearchStrategy[bool] | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> DrivenCase:
    """Drive ``case`` with replies drawn by ``draw`` (a ``st.data().draw`` or a composite's
    ``draw``) from ``reply(ask)``, some turns failing; the relation's exceptions propagate.
    Each reply is made recordable (`recordable_text`) as the log makes it."""
    fails = failure_rate if failure_rate is not None else st.integers(0, 9).map(lambda n: n == 0)
    transcript = Transcript()
    for steps in range(max_steps + 1):
        result = relation.step(case, transcript)
        if isinstance(result, Verdict):
            return DrivenCase(case, transcript, result, steps)
        if steps == max_steps or not result:
            break
        first = len(transcript.turns)
        turns = []
        for i, ask in enumerate(result):
            if draw(fails):
                turns.append(draw(failed_turns(ask, first + i)))
            else:
                text = recordable_text(draw(reply(ask)))
                turns.append(Turn(index=first + i, ask=ask, reply=text))
        transcript = transcript.extend(turns)
    return DrivenCase(case, transcript, None, max_steps)


def transcripts(
    relation: type[RelationBase] | Relation,
    options: BaseModel | Mapping[str, Any] | None = None,
    *,
    reply: Callable[[Ask], st.SearchStrategy[str]] = replies,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> st.SearchStrategy[DrivenCase]:
    """Cases of ``relation`` driven to their verdicts with drawn replies (`replies` by
    default: pass `fitting_replies` for well-formed answers only) and failed turns."""
    built = relation_of(relation, options)

    @st.composite
    def driven(draw: st.DrawFn) -> DrivenCase:
        case = draw(cases(built))
        return drive_with(draw, built, case, reply=reply, max_steps=max_steps)

    return driven()
