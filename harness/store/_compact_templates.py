"""Payloads handed to the writer already split around their varying values, so that log
format 2 (`harness.store._compact_rows`) need not scan each payload for its texts and tokens.

A bulk writer (an importer) knows the JSON of an event kind up to a few varying values:
``PayloadTemplate(parts)`` is that JSON cut at them (the parts between the values), scanned
once; ``template.fill(values)`` is the payload with the values (JSON scalars: strings,
numbers, true, false, null) put in. The result is a `str`, the payload itself, so any store
(format 1, PostgreSQL) writes it unchanged; format 2 asks it for its split, which
`split_payload` would give for the same text (tests/core/store/test_compact_templates.py shows it
over generated templates and values) at the cost of scanning the values alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.store._compact_rows import (
    MAX_INLINE_STRING,
    MIN_TEXT,
    Cuts,
    Found,
    Short,
    SplitPayload,
    assemble,
    case_body,
    scan,
    split_payload,
)
from harness.store._compact_schema import CASE_MARKER

# A part before a value ends where a value may start, a part after one starts where a value
# may end, so a scan of a part alone finds the tokens a scan of the whole finds in it.
_BEFORE_VALUE = (":", ",", "[")
_AFTER_VALUE = (",", "}", "]")
_ID_KEY = re.compile(r'"(?:[^"\\]*_)?(?:id|key|seed|hash)":\Z')
_NUMBER_TOKEN = re.compile(r"-?\d[\d.eE+-]+")  # what `_TOKEN` keeps: 2+ characters


class PayloadTemplate:
    """The JSON of an event up to ``len(parts) - 1`` varying scalar values."""

    def __init__(self, parts: Sequence[str]) -> None:
        self.parts = tuple(parts)
        if not self.parts or any("\x01" in part for part in self.parts):
            raise ValueError("a template is one or more parts of encoded JSON")
        for before, after in zip(self.parts, self.parts[1:], strict=False):
            if not before.endswith(_BEFORE_VALUE) or not after.startswith(_AFTER_VALUE):
                raise ValueError(f"a value must sit between {before[-20:]!r} and {after[:20]!r}")
        # Under an identifier's key, a string value is an inline token (`_TOKEN`'s group 2).
        self._under_id = tuple(bool(_ID_KEY.search(part)) for part in self.parts[:-1])
        # Scanned on the first split: only a format-2 log splits, and a format-1 import
        # would otherwise scan every question's AskSent for nothing.
        self._scans: tuple[tuple[Found, Short, Cuts], ...] | None = None
        self._whole: SplitPayload | None = None

    def fill(self, values: Sequence[str]) -> TemplatedPayload:
        """The payload with ``values`` (each the JSON of one scalar) in the template's gaps."""
        return TemplatedPayload(self, tuple(values))

    def split(self, payload: str, values: tuple[str, ...], case_id: str) -> SplitPayload:
        """`split_payload(payload, case_id)`, from the parts' scans and the values'."""
        case = case_body(case_id)
        if case is not None and any(case in part for part in self.parts):
            return split_payload(payload, case_id)  # the case id is in the constant JSON
        if not values and self._whole is not None:
            return self._whole
        if self._scans is None:
            self._scans = tuple(scan(part, None) for part in self.parts)
        found: Found = []
        short: Short = []
        cuts: Cuts = []
        at = 0
        for n, part in enumerate(self.parts):
            part_found, part_short, part_cuts = self._scans[n]
            found += [(k, s + at, e + at, b) for k, s, e, b in part_found]
            short += [(t, k, s + at, e + at, v) for t, k, s, e, v in part_short]
            cuts += [(s + at, e + at, m) for s, e, m in part_cuts]
            at += len(part)
            if n < len(values):
                value = values[n]
                if not _value(value, at, self._under_id[n], case, found, short, cuts):
                    return split_payload(payload, case_id)
                at += len(value)
        split = assemble(payload, found, short, cuts)
        if not values:
            self._whole = split
        return split


def _value(value: str, at: int, under_id: bool, case: str | None, found: Found, short: Short,
           cuts: Cuts) -> bool:  # fmt: skip
    """Add the candidates of one scalar value at offset ``at``, as `scan` finds them; False
    for a value that is not a plain scalar (its split is then the whole payload's)."""
    if not value:
        return False
    if value[0] == '"':
        if "\x01" in value:
            return False
        body, end = value[1:-1], at + len(value)
        if under_id and body != case and len(body) <= MAX_INLINE_STRING:
            short.append((1, -len(value), at, end, value))
        elif under_id or len(body) >= MIN_TEXT:
            if body == case:
                cuts.append((at, end, CASE_MARKER))
            else:
                found.append((-len(body), at, end, body))
        return True
    if value[0] in "-0123456789":
        if _NUMBER_TOKEN.fullmatch(value):
            short.append((0, -len(value), at, at + len(value), value))
        return True
    return value in ("true", "false", "null")


class TemplatedPayload(str):
    """A payload (the `str`) that knows its template and values: format 2 splits it
    without scanning its constant JSON again."""

    template: PayloadTemplate
    values: tuple[str, ...]

    def __new__(cls, template: PayloadTemplate, values: tuple[str, ...]) -> TemplatedPayload:
        if len(values) != len(template.parts) - 1:
            raise ValueError(f"{len(template.parts) - 1} values expected, got {len(values)}")
        parts = template.parts
        text = parts[0] + "".join(v + p for v, p in zip(values, parts[1:], strict=True))
        payload = super().__new__(cls, text)
        payload.template, payload.values = template, values
        return payload

    def __reduce__(self) -> tuple[type[TemplatedPayload], tuple[PayloadTemplate, tuple[str, ...]]]:
        # Pickled as what builds it (an import's rows cross from its reading process): str's
        # own reduction would rebuild it from the text alone.
        return TemplatedPayload, (self.template, self.values)

    def presplit(self, case_id: str) -> SplitPayload:
        """What `split_payload(self, case_id)` gives (the name `split` is str's)."""
        return self.template.split(str(self), self.values, case_id)
