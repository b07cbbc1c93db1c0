"""Text bound for a human's terminal: model answers and log contents shown as data.

Model replies, prompts, case data and error messages may hold anything: Rich markup
(``[/bold]`` crashes Rich, ``[bold red]X[/bold red]`` renders styled), terminal escape
sequences (clear the screen, set the window title, rewrite the clipboard), NUL bytes, and
bidirectional overrides that make text read differently from what it is. Every human output
(text report, ``harness show``, the progress line, summaries and error messages) passes such
text through `printable` (for plain echo) or `rich_text`/`markup_safe` (for Rich), so it
is shown, never obeyed. JSON and CSV exports keep the exact text and never use this module.
"""

from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

# C0 controls, DEL and C1 controls; TAB and LF are layout and survive unless told otherwise.
# Bidirectional embeddings, overrides and isolates reorder what the reader sees ("Trojan
# source"), so they are shown as code points too; the plain marks (U+200E/U+200F) are not
# controls of the terminal and are harmless, but they are invisible, so they are shown too.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_NO_LAYOUT = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, keep_layout: bool = True) -> str:
    """``text`` with every control character replaced by its visible escape (``\\x1b``).

    ``keep_layout`` keeps newlines and tabs (a reply in a panel); without it they are
    escaped too, for one-line outputs (the progress line, a table title). CR is always
    escaped: it lets text overwrite what came before it on the same line.
    """
    pattern = _CONTROL if keep_layout else _CONTROL_NO_LAYOUT
    return pattern.sub(_visible, str(text))


def markup_safe(text: object, *, keep_layout: bool = True) -> str:
    """``printable`` text with Rich markup escaped, for embedding in a markup string."""
    return escape(printable(text, keep_layout=keep_layout))


def rich_text(text: object, *, keep_layout: bool = True) -> Text:
    """A Rich `Text` that Rich never parses as markup, holding ``printable`` text."""
    return Text(printable(text, keep_layout=keep_layout))


def has_control(text: str) -> bool:
    """True when ``text`` holds a character a terminal would obey rather than show
    (layout characters TAB and LF excepted): the property tests' check of human output."""
    return _CONTROL.search(text) is not None
