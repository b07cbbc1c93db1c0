"""The term-list parser against its earlier formula: `bracketed_lists`, the resolver and
`parse_reply` were rewritten for speed (replay re-parses every reply of a log), and must give
exactly the results of the code below, kept here as the reference, on any reply, term list
and earlier questions."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from relations.metaquerier import termlist
from relations.metaquerier.corpus import social_terms
from relations.metaquerier.termlist import (
    _EMPTY_ITEMS,
    _NONE_ECHO,
    _QUOTES,
    _WORD,
    FORMAT_EXAMPLE,
    NONE_INSTRUCTION,
    ParsedList,
    Unparseable,
    echoes_example,
    format_list,
    match_items,
    normalise,
    parse_reply,
)

# --- the reference: the parser as it was before the rewrite ------------------------------


def old_bracketed_lists(reply: str) -> list[list[str]] | Unparseable:
    if not reply.strip():
        return Unparseable("empty reply")
    found = re.compile(r"\[([^\[\]]*)\]", re.DOTALL).findall(reply)
    if not found:
        return Unparseable("no bracketed list in the reply")
    return [
        [i.strip() for i in re.split(r"[,\n;]", body) if i.strip().strip(_QUOTES).strip()]
        for body in found
    ]


class OldResolver:
    def __init__(self, terms: Iterable[str]) -> None:
        self.by_norm: dict[str, str] = {}
        for term in terms:
            self.by_norm.setdefault(normalise(term), term)
        self.order = {t: i for i, t in enumerate(self.by_norm.values())}

    def resolve(self, item: str) -> tuple[str, bool] | None:
        norm = normalise(item)
        if norm in _EMPTY_ITEMS or not _WORD.search(norm):
            return None
        if norm not in self.by_norm and norm.endswith("s") and norm[:-1] in self.by_norm:
            norm = norm[:-1]
        if norm in self.by_norm:
            return self.by_norm[norm], True
        if echoes_example(norm):
            return None
        return norm, False


def old_is_restatement(items: list[str], asked: Sequence[Sequence[str]]) -> bool:
    if not items:
        return False
    for question in asked:
        if len(question) < 2:
            continue
        if len(items) < len(set(question)):
            continue
        resolver = OldResolver(tuple(question))
        named = {resolver.resolve(i) for i in items} - {None}
        if named == {(t, True) for t in question}:
            return True
    return False


def old_is_example(items: list[str]) -> bool:
    if not any(echoes_example(i) for i in items):
        return False
    return all(echoes_example(i) or not _WORD.search(normalise(i)) for i in items)


def old_match_items(answer: Sequence[str], terms: Sequence[str]) -> ParsedList:
    resolver = OldResolver(tuple(terms))
    named: set[str] = set()
    hallucinated: list[str] = []
    for item in answer:
        found = resolver.resolve(item)
        if found is None:
            continue
        text, known = found
        if known:
            named.add(text)
        elif text not in hallucinated:
            hallucinated.append(text)
    return ParsedList(
        named=tuple(sorted(named, key=resolver.order.__getitem__)),
        hallucinated=tuple(hallucinated),
        raw_items=tuple(answer),
    )


def old_parse_reply(
    reply: str, terms: Sequence[str], *, asked: Sequence[Sequence[str]] = ()
) -> ParsedList | Unparseable:
    lists = old_bracketed_lists(_NONE_ECHO.sub(" ", reply))
    if isinstance(lists, Unparseable):
        return lists
    questions = [list(terms), *(list(q) for q in asked)]
    skipped: list[str] = []
    answer: list[str] | None = None
    for items in reversed(lists):
        if old_is_example(items):
            skipped.append("the reply only repeats the format instruction's example")
        elif old_is_restatement(items, questions):
            skipped.append("the reply only restates the question's whole list")
        elif items and not any(_WORD.search(normalise(i)) for i in items):
            skipped.append(f"the reply's list holds no word: {format_list(items)[:60]}")
        else:
            answer = items
            break
    if answer is None:
        return Unparseable("; ".join(dict.fromkeys(reversed(skipped))))
    return old_match_items(answer, terms)


# --- generated inputs ---------------------------------------------------------------------

TERMS = [t.text for t in social_terms()]
# Terms and their variants (plural, case, quotes, bullets), the example, empty words, a
# wordless item, hallucinations, and every separator and bracket the parser splits on.
_PIECES = st.one_of(
    st.sampled_from(TERMS),
    st.sampled_from(TERMS).map(lambda t: t + "s"),
    st.sampled_from(TERMS).map(str.upper),
    st.sampled_from(TERMS).map(lambda t: f'"{t}"'),
    st.sampled_from(TERMS).map(lambda t: f"- {t}."),
    st.sampled_from([*FORMAT_EXAMPLE, "third term", "first_term", "none", "N/A", "/", "''"]),
    st.sampled_from(["women", "People", "wives", "Hindus", "zqak", "  ", "*", "`"]),
    st.sampled_from(
        [",", ", ", ";", "\n", "[", "]", "[]", NONE_INSTRUCTION, "if none are reply []"]
    ),
    st.text(alphabet=string.ascii_letters + " ,;[]\n'\"*-.", max_size=12),
)
_ITEMS = _PIECES.filter(lambda p: not set(p) & set(",;[]\n"))
_LIST = st.tuples(st.lists(_ITEMS, max_size=8), st.sampled_from([",", ", ", ";", "\n", " , "]))
_LISTED = st.lists(
    st.tuples(st.sampled_from(["", "Sure: ", "\n", "The list "]), _LIST), min_size=1, max_size=3
).map(lambda lists: "".join(f"{prose}[{sep.join(items)}]" for prose, (items, sep) in lists))
# Free mixtures of the pieces, and replies of one to three bracketed lists of such items.
_REPLIES = st.one_of(st.lists(_PIECES, max_size=14).map("".join), _LISTED)


@st.composite
def _term_lists(draw: st.DrawFn) -> list[str]:
    terms = draw(st.lists(st.sampled_from(TERMS), min_size=1, max_size=9))
    if draw(st.booleans()):  # two spellings of one normal form: the first is canonical
        terms.append(draw(st.sampled_from(terms)).upper() + "s")
    return terms


@settings(max_examples=600, deadline=None)
@given(
    reply=_REPLIES,
    terms=_term_lists(),
    asked=st.lists(_term_lists(), max_size=2),
    restated=st.sampled_from([None, 0, 1, -1]),
)
def test_parse_reply_is_the_old_formula(
    reply: str, terms: list[str], asked: list[list[str]], restated: int | None
) -> None:
    questions = [terms, *asked]
    if restated is not None and restated < len(questions):  # a list asked about, echoed last
        reply += " " + format_list(questions[restated])
    termlist._parse_reply.cache_clear()
    termlist._resolver.cache_clear()
    assert parse_reply(reply, terms, asked=asked) == old_parse_reply(reply, terms, asked=asked)
    # and again from the caches, with the lists as tuples
    assert parse_reply(reply, tuple(terms), asked=tuple(map(tuple, asked))) == old_parse_reply(
        reply, terms, asked=asked
    )


@settings(max_examples=400, deadline=None)
@given(reply=_REPLIES)
def test_bracketed_lists_is_the_old_formula(reply: str) -> None:
    assert termlist.bracketed_lists(reply) == old_bracketed_lists(reply)


@settings(max_examples=300, deadline=None)
@given(answer=st.lists(_PIECES, max_size=8), terms=_term_lists())
def test_match_items_is_the_old_formula(answer: list[str], terms: list[str]) -> None:
    termlist._resolver.cache_clear()
    assert match_items(answer, terms) == old_match_items(answer, terms)
    resolver, old = termlist._Resolver(terms), OldResolver(terms)
    assert (resolver.by_norm, resolver.order) == (old.by_norm, old.order)
    assert list(resolver.by_norm) == list(old.by_norm)  # the same order of normal forms
