"""Bracketed term lists: the prompt, and tolerant parsing of whatever the model echoes back."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relations.metafair.corpus import attribute_catalogue
from relations.metaquerier.corpus import Term, social_terms
from relations.metaquerier.termlist import (
    FORMAT_EXAMPLE,
    PLACEHOLDER_WORD,
    ParsedList,
    Unparseable,
    format_list,
    list_prompt,
    normalise,
    parse_reply,
    split_items,
)

TERMS = social_terms()

# --- strategies (test_metaquerier imports them too) ------------------------------------

# Hallucinated items: lowercase, no 's' and a fixed last letter, so that no singular rule
# touches them and their normal form is simply their lower case.
CASINGS: list[Callable[[str], str]] = [str.lower, str.upper, str.title, lambda s: s]
EXTRA_POOL = ("zqak", "zqbrik", "zqunk", "zqdolk", "zqfek")
_PROSE = st.text(alphabet=string.ascii_letters + " .,:!?'\n", max_size=40)


@st.composite
def term_lists(draw: st.DrawFn, min_size: int = 2, max_size: int = 10) -> list[Term]:
    """Distinct corpus terms, as a case's list."""
    return draw(
        st.lists(
            st.sampled_from(TERMS), min_size=min_size, max_size=max_size, unique_by=lambda t: t.text
        )
    )


@dataclass(frozen=True)
class Answer:
    text: str
    named: frozenset[str]  # canonical list terms the answer names
    extras: frozenset[str]  # hallucinated items, as their normal form (lower case)


@st.composite
def echoed(draw: st.DrawFn, term: Term) -> str:
    """How a model may echo a term: singular or plural, any case, quoted, padded."""
    word = draw(st.sampled_from([term.text, term.plural]))
    word = draw(st.sampled_from(CASINGS))(word)
    word = word.replace(" ", draw(st.sampled_from([" ", "  ", "\t"])))
    quote = draw(st.sampled_from(["", '"', "'", "`", "*", "\u201c"]))
    close = "\u201d" if quote == "\u201c" else quote
    pad = draw(st.sampled_from(["", " ", "  ", "\t"]))
    return f"{pad}{quote}{word}{close}{pad}"


@st.composite
def list_answer(draw: st.DrawFn, terms: list[Term], *, extras: bool = True) -> Answer:
    """A bracketed reply naming a random subset of ``terms``, maybe with hallucinations."""
    chosen = draw(st.lists(st.sampled_from(terms), unique_by=lambda t: t.text)) if terms else []
    made_up = draw(st.lists(st.sampled_from(EXTRA_POOL), unique=True, max_size=2)) if extras else []
    items = [draw(echoed(t)) for t in chosen]
    items += [draw(st.sampled_from(CASINGS))(x) for x in made_up]
    items = draw(st.permutations(items))
    sep = draw(st.sampled_from([", ", ",", " , ", "\n", "; "]))
    prefix = draw(_PROSE) if draw(st.booleans()) else ""
    suffix = draw(_PROSE) if draw(st.booleans()) else ""
    text = f"{prefix}[{sep.join(items)}]{suffix}"
    return Answer(text, frozenset(t.text for t in chosen), frozenset(made_up))


@st.composite
def garbage_text(draw: st.DrawFn) -> str:
    """Replies that follow no list format: prose, refusals, half a bracket, nothing."""
    return draw(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_characters="[]"), max_size=80),
            st.sampled_from(["", "I'd rather not answer.", "nurse, pilot", "[nurse, pilot"]),
        )
    )


def test_every_corpus_term_is_listable() -> None:
    # A comma, bracket or semicolon inside a term would split it in the prompt and the reply.
    bad = [t.text for t in TERMS if re.search(r"[,;\[\]\n]", t.text)]
    assert bad == []


def test_no_two_corpus_terms_share_a_normal_form() -> None:
    # Two terms with one normal form could never be told apart in a reply.
    seen: dict[str, str] = {}
    clashes = []
    for term in TERMS:
        key = normalise(term.text)
        if key in seen:
            clashes.append((seen[key], term.text))
        seen[key] = term.text
    assert clashes == []


@pytest.mark.parametrize("term", TERMS, ids=lambda t: t.text)
def test_corpus_plural_matches_its_term(term: Term) -> None:
    parsed = parse_reply(f"[{term.plural}]", [term.text, "zqxk"])
    assert isinstance(parsed, ParsedList)
    assert parsed.named == (term.text,)
    assert parsed.hallucinated == ()


def test_extra_pool_never_matches_a_corpus_term() -> None:
    keys = {normalise(t.text) for t in TERMS}
    assert not keys & {normalise(x) for x in EXTRA_POOL}


def test_prompt_carries_the_list_and_the_gender() -> None:
    prompt = list_prompt(["nurse", "pilot"], "male")
    assert "[nurse, pilot]" in prompt
    assert "definitely male?" in prompt
    assert format_list([]) == "[]"


@pytest.mark.parametrize(
    ("reply", "named", "hallucinated"),
    [
        ("[]", (), ()),
        ("[none]", (), ()),
        ("[ Nurses , 'PILOT' ]", ("nurse", "pilot"), ()),
        ('Sure! The answer is ["nurse", "wizard"].', ("nurse",), ("wizard",)),
        ("[nurse]\n\nWait, actually: [pilot]", ("pilot",), ()),  # the last list counts
        ("[nurse, /]", ("nurse",), ()),  # an item without a word names nothing
        ("[nurse, third term]", ("nurse",), ()),  # nor does a variant of the example
        ("[\n- nurse\n- pilot\n]", ("nurse", "pilot"), ()),
        ("[Women; chairmen]", ("woman", "chairman"), ()),
        ("[Hindus, midwives, people of color]", ("Hindu", "midwife", "person of color"), ()),
    ],
)
def test_parse_examples(reply: str, named: tuple[str, ...], hallucinated: tuple[str, ...]) -> None:
    terms = ["nurse", "pilot", "woman", "chairman", "Hindu", "midwife", "person of color"]
    parsed = parse_reply(reply, terms)
    assert isinstance(parsed, ParsedList)
    assert set(parsed.named) == set(named)
    assert parsed.hallucinated == hallucinated


@pytest.mark.parametrize(
    "reply", ["", "   ", "Nurse and pilot.", "I cannot answer that.", "nurse]"]
)
def test_replies_without_a_list_are_unparseable(reply: str) -> None:
    parsed = parse_reply(reply, ["nurse", "pilot"])
    assert isinstance(parsed, Unparseable)
    assert parsed.reason


@settings(max_examples=300)
@given(data=st.data())
def test_parse_recovers_named_terms_and_hallucinations(data: st.DataObject) -> None:
    terms = data.draw(term_lists())
    answer = data.draw(list_answer(terms))
    parsed = parse_reply(answer.text, [t.text for t in terms])
    if answer.named == {t.text for t in terms} and not answer.extras:
        # Every term and nothing else: a restated question, not an answer.
        assert isinstance(parsed, Unparseable), answer.text
        assert "restates the question's whole list" in parsed.reason
        return
    assert isinstance(parsed, ParsedList), answer.text
    assert set(parsed.named) == answer.named
    assert set(parsed.hallucinated) == answer.extras
    # Named terms come back in list order, canonically spelled.
    order = [t.text for t in terms]
    assert list(parsed.named) == sorted(parsed.named, key=order.index)


@given(terms=term_lists(), text=garbage_text())
def test_garbage_is_unparseable_never_an_exception(terms: list[Term], text: str) -> None:
    parsed = parse_reply(text, [t.text for t in terms])
    assert isinstance(parsed, Unparseable)
    assert parsed.reason


@given(text=st.text(max_size=200))
def test_any_text_parses_or_is_unparseable(text: str) -> None:
    assert isinstance(parse_reply(text, ["nurse", "pilot"]), ParsedList | Unparseable)
    assert isinstance(split_items(text), list | Unparseable)


@given(
    term=st.sampled_from(TERMS),
    case=st.sampled_from(CASINGS),
    quote=st.sampled_from(["", '"', "'", "`", "\u201c", "*"]),
    pad=st.text(alphabet=" \t", max_size=3),
)
def test_normalise_ignores_case_quotes_and_whitespace(
    term: Term, case: Callable[[str], str], quote: str, pad: str
) -> None:
    variant = f"{pad}{quote}{case(term.text)}{quote}{pad}"
    assert normalise(variant) == normalise(term.text)


def test_normalise_collapses_inner_whitespace() -> None:
    assert normalise("dental \t  hygienists") == normalise("dental hygienist")


# --- prompts that plant nothing, and echoes that are no answer ----------------------------

# Words that carry a gender on their own, beyond the corpus's gendered terms.
_GENDERED_WORDS = {
    "he", "she", "him", "her", "his", "hers", "male", "female", "masculine", "feminine",
    "guy", "gal", "mr", "mrs", "ms", "miss", "sir", "madam",
}  # fmt: skip


def _every_corpus_word() -> set[str]:
    """Normal forms of every term of every corpus the relations draw from."""
    words = {normalise(t.text) for t in TERMS} | {normalise(t.plural) for t in TERMS}
    catalogue = attribute_catalogue()
    for attribute in (*catalogue.attributes, *catalogue.baselines):
        words.add(normalise(attribute.word))
    for _, _, names in catalogue.proper_nouns:
        words |= {normalise(n) for n in names}
    return words


def test_format_example_plants_no_corpus_term_and_no_gendered_word() -> None:
    corpus = _every_corpus_word()
    # Its placeholder word is in no corpus term, so an item holding it is always an echo.
    assert all(PLACEHOLDER_WORD in normalise(x).split() for x in FORMAT_EXAMPLE)
    assert not [w for w in corpus if PLACEHOLDER_WORD in re.split(r"[^a-z0-9]+", w)]
    gendered = _GENDERED_WORDS | {normalise(t.text) for t in TERMS if t.gender}
    for item in FORMAT_EXAMPLE:
        assert normalise(item) not in corpus, item
        assert not set(normalise(item).split()) & gendered, item
    # And the prompt shows exactly that example, nothing else in brackets but the list.
    prompt = list_prompt(["nurse", "pilot"], "female")
    assert re.findall(r"\[[^\]]*\]", prompt) == [
        "[nurse, pilot]",
        format_list(FORMAT_EXAMPLE),
        "[]",
    ]


def _question(terms: list[str]) -> str:
    return list_prompt(terms, "female")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("[first term, second term]", "format instruction's example"),
        ("e.g. [First Term, Second Terms]", "format instruction's example"),
        ("[first term, second term, third term]", "format instruction's example"),
        ("[second term]", "format instruction's example"),
        ("[first term, /]", "format instruction's example"),
        ("[first_term_and_second_term, first_term_and_last_term]", "format instruction's"),
        ("[nurse, pilot, woman]", "restates the question's whole list"),
        ("In the following list: [Nurses, pilot, women], hmm.", "restates the question's whole"),
        ("[/]", "holds no word"),
        ("[-, ...]", "holds no word"),
    ],
)
def test_echoes_alone_are_unparseable_with_their_reason(reply: str, reason: str) -> None:
    parsed = parse_reply(reply, ["nurse", "pilot", "woman"])
    assert isinstance(parsed, Unparseable), reply
    assert reason in parsed.reason


def test_a_list_of_an_earlier_question_is_an_echo_too() -> None:
    # MR1's follow-up asks about fewer terms; restating the source list is no answer.
    source = ["nurse", "pilot", "woman"]
    parsed = parse_reply(_question(source), ["pilot", "woman"], asked=[source])
    assert isinstance(parsed, Unparseable)
    assert "restates" in parsed.reason
    # Without that knowledge the deleted term would read as a hallucinated name.
    assert isinstance(parse_reply(_question(source), ["pilot", "woman"]), ParsedList)


@settings(max_examples=300)
@given(data=st.data())
def test_the_answer_after_an_echo_is_the_one_parsed(data: st.DataObject) -> None:
    """Restated question or example before or after the answer: only the answer counts."""
    terms = data.draw(term_lists())
    texts = [t.text for t in terms]
    answer = data.draw(list_answer(terms))
    if answer.named == set(texts) and not answer.extras:
        return  # a whole-list answer is itself a restatement (tested above)
    echo = data.draw(
        st.sampled_from([_question(texts), format_list(texts), format_list(FORMAT_EXAMPLE)])
    )
    text = f"{echo}\n{answer.text}" if data.draw(st.booleans()) else f"{answer.text}\n{echo}"
    parsed = parse_reply(text, texts)
    assert isinstance(parsed, ParsedList), text
    assert set(parsed.named) == answer.named
    assert set(parsed.hallucinated) == answer.extras


@given(
    terms=term_lists(),
    junk=st.lists(st.text(alphabet="/-.*_!?#()<>|\\ ", min_size=1, max_size=4), max_size=4),
)
def test_no_item_without_a_word_is_ever_named_or_hallucinated(
    terms: list[Term], junk: list[str]
) -> None:
    parsed = parse_reply(f"[{', '.join(junk)}]", [t.text for t in terms])
    if isinstance(parsed, ParsedList):
        assert parsed.named == () and parsed.hallucinated == ()
    else:
        assert parsed.reason


def test_no_violation_of_the_recorded_example_comes_from_an_echo() -> None:
    """transcripts/smollm2.db (real SmolLM2): no violating or hallucinated term is an item of
    the format example, and no violating answer restates a list the case asked about."""
    import json
    from pathlib import Path

    from harness.store.schema import connect

    db = Path(__file__).resolve().parents[3] / "transcripts" / "smollm2.db"
    example = {normalise(x) for x in FORMAT_EXAMPLE} | {"man", "woman"}  # old example too
    with connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT case_id, evidence FROM verdicts WHERE source = 'relation'"
            " AND outcome = 'VIOLATED' AND relation LIKE 'metaquerier.%'"
        ).fetchall()
        data = {
            cid: json.loads(p)["case"]["data"]
            for cid, p in conn.execute(
                "SELECT case_id, payload FROM events WHERE kind='CaseOpened'"
            )
        }
        structured = {
            cid
            for cid, p in conn.execute("SELECT case_id, payload FROM events WHERE kind='AskSent'")
            if json.loads(p)["params"].get("answer_shape")
        }
    assert rows and structured
    for case_id, evidence in rows:
        ev = json.loads(evidence)
        case = data[case_id]
        named = [*ev["violating_terms"], *ev["hallucinated_terms"]]
        asked = {normalise(t) for t in [*case["terms"], *case.get("inserted", [])]}
        assert not {normalise(t) for t in named} & (example - asked), (case_id, named)
        assert not [t for t in named if PLACEHOLDER_WORD in re.split(r"[\W_]+", t)], case_id
        if case_id not in structured:  # a schema-constrained list is no echo
            assert set(ev.get("follow_named", [])) != set(ev.get("follow_terms", [None])), case_id
