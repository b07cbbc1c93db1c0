"""MetaQuerier's cases and steps against their earlier formulas, kept here as the oracle:
`_draw_case`, `case_rng`, the parse and the steps were rewritten for speed (the engine and
``replay --verify`` run them for every case), and must give the very same case data, asks
and verdicts for any options, seed, index and replies."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.relation import Ask, Case, Outcome, Transcript, Turn, Verdict, derive_seed
from relations.metaquerier import termlist
from relations.metaquerier.corpus import GROUPS, terms_by_group
from relations.metaquerier.relations import (
    THREAD,
    TermDeletion,
    TermInsertion,
    TermListOptions,
    _group_counts,
)
from relations.metaquerier.termlist import (
    FORMAT_EXAMPLE,
    NONE_INSTRUCTION,
    ParsedList,
    Unparseable,
    format_list,
    match_items,
    parse_reply,
)

# --- the oracle: the code as it was before the rewrite ------------------------------------


def old_draw_case(options: TermListOptions, index: int, seed: int, *, inserted: int) -> dict:
    rng = random.Random(derive_seed(seed, index, "metaquerier"))
    by_group = terms_by_group()
    pool = tuple(t for g in tuple(options.groups) for t in by_group.get(g, ()))
    if len(pool) < options.list_size + inserted:
        raise ValueError("the corpus is smaller than list_size + insert_size")
    chosen = rng.sample(pool, options.list_size + inserted)
    source, extra = chosen[: options.list_size], chosen[options.list_size :]
    return {
        "terms": [t.text for t in source],
        "inserted": [t.text for t in extra],
        "gender": rng.choice(options.genders),
        "groups": {t.text: t.group for t in chosen},
    }


def old_list_prompt(terms: list[str], gender: str) -> str:
    return (
        f"In the following list: {format_list(terms)}, which ones are definitely {gender}? "
        f"Reply with only those terms as a bracketed list, e.g. {format_list(FORMAT_EXAMPLE)}. "
        f"{NONE_INSTRUCTION}"
    )


def old_parse(
    reply: str | None, error: str | None, terms: list[str], label: str, asked: Any = None
) -> ParsedList | Verdict:
    if reply is None:
        return Verdict(outcome=Outcome.INVALID, reason=f"{label} call failed: {error}")
    structured = AnswerShape.terms(terms).read(reply)
    if structured is not None:
        return match_items(structured, terms)
    parsed = parse_reply(reply, terms, asked=asked or [])
    if isinstance(parsed, Unparseable):
        return Verdict(
            outcome=Outcome.INVALID,
            reason=f"{label} reply unparseable: {parsed.reason}",
            evidence={"reply": reply[:500]},
        )
    return parsed


def old_ask(terms: list[str], gender: str) -> Ask:
    return Ask(
        thread=THREAD, prompt=old_list_prompt(terms, gender), answer=AnswerShape.terms(terms)
    )


def old_step(relation: Any, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
    turns = transcript.thread(THREAD)
    terms: list[str] = list(case.data["terms"])
    gender: str = case.data["gender"]
    if not turns:
        return [old_ask(terms, gender)]
    source = old_parse(turns[0].reply, turns[0].error, terms, "source")
    if isinstance(source, Verdict):
        return source
    follow_terms = relation.follow_up_terms(case, source)
    if not follow_terms:
        return Verdict(
            outcome=Outcome.INVALID,
            reason="the source reply named every term: the follow-up list would be empty",
            evidence={"source_named": list(source.named)},
        )
    if len(turns) == 1:
        return [old_ask(follow_terms, gender)]
    follow = old_parse(turns[1].reply, turns[1].error, follow_terms, "follow-up", [terms])
    if isinstance(follow, Verdict):
        return follow
    return relation.judge(case, source, follow, follow_terms)


# --- generated inputs ---------------------------------------------------------------------

_OPTIONS = st.builds(
    dict,
    list_size=st.integers(2, 25),
    insert_size=st.integers(1, 12),
    groups=st.lists(st.sampled_from(GROUPS), min_size=1, max_size=4),
    genders=st.lists(st.sampled_from(["female", "male"]), min_size=1, max_size=3),
)


def _options(raw: dict) -> TermListOptions | None:
    try:
        return TermListOptions.model_validate(raw)
    except ValueError:
        return None


@settings(deadline=None, max_examples=300)  # a shared, loaded machine: no per-example limit
@given(
    raw=_OPTIONS,
    index=st.integers(0, 10**6),
    seed=st.integers(-(2**64), 2**64),
    mr2=st.booleans(),
)
def test_make_case_is_the_old_formula(raw: dict, index: int, seed: int, mr2: bool) -> None:
    options = _options(raw)
    if options is None:
        return
    relation = (TermInsertion if mr2 else TermDeletion)(options)
    inserted = options.insert_size if mr2 else 0
    ours = relation.make_case(index, seed)
    # The draw is the old one; the case also records the reading rules it is read by.
    assert ours.pop("reading") == 2
    assert ours == old_draw_case(options, index, seed, inserted=inserted)
    assert list(ours) == ["terms", "inserted", "gender", "groups"]
    assert list(ours["groups"]) == list(
        old_draw_case(options, index, seed, inserted=inserted)["groups"]
    )


def _reply(draw: st.DrawFn, terms: list[str]) -> str | None:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return None  # a failed call
    picked = draw(st.lists(st.sampled_from([*terms, "zqak", "first term", "none", "women"])))
    if kind == 1:
        return AnswerShape.terms(terms).encode(picked)  # a structured reply
    if kind == 2:
        return draw(st.sampled_from(["", "I am not sure.", "[]", "{}", ' {"terms": 3}', "[/]"]))
    if kind == 3:  # a restated question before the answer
        return f"{format_list(terms)} ok: {format_list(picked)}"
    sep = draw(st.sampled_from([", ", ",", ";", "\n", " ; "]))
    return "Sure: [" + sep.join(picked) + "]"


def _dumped(result: list[Ask] | Verdict) -> str | list[str]:
    if isinstance(result, Verdict):
        return result.model_dump_json()
    return [a.model_dump_json() for a in result]


@settings(deadline=None, max_examples=300)
@given(data=st.data(), index=st.integers(0, 5000), mr2=st.booleans(), small=st.booleans())
def test_steps_are_the_old_formula(data: st.DataObject, index: int, mr2: bool, small: bool) -> None:
    raw = {"list_size": 2, "insert_size": 1} if small else {}
    relation = (TermInsertion if mr2 else TermDeletion)(TermListOptions.model_validate(raw))
    seed = derive_seed(7, relation.name, index)
    case = Case(
        case_id="c",
        relation=relation.name,
        model="m",
        index=index,
        repeat=0,
        seed=seed,
        data=relation.make_case(index, seed),
    )
    termlist._parse_reply.cache_clear()
    transcript = Transcript()
    if data.draw(st.booleans()):  # a turn of another thread (a judge's) is not the case's
        other = Ask(thread="judge:0", prompt="?", role="judge")
        transcript = transcript.extend([Turn(index=0, ask=other, reply="[woman]")])
    while True:
        ours, theirs = relation.step(case, transcript), old_step(relation, case, transcript)
        assert _dumped(ours) == _dumped(theirs)
        assert ours == theirs
        if isinstance(ours, Verdict):
            return
        asked = ours[0]
        reply = _reply(data.draw, list(asked.answer.options) if asked.answer else [])
        error = "server: boom" if reply is None else None
        turn = Turn(index=len(transcript.turns), ask=asked, reply=reply, error=error)
        transcript = transcript.extend([turn])


def test_group_counts_default() -> None:
    assert _group_counts(["a", "b"], {"a": "race"}) == {"a": "race", "b": "unknown"}
