"""A pydantic `ValidationError` as a `ConfigError`: the field's path and how to fix it.

Every place that validates what a user wrote with pydantic (campaign files, vendor and
backend options, relation options, requirement and template files) translates the error
here, so that a mistake reads the same wherever it is made (invariant 4: the message names
the field and the fix).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from harness.vocabulary.errors import ConfigError

# Fixes by pydantic error type, formatted with the error's context (its bound); an error of
# another type (e.g. a custom validator's value_error, whose message says what is wanted)
# gets the caller's fix, which points to where the format is documented.
FIXES = {
    "missing": "add it",
    "extra_forbidden": "remove it or check its spelling",
    "too_short": "give at least one entry",
    "greater_than": "give a number > {gt}",
    "greater_than_equal": "give a number >= {ge}",
    "less_than": "give a number < {lt}",
    "less_than_equal": "give a number <= {le}",
    "float_parsing": "give a number",
    "int_parsing": "give a whole number",
    "string_type": "give a string",
    "literal_error": "use one of the values the message lists",
}


def field_path(loc: Iterable[int | str], data: Any = None, label_key: str = "name") -> str:
    """``loc`` as the user wrote it: ``models[0](sim:planted).max_in_flight``.

    A list entry that is a table with a ``label_key`` (``name``) is labelled with its value
    when ``data`` (the input that was validated) is given.
    """
    parts: list[str] = []
    node: Any = data
    for item in loc:
        if isinstance(item, int):
            label = ""
            if isinstance(node, list) and 0 <= item < len(node) and isinstance(node[item], dict):
                label = str(node[item].get(label_key, ""))
            parts[-1:] = (
                [f"{parts[-1]}[{item}]" + (f"({label})" if label else "")] if parts else [str(item)]
            )
            node = node[item] if isinstance(node, list) and 0 <= item < len(node) else None
        else:
            parts.append(str(item))
            node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts)


def config_error(
    exc: ValidationError,
    *,
    fix: str,
    where: str = "",
    data: Any = None,
    source: str | None = None,
    known: Iterable[str] = (),
    by_type: bool = True,
    label_key: str = "name",
) -> ConfigError:
    """The `ConfigError` for the first error of ``exc``.

    ``fix``: the fix when `FIXES` has none for the error's type (e.g. where the format is
    documented). ``where``: the path of the validated input inside the user's file (e.g.
    ``models[0].options``), put before the error's own path. ``data``: the validated input
    (labels list entries by ``label_key``). ``source``: the file, named in the message and used as
    the field when there is no path. ``known``: the accepted keys, listed for a misspelling.
    ``by_type=False``: always ``fix`` (e.g. a pointer to where a relation's options are
    listed, which says more than "give a number >= 2").
    """
    err = exc.errors()[0]
    path = field_path(tuple(err["loc"]), data, label_key)
    field = ".".join(p for p in (where, path) if p) or source
    message = f"{err['msg']} (in {source})" if source else str(err["msg"])
    context = err.get("ctx", {})
    if not by_type:
        chosen = fix
    elif err["type"] == "greater_than" and context.get("gt") == 0:
        chosen = "give a positive number"
    else:
        try:
            chosen = FIXES[err["type"]].format(**context)
        except (KeyError, IndexError):
            chosen = fix
    names = ", ".join(known)
    if err["type"] == "extra_forbidden" and names:
        chosen += f" (known: {names})"
    return ConfigError(message, field=field, fix=chosen)
