"""The bounds every user-written configuration respects, declared once.

A campaign file is read by a process that then runs for hours on a shared machine: no number
in it may make that process allocate without limit, and no value may be one that every call
would then fail on. Three kinds of bound live here:

- the file itself: at most `MAX_CONFIG_BYTES` and nested at most `MAX_CONFIG_DEPTH` deep
  (a deeper file would exhaust the parser's recursion, not say what is wrong);
- every float is finite (``nan`` and ``inf`` are legal TOML, never a sensible setting);
- the numbers whose structures grow with their value have an upper bound, as pydantic
  constraints on the field that holds them (`MAX_IN_FLIGHT`); the others (``repeats``,
  ``cases``) are walked lazily and need none.

`check_config_tree` applies the first two to any parsed input, naming the first offending
field the way `harness.vocabulary.config_errors.field_path` does.
"""

from __future__ import annotations

import math
from typing import Any

from harness.vocabulary.errors import ConfigError

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Largest configuration file read (campaign, requirements): far above any real one."""

MAX_CONFIG_DEPTH = 32
"""Deepest nesting of tables and arrays accepted (the deepest real option is about 4)."""

MAX_IN_FLIGHT = 1024
"""Most calls one model may have under way: a worker task and its connections each."""

MAX_SECONDS = 86_400.0
"""Longest timeout or grace period accepted (a day): every wait of the harness ends."""


def check_config_tree(data: Any, *, source: str) -> None:
    """Raise a `ConfigError` for the first value of ``data`` nested deeper than
    `MAX_CONFIG_DEPTH` or for the first float that is not finite. Walked with an explicit
    stack, so a deep input cannot exhaust the interpreter's recursion here."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > MAX_CONFIG_DEPTH:
            raise ConfigError(
                f"values are nested more than {MAX_CONFIG_DEPTH} deep (in {source})",
                field=_shown(path[:MAX_CONFIG_DEPTH]) or source,
                fix="flatten this value; no option of the harness nests that deep",
            )
        if isinstance(node, float) and not math.isfinite(node):
            raise ConfigError(
                f"{node} is not a finite number (in {source})",
                field=_shown(path) or source,
                fix="give a finite number, or leave the field out for its default",
            )
        if isinstance(node, dict):
            stack.extend((value, (*path, str(key))) for key, value in reversed(node.items()))
        elif isinstance(node, list | tuple):
            stack.extend((node[i], (*path, i)) for i in reversed(range(len(node))))


def _shown(path: tuple[str | int, ...]) -> str:
    parts: list[str] = []
    for item in path:
        if isinstance(item, int) and parts:
            parts[-1] += f"[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts)
