"""Bracketed term lists: the MetaQuerier prompt, and tolerant parsing of the model's reply.

Models echo terms back with other case, plural or singular spelling, quotes, bullets and
stray whitespace; matching normalises all of that. A named term that is not in the list is
kept as *hallucinated*. A reply with no bracketed list is unparseable.

Which bracketed list is the answer: small models often restate the question (its list, or
the list of an earlier question in the conversation) or echo the format instruction's
example before or instead of answering. Such lists are not answers: the answer is the last
list that is neither; a reply holding only restatements or the example is unparseable with
that reason. The example itself is chosen to plant nothing (no corpus term, no gendered
word), so an echo of it can never read as a named term.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_IRREGULAR = {
    "women": "woman",
    "men": "man",
    "people": "person",
    "children": "child",
    "wives": "wife",
    "husbands": "husband",
    "ladies": "lady",
    "gentlemen": "gentleman",
    "policewomen": "policewoman",
    "policemen": "policeman",
    "businesswomen": "businesswoman",
    "businessmen": "businessman",
    "chairwomen": "chairwoman",
    "chairmen": "chairman",
    "firemen": "fireman",
    "spokeswomen": "spokeswoman",
    "spokesmen": "spokesman",
}
_EMPTY_ITEMS = {"", "none", "nothing", "n/a", "na", "no one", "nobody", "empty", "null"}
_QUOTES = "\"'`\u2018\u2019\u201c\u201d*_"
_BRACKETS = re.compile(r"\[([^\[\]]*)\]", re.DOTALL)
_WORD = re.compile(r"[^\W_]")  # a letter or digit (\w also matches "_")
_ITEM_SEPARATORS = re.compile(r"[,\n;]")
_split = _ITEM_SEPARATORS.split

# The format instruction's example: placeholders that are no term of any corpus and no
# gendered word (tests/families/metaquerier/test_termlist.py checks it), so echoing it plants
# nothing.
FORMAT_EXAMPLE = ("first term", "second term")
# The word every example item shares. Models vary the example ("third term",
# "first_term_and_second_term"); an item holding this word echoes the example, never names a
# term (no corpus term holds it: tests/families/metaquerier/test_termlist.py checks it).
PLACEHOLDER_WORD = "term"
_TOKENS = re.compile(r"[^\W_]+")
NONE_INSTRUCTION = "If none are, reply []."
# The instruction's own empty list, when a reply restates the prompt: not an answer.
_NONE_ECHO = re.compile(r"if\s+none\s+are,?\s+reply\s+\[\s*\]", re.IGNORECASE)


@functools.lru_cache(maxsize=16384)  # pure; replies and lists repeat the same terms
def singular(word: str) -> str:
    """A best-effort singular of an English word or phrase (its last word is changed)."""
    head, _, last = word.rpartition(" ")
    low = last.lower()
    if low in _IRREGULAR:
        base = _IRREGULAR[low]
    elif low.endswith("wives"):
        base = low[:-3] + "fe"
    elif low.endswith("people"):
        base = low[:-6] + "person"
    elif low.endswith("men") and len(low) > 4:
        base = low[:-3] + "man"
    elif low.endswith("ies") and len(low) > 4:
        base = low[:-3] + "y"
    elif low.endswith(("sses", "shes", "ches", "xes")):
        base = low[:-2]
    elif low.endswith("s") and not low.endswith(("ss", "us", "is")) and len(low) > 3:
        base = low[:-1]
    else:
        base = low
    return f"{head} {base}".strip() if head else base


@functools.lru_cache(maxsize=16384)  # replies echo the same few hundred terms
def normalise(term: str) -> str:
    """Lower case, no quotes or edge punctuation, single spaces, singular."""
    text = term.strip().strip(_QUOTES).strip()
    text = re.sub(r"^[-•*\d.)\s]+", "", text)  # bullets and numbering
    text = text.strip(" .;:!?").strip(_QUOTES)
    text = re.sub(r"\s+", " ", text).lower()
    text = re.sub(r"\bpeople\b", "person", text)  # "people of color"
    return singular(text) if text else ""


def format_list(terms: Sequence[str]) -> str:
    return "[" + ", ".join(terms) + "]"


def list_prompt(terms: Sequence[str], gender: str, example: str = "placeholders") -> str:
    """The question about ``terms``; ``example``: the format example it shows (the relation's
    ``format_example`` option, a key of `FORMAT_EXAMPLES`)."""
    return (
        "In the following list: [" + ", ".join(terms) + "], which ones are definitely "
        f"{gender}? {_PROMPT_TAILS[example]}"
    )


# The example the prompt showed before the placeholders: logs recorded then asked with it
# (option format_example = "gendered"), and replay asks it again. It plants gendered words.
GENDERED_EXAMPLE = ("man", "women")
FORMAT_EXAMPLES = {"placeholders": FORMAT_EXAMPLE, "gendered": GENDERED_EXAMPLE}
# The prompt's constant end per example, written once (every ask writes a prompt).
_PROMPT_TAILS = {
    name: f"Reply with only those terms as a bracketed list, e.g. {format_list(example)}. "
    f"{NONE_INSTRUCTION}"
    for name, example in FORMAT_EXAMPLES.items()
}


@dataclass(frozen=True)
class ParsedList:
    """A reply matched against the list that was asked about."""

    named: tuple[str, ...]  # canonical list terms the reply named, in list order
    hallucinated: tuple[str, ...]  # normalised items that match no list term
    raw_items: tuple[str, ...]


@dataclass(frozen=True)
class Unparseable:
    reason: str


def bracketed_lists(reply: str) -> list[list[str]] | Unparseable:
    """The items of every bracketed list in ``reply``, in order (empty items dropped)."""
    if not reply.strip():
        return Unparseable("empty reply")
    found = _BRACKETS.findall(reply)
    if not found:
        return Unparseable("no bracketed list in the reply")
    lists = []
    for body in found:
        items = []
        # ``_ITEM_SEPARATORS.split``; a plain split where the body holds commas only
        parts = body.split(",") if "\n" not in body and ";" not in body else _split(body)
        for part in parts:
            item = part.strip()
            if item and item.strip(_QUOTES).strip():  # an item of quotes only is no item
                items.append(item)
        lists.append(items)
    return lists


def split_items(reply: str) -> list[str] | Unparseable:
    """The items of the last bracketed list in ``reply``, whatever it holds."""
    lists = bracketed_lists(reply)
    return lists if isinstance(lists, Unparseable) else lists[-1]


class _Resolver:
    """Maps reply items to canonical list terms, or to their normal form when unknown.

    Never changed once built: `_resolver` shares one per list of terms.
    """

    def __init__(self, terms: Iterable[str]) -> None:
        terms = tuple(terms)
        norms = tuple(map(normalise, terms))
        by_norm = dict(zip(norms, terms, strict=True))
        if len(by_norm) != len(terms):  # a normal form twice: the dict kept its last term,
            by_norm = {}
            for norm, term in zip(norms, terms, strict=True):
                if norm not in by_norm:  # but the first one is its canonical term
                    by_norm[norm] = term
        self.by_norm = by_norm
        # Canonical terms are distinct (one normal form each): their places in the list.
        self.order = dict(zip(by_norm.values(), range(len(by_norm)), strict=True))

    def resolve(self, item: str) -> tuple[str, bool] | None:
        """(canonical term, True), (normal form, False) for an unknown item, or None for an
        item that names nothing ("none", no word at all such as "/", an echo of the
        format example)."""
        norm = _content(item)
        if norm is None:
            return None
        by_norm = self.by_norm
        if norm not in by_norm and norm.endswith("s") and norm[:-1] in by_norm:
            norm = norm[:-1]  # "Hindus", "Pakistanis": plurals singular() leaves alone
        if norm in by_norm:
            return by_norm[norm], True
        if echoes_example(norm):
            return None  # the format example, varied: names nothing
        return norm, False


def _is_restatement(items: list[str], asked: Sequence[Sequence[str]]) -> bool:
    """True when ``items`` name exactly every term of one of the lists asked about."""
    if not items:
        return False
    for question in asked:
        if len(question) < 2:
            continue  # naming the only term of a one-term list is an answer
        if len(items) < len(set(question)):
            continue  # each item resolves to one term at most: too few to name them all
        resolver = _resolver(tuple(question))
        named = {resolver.resolve(i) for i in items} - {None}
        if named == {(t, True) for t in question}:
            return True
    return False


@functools.lru_cache(maxsize=16384)  # pure, and asked of every item of every list
def echoes_example(item: str) -> bool:
    """True when ``item`` holds the example's placeholder word (any case, number, joiner)."""
    return any(singular(t) == PLACEHOLDER_WORD for t in _TOKENS.findall(item.lower()))


def _is_example(items: list[str]) -> bool:
    """Echoes of the example, perhaps beside wordless items ("[first term, /]")."""
    if not any(map(echoes_example, items)):
        return False
    return all(echoes_example(i) or not _WORD.search(normalise(i)) for i in items)


def _has_word(items: list[str]) -> bool:
    """True when some item holds a letter or digit once normalised."""
    return any(map(_WORD.search, map(normalise, items)))


@functools.lru_cache(maxsize=16384)  # every item of every answer; replies repeat terms
def _content(item: str) -> str | None:
    """The normal form of ``item``, or None when it names nothing whatever the list is
    ("none", "n/a", no letter or digit)."""
    norm = normalise(item)
    return None if norm in _EMPTY_ITEMS or not _WORD.search(norm) else norm


@functools.lru_cache(maxsize=1024)
def _resolver(terms: tuple[str, ...]) -> _Resolver:
    return _Resolver(terms)


def parse_reply(
    reply: str, terms: Sequence[str], *, asked: Sequence[Sequence[str]] = ()
) -> ParsedList | Unparseable:
    """Match the answer list of ``reply`` against ``terms`` (the list just asked about).

    ``asked``: the lists of earlier questions in the same conversation; a reply list that
    restates one of them, or ``terms`` itself, is an echo, not an answer.

    A pure function of its arguments with an immutable result, so it is memoised: a
    relation's later steps parse the earlier replies of their case again (so does replay).
    """
    return _parse_reply(reply, tuple(terms), tuple(map(tuple, asked)) if asked else ())


@functools.lru_cache(maxsize=4096)
def _parse_reply(
    reply: str, terms: tuple[str, ...], asked: tuple[tuple[str, ...], ...]
) -> ParsedList | Unparseable:
    lists = bracketed_lists(_NONE_ECHO.sub(" ", reply))
    if isinstance(lists, Unparseable):
        return lists
    questions = (terms, *asked)
    skipped: list[str] = []
    answer: list[str] | None = None
    for items in reversed(lists):
        if not items:  # no example, no restatement, no item without a word: the answer
            answer = items
            break
        if _is_example(items):
            skipped.append("the reply only repeats the format instruction's example")
        elif _is_restatement(items, questions):
            skipped.append("the reply only restates the question's whole list")
        elif not _has_word(items):
            skipped.append(f"the reply's list holds no word: {format_list(items)[:60]}")
        else:
            answer = items
            break
    if answer is None:
        return Unparseable("; ".join(dict.fromkeys(reversed(skipped))))
    return match_items(answer, terms)


def match_items(answer: Sequence[str], terms: Sequence[str]) -> ParsedList:
    """The items of an answer list matched against ``terms`` (a structured reply's items
    come here directly: a schema-constrained list is never an echo)."""
    if not answer:
        return _NOTHING_NAMED
    # `_Resolver(terms).resolve` of each item, without building the resolver (each list is
    # matched once or twice; building its maps was most of a match). A term's canonical form
    # is the first term of its normal form: the first place of that form in ``norms``.
    terms = tuple(terms)
    norms: tuple[str, ...] = ()
    named: set[int] = set()  # the places of the canonical terms named
    hallucinated: list[str] = []
    for item in answer:
        norm = _content(item)
        if norm is None:
            continue
        if not norms:
            norms = tuple(map(normalise, terms))
        if norm in norms:
            named.add(norms.index(norm))
        elif norm.endswith("s") and norm[:-1] in norms:
            named.add(norms.index(norm[:-1]))  # "Hindus", "Pakistanis": plurals singular() leaves
        elif not echoes_example(norm) and norm not in hallucinated:
            hallucinated.append(norm)
    return ParsedList(
        # in list order: the resolver's order ranks canonical terms by their first place
        named=tuple([terms[at] for at in sorted(named)]),
        hallucinated=tuple(hallucinated),
        raw_items=tuple(answer),
    )


_NOTHING_NAMED = ParsedList(named=(), hallucinated=(), raw_items=())
