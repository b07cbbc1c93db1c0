"""Reading short answers: a leading Yes/No, an option letter. Shared by several families."""

from __future__ import annotations

import re

_LEADING = re.compile(r"^[\s\"'`*_>#\-:.(\[]*(yes|no)\b", re.IGNORECASE)
_ANYWHERE = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def leading_yes_no(text: str) -> str | None:
    """ "yes" or "no" when the answer starts with it (after quotes/markup), else None.

    Falls back to a sole yes/no word anywhere in a short answer ("The answer is: No."),
    but never guesses when both words occur.
    """
    match = _LEADING.match(text)
    if match:
        return match.group(1).lower()
    words: set[str] = {w.lower() for w in _ANYWHERE.findall(text)}  # findall: list[Any]
    if len(words) == 1 and len(text) <= 200:
        return words.pop()
    return None
