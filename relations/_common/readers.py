"""Careful readers of closed answers: Yes/No, one option, a score, a ranking.

They read a short answer the way a careful human does, and say so when it gives none. The
rules (each has a property test in tests/families/common/test_readers.py and a row in the
readers table of the Meta-Fair and BiasLens docs pages):

1. **Normal form.** Unicode NFKC (full-width "Ｙｅｓ" and "４" become "Yes" and "4") and case
   folding for every comparison; emphasis and quotes (``**``, ``_``, backticks, quotes)
   around a word are not part of it.
2. **Hedges are their own class.** "both", "neither", "it depends", "no one can say",
   "hard to say", "not sure", "yes and no", "either"... with no answer before them: the
   reading is None with a reason starting ``hedge:``; never a Yes, a No or an option.
3. **"No" as a determiner is not an answer.** "No one can say", "No single answer",
   "Nobody knows" do not read as No.
4. **Numbers.** A number may be written as digits or, when the answer has no digit, as an
   English word ("Four."); the one number of a short answer is the score wherever it stands
   ("... I'd say 4."); "3.0" is 3; a restated scale ("1 to 5", "out of five", "/5") is not a
   number of the answer; two different numbers are no score.
5. **Options.** A letter counts as an option when marked as one ("B)", "(B)", "Option B",
   a capital letter standing alone); an option's text counts too. Restated options (two or
   more "X) text" of the prompt's own options) are taken out before reading. A negated
   option ("Not A)", "rather than A)", "instead of A)", "neither A) nor B)") is not
   chosen. Exactly one option left is the answer; two or more is "several options".
6. **Rankings.** One entry per top-level line, in any common numbering style ("1.", "1)",
   "(1)", "#1", "1:", "Rank 1:", "1st", "first"), bullets, or one comma-separated line; a
   header line and indented sub-items are skipped; a leading article and emphasis on an
   item are ignored; when every entry carries its own rank number, the numbers give the
   order, not the lines.

Everything here is pure; the families decide what a reading means.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

# --- normal form ------------------------------------------------------------------------

_EMPHASIS = re.compile(r"[*_`\"“”‘’«»„]")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})


def normal_form(text: str) -> str:
    """NFKC with curly apostrophes made straight (case kept: option letters need it)."""
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)


def folded(text: str) -> str:
    """`normal_form`, case-folded, emphasis and quotes taken out, spaces collapsed."""
    return " ".join(_EMPHASIS.sub(" ", normal_form(text)).casefold().split())


_WORDS_ONLY = re.compile(r"[^\w]+")


_CONTRACTIONS = (
    (re.compile(r"\bcan't\b"), "cannot"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\bi'm\b"), "i am"),
)


def words(text: str) -> str:
    """`folded` down to its words and single spaces, contractions written out ("can't" is
    "cannot"), for matching option and item texts."""
    plain = folded(text)
    for pattern, full in _CONTRACTIONS:
        plain = pattern.sub(full, plain)
    return " ".join(_WORDS_ONLY.sub(" ", plain).split())


# --- hedges -----------------------------------------------------------------------------

_HEDGE = re.compile(
    r"\b(?:"
    r"both|neither|either(?:\s+one|\s+of\s+them)?|"
    r"it\s+(?:really\s+)?depends|depends\s+on|depending\s+on|it\s+varies|varies|"
    r"no\s*(?:one|body)\s+(?:can|could|knows?|is\s+able)|nobody|"
    r"(?:can\s*not|can't|cannot|couldn't|could\s+not|impossible\s+to|hard\s+to|"
    r"difficult\s+to|unable\s+to)\s+(?:really\s+)?(?:say|tell|know|determine|decide|choose|"
    r"judge|be\s+(?:determined|known|said))|"
    r"not\s+(?:sure|certain|clear)|no\s+way\s+to\s+(?:know|tell|say)|unsure|uncertain|unclear|unknown|undetermined|undecided|"
    r"yes\s+and\s+no|yes\s+or\s+no|"
    r"no\s+(?:single|clear|definitive|simple|right|correct|one-size|universal|general)\b|"
    r"all\s+of\s+(?:them|the\s+above)|none\s+of\s+(?:them|the\s+above)|"
    r"equally|the\s+same\s+for\s+(?:all|both|everyone)|maybe|perhaps|possibly|sometimes"
    r")\b",
    re.IGNORECASE,
)


def hedge(text: str) -> str | None:
    """The hedge a short answer makes ("it depends", "both"...), or None."""
    match = _HEDGE.search(folded(text))
    return " ".join(match.group().split()) if match else None


# --- Yes/No -----------------------------------------------------------------------------

_LEAD = r"^[\s\W]*"
# "No" followed by one of these is a determiner ("No one", "No single answer"), not No.
NO_DETERMINED = (
    "one|body|single|clear|definitive|simple|right|correct|universal|general|way to|"
    "answer|data|evidence|information|basis|opinion|preference|idea|consensus|matter|"
    "reliable|certain|specific|particular|group|person|people|individual|reason|"
    "objective|straightforward|definite|yes|doubt"
)
_LEADING_WORD = re.compile(
    _LEAD + r"(?:(?:my\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:\-]?\s*)?(yes|no)\b(?!-\w)"
    rf"(?!\s+(?:{NO_DETERMINED})\b)(?!\s*(?:/|or|and)\s*(?:yes|no)\b)",
    re.IGNORECASE,
)
_YES_NO_WORD = re.compile(
    rf"\b(yes|no)\b(?!\s+(?:{NO_DETERMINED})\b)(?!-\w)",
    re.IGNORECASE,
)
_ECHOED = re.compile(_LEAD + r"yes\s*(?:/|or)\s*no\b[\s\W]*?(?=\w|$)", re.IGNORECASE)
SHORT = 200  # a "short answer": the longest reply a sole word or number is read from


# A whole short answer that says Yes or No without the word ("Not at all.", "Certainly.").
_PLAIN_YES_NO = re.compile(
    r"^[\s\W]*(?P<no>nope|nah|not\s+at\s+all|not\s+necessarily|not\s+really|"
    r"(?:absolutely|certainly|definitely|of\s+course|surely|probably)\s+not)\b"
    r"|^[\s\W]*(?P<yes>yep|yeah|yup|absolutely|certainly|definitely|of\s+course|correct|"
    r"indeed|sure)"
    r"[\s.!,;]*$",
    re.IGNORECASE,
)


def read_yes_no(reply: str) -> tuple[str | None, str]:
    """ "yes" or "no", or None and why not."""
    text = " ".join(_EMPHASIS.sub(" ", normal_form(reply)).split())
    plain = _PLAIN_YES_NO.match(text)
    if plain:
        return ("no" if plain.group("no") else "yes"), ""
    echo = _ECHOED.match(text)
    if echo and echo.end() < len(text):
        text = text[echo.end() :]  # "Yes/No: No." : the format label restated
    elif echo:
        return None, "hedge: yes or no"
    match = _LEADING_WORD.match(text)
    if match:
        return match.group(1).casefold(), ""
    found = hedge(text)
    if found:
        return None, f"hedge: {found}"
    if re.match(_LEAD + r"(?:yes|no)\s*(?:/|or|and)\s*(?:yes|no)\b", text, re.IGNORECASE):
        return None, "both Yes and No"
    said = {w.casefold() for w in _YES_NO_WORD.findall(text)}
    if len(said) == 1 and len(text) <= SHORT:
        return said.pop(), ""
    if len(said) > 1:
        return None, "both Yes and No"
    return None, "neither Yes nor No"


# --- numbers ----------------------------------------------------------------------------

NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_SCALE = re.compile(
    r"\(\s*1\b[^()]*\b5\b[^()]*\)"  # "(1 being unreliable, 5 being reliable)"
    r"|\bscale\s+(?:of|from)\s+1\s*(?:to|-|–|—|through)\s*5\b"
    r"|\b1\s*(?:to|-|–|—|through)\s*5\b"  # "1 to 5", "1-5"
    r"|\bout\s+of\s+5\b|/\s*5\b",  # "out of 5", "4/5" keeps its 4
    re.IGNORECASE,
)
_DIGITS = re.compile(r"(?<![\w.,])(-?\d+(?:[.,]\d+)?)(?!\w)(?![.,]\d)")


def _digits(text: str) -> str:
    """Number words written as digits ("Four." -> "4."); "one" after "no"/"any"/"this"
    and the like is a pronoun, not a number."""

    def swap(match: re.Match[str]) -> str:
        before = text[: match.start()].rstrip().casefold()
        word = match.group(1).casefold()
        if word == "one" and re.search(r"(?:\bno|\bany|\bthis|\bthat|\beach|\bevery|-)$", before):
            return match.group()
        return str(NUMBER_WORDS[word])

    return _NUMBER_WORD.sub(swap, text)


def read_number(reply: str, low: int, high: int) -> tuple[int | None, str]:
    """The one whole number from ``low`` to ``high`` a short answer gives, or None and why."""
    text = _SCALE.sub(" ", _EMPHASIS.sub(" ", normal_form(reply)))
    numbers = _DIGITS.findall(text)
    if not numbers:
        # Number words only when no digit answers: "I'd say 4, since two factors..." is 4.
        text = _SCALE.sub(" ", _digits(text))
        numbers = _DIGITS.findall(text)
    if not numbers:
        found = hedge(text)
        return None, f"hedge: {found}" if found else "no score in the reply"
    # "3.0" is the whole number 3; "2.5" is no score.
    numbers = [re.sub(r"[.,]0+$", "", n) for n in numbers]
    decimals = [n for n in numbers if not n.lstrip("-").isdigit()]
    if decimals:
        return None, f"a score that is not a whole number ({decimals[0]})"
    values = list(dict.fromkeys(int(n) for n in numbers))
    if len(values) > 1:
        return None, f"several scores ({', '.join(map(str, values[:4]))})"
    if len(text) > SHORT * 2 and not re.match(r"^\W*-?\d", text):
        return None, "a long reply with its number inside"
    if not low <= values[0] <= high:
        return None, f"score {values[0]} outside {low}-{high}"
    return values[0], ""


# --- options ----------------------------------------------------------------------------

_NEGATION = re.compile(
    r"(?:\bnot|n't|\brather\s+than|\binstead\s+of|\bexcept|\bneither|\bnor|\bover|"
    r"\bagainst|\bexclude|\brule\s+out|\bwouldn't\s+(?:choose|pick|say)|\bwrong)"
    r"[\s\W]{0,3}(?:(?:option|answer|choice)\s+)?[\s\W]{0,2}$",
    re.IGNORECASE,
)


def _marked_letters(text: str, letters: Sequence[str]) -> list[tuple[int, int, str]]:
    """Where ``text`` names an option by its letter: (start, end, letter)."""
    span = "".join(letters)
    marks = re.compile(
        rf"(?<![\w])\(([{span}])\)"  # (B)
        rf"|(?<![\w(])([{span}])\)"  # B)
        rf"|\b(?:option|answer|choice|letter)\s*[:\-]?\s*\(?([{span}])\b"  # Option B
        rf"|(?<![\w'])([{span.upper()}])(?=\s*(?:[.,:;!?]|$))"  # a capital B standing alone
        rf"|\b(?:choose|chose|pick|select|go\s+with|answer\s+is|option\s+is)\s+\(?([{span}])\b",
        re.IGNORECASE,
    )
    found = []
    for m in marks.finditer(text):
        letter = next(g for g in m.groups() if g)
        if m.group(4) and m.group(4) == "A" and not _alone(text, m):
            continue  # "A" inside a sentence is the article
        found.append((m.start(), m.end(), letter.casefold()))
    return found


def _alone(text: str, match: re.Match[str]) -> bool:
    """A capital "A" read as an option: at the start, or after "is"/"choose" and the like."""
    before = text[: match.start()].rstrip().casefold()
    return not before or bool(
        re.search(r"(?:\bis|\bchoose|\bpick|\bselect|\bsay|\bgo\s+with|[:\-(])$", before)
    )


def _restated(text: str, options: Mapping[str, str]) -> str:
    """``text`` without the prompt's options restated ("A) chaotic B) harmonious ..."),
    when two or more of them are."""
    spans = []
    for letter, option in options.items():
        if not words(option):
            continue
        pattern = re.compile(
            rf"\(?{re.escape(letter)}\)\s*[\W_]*{re.escape(folded(option))}[\W_]*",
            re.IGNORECASE,
        )
        spans += [m.span() for m in pattern.finditer(folded(text))]
    plain = folded(text)
    # Options restated in a row ("A) x B) y C) z", "A) x, B) y or C) z"): two or more
    # with nothing but punctuation, "or" and "and" between them.
    runs: list[list[tuple[int, int]]] = []
    for span in sorted(set(spans)):
        if runs and re.fullmatch(r"(?:[\W_]|\bor\b|\band\b)*", plain[runs[-1][-1][1] : span[0]]):
            runs[-1].append(span)
        else:
            runs.append([span])
    restated = [run for run in runs if len(run) >= 2]
    if not restated:
        return text
    for run in reversed(restated):
        plain = plain[: run[0][0]] + " | " + plain[run[-1][1] :]
    return plain


def _negated(text: str, start: int) -> bool:
    return bool(_NEGATION.search(text[max(0, start - 30) : start]))


def read_option(reply: str, options: Mapping[str, str]) -> tuple[str | None, str]:
    """The letter (lower case) of the one option a reply picks, or None and why not.

    ``options``: letter (lower case) -> the option's text, as the prompt offers them."""
    letters = [k.casefold() for k in options]
    text = " ".join(_EMPHASIS.sub(" ", normal_form(reply)).split())
    restated = _restated(text, {k.casefold(): v for k, v in options.items()})
    if restated is not text:
        text = restated
    chosen: list[str] = []
    negated: list[str] = []
    for start, _, letter in _marked_letters(text, letters):
        (negated if _negated(text, start) else chosen).append(letter)
    if not chosen:
        plain = f" {words(text)} "
        by_text = {k.casefold(): words(v) for k, v in options.items() if words(v)}
        for letter, option in by_text.items():
            at = plain.find(f" {option} ")
            # An option whose text holds another named one ("very harmonious"/"harmonious").
            if at != -1 and not any(
                o != letter and option in other and f" {other} " in plain
                for o, other in by_text.items()
            ):
                (negated if _negated(plain, at + 1) else chosen).append(letter)
    distinct = list(dict.fromkeys(chosen))
    # A hedge inside an option's own text ("C) cannot be determined") is that option.
    unoptioned = f" {words(text)} "
    for option in options.values():
        if words(option):
            unoptioned = unoptioned.replace(f" {words(option)} ", " | ")
    found = hedge(unoptioned)
    if len(distinct) == 1:
        # One option named: the answer, even if a reason after it says "both" or "equally".
        return distinct[0], ""
    if distinct:
        return None, f"several options named ({', '.join(distinct)})"
    if found:
        return None, f"hedge: {found}"
    if negated:
        return None, f"only negated options ({', '.join(dict.fromkeys(negated))})"
    return None, f"no option {', '.join(f'{k})' for k in letters)}"


# --- rankings ---------------------------------------------------------------------------

ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
}
_RANK_PREFIX = re.compile(
    r"^(?:rank(?:ed)?\s*(?:#|no\.?\s*)?(?P<r>\d+)\s*[:.)\-–—]?"
    r"|\((?P<p>\d+)\)|#\s*(?P<h>\d+)[:.)]?|(?P<n>\d+)(?:st|nd|rd|th)?\s*(?:[.):\-–—]|\s)"
    r"|(?P<o>" + "|".join(ORDINALS) + r")\b\s*(?:place)?\s*[:.,)\-–—]?"
    r"|[-*•·+]\s)\s*",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


def _entry(line: str) -> tuple[int | None, str, bool]:
    """(its rank number or None, the text after the prefix, whether it had a prefix)."""
    text = " ".join(_EMPHASIS.sub(" ", normal_form(line)).split())
    match = _RANK_PREFIX.match(text + " ")
    if not match:
        return None, text, False
    number = next((match.group(g) for g in ("r", "p", "h", "n") if match.group(g)), None)
    rank = int(number) if number else ORDINALS.get((match.group("o") or "").casefold())
    return rank, text[match.end() :].strip(), True


def _which(entry: str, by_words: Sequence[tuple[str, str]]) -> str | None:
    head = words(_ARTICLE.sub("", words(entry)))
    for norm, item in by_words:  # longest first: "servant leadership" before "servant"
        if head == norm or head.startswith(norm + " "):
            return item
    inside = [item for norm, item in by_words if f" {norm} " in f" {head} "]
    inside = [i for i in inside if not any(i != o and words(i) in words(o) for o in inside)]
    return inside[0] if len(inside) == 1 else None


def read_ranking(reply: str, items: Sequence[str]) -> tuple[list[str] | None, str]:
    """The order a reply puts ``items`` in, or None and why not."""
    if len(items) < 2:
        return None, "the prompt lists fewer than 2 items"
    by_words = sorted(((words(i), i) for i in items), key=lambda p: -len(p[0]))
    text = normal_form(reply).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if text.startswith("[") and text.endswith("]"):
        lines = [e for e in text[1:-1].split(",") if e.strip()]
    entries = [(len(ln) - len(ln.lstrip()), _entry(ln)) for ln in lines]
    marked = [(indent, e) for indent, e in entries if e[2]]
    if len(marked) >= 2:
        top = min(indent for indent, _ in marked)
        # Indented lines are sub-items; a bullet under numbered entries is one too.
        numbered = any(e[0] is not None for _, e in marked if _ == top)
        kept = [e for indent, e in marked if indent == top and not (numbered and e[0] is None)]
    elif len(lines) == 1 and len(re.findall(r"(?:^|\s)\(?\d+[.)]\s", lines[0])) >= 2:
        # "1. Law 2. Nursing 3. Teaching": a numbered list written on one line.
        parts = re.split(r"(?:^|\s)(?=\(?\d+[.)]\s)", lines[0])
        kept = [_entry(p) for p in parts if p.strip() and _entry(p)[2]]
    elif len(lines) == 1:
        # One line: split on its strongest separator (";" over ">" over ","), so that
        # "First, Law; second, Nursing" keeps each ordinal with its item.
        line = lines[0]
        sep = next((p for p in (r";", r">|\s→\s", r",") if re.search(p, line)), r",")
        kept = [_entry(p) for p in re.split(sep, line) if p.strip()]
        kept = [(rank, body, True) for rank, body, _ in kept]
    else:
        kept = [(None, ln.strip(), True) for ln in lines]
    if not kept:
        return None, "no ranked lines"
    order: list[tuple[int | None, str]] = []
    for rank, body, _ in kept:
        found = _which(body, by_words)
        if found is None:
            if len(order) == 0 and body.rstrip().endswith(":"):
                continue  # a header line
            said = hedge(text)
            if said:
                return None, f"hedge: {said}"
            return None, f"a ranked line names no listed item ({body[:40]!r})"
        if found in [i for _, i in order]:
            return None, f"{found!r} is ranked twice"
        order.append((rank, found))
    if len(order) != len(items):
        return None, f"the ranking has {len(order)} of the {len(items)} items"
    ranks = [r for r, _ in order if r is not None]
    if len(ranks) == len(order) and sorted(ranks) == list(range(1, len(items) + 1)):
        order.sort(key=lambda p: p[0] or 0)  # explicit rank numbers beat line order
    return [i for _, i in order], ""
