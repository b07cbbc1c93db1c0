"""Payloads written pre-split (`harness.store._compact_templates`) are split exactly as
`split_payload` splits their text, whatever the template and the values, and a log
written from them reads back the same bytes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.store._compact_rows import split_payload
from harness.store._compact_templates import PayloadTemplate
from harness.store.open import open_reader, open_writer

_GAP = "\x00gap\x00"
_KEYS = st.sampled_from(
    ["text", "question_id", "seed", "request_key", "case_id", "id", "a", "latency_s", "k_hash"]
)
_STRINGS = st.one_of(
    st.text(st.sampled_from('ab "\\\n\x01é'), max_size=40),
    st.text(st.characters(codec="utf-8"), max_size=120),
    st.sampled_from(["c/0001-a-case-of-some-length", "0123456789abcdef0123456789abcdef"]),
)
_SCALARS = st.one_of(
    _STRINGS,
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)


class Gap:
    """A varying value of a template."""

    def __init__(self, value: Any) -> None:
        self.value = value


_LEAVES = st.one_of(_SCALARS, _SCALARS.map(Gap))
_TREES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=12,
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _encode(tree: Any, gaps: list[str]) -> Any:
    """``tree`` as plain JSON data with each gap's value a sentinel (its JSON in ``gaps``)."""
    if isinstance(tree, Gap):
        gaps.append(_dumps(tree.value))
        return _GAP
    if isinstance(tree, list):
        return [_encode(item, gaps) for item in tree]
    if isinstance(tree, dict):
        return {key: _encode(item, gaps) for key, item in tree.items()}
    return tree


def _plain(tree: Any) -> Any:
    if isinstance(tree, Gap):
        return tree.value
    if isinstance(tree, list):
        return [_plain(item) for item in tree]
    if isinstance(tree, dict):
        return {key: _plain(item) for key, item in tree.items()}
    return tree


@settings(max_examples=400, deadline=None)
@given(tree=st.dictionaries(_KEYS, _TREES, min_size=1, max_size=6), case_id=_STRINGS)
def test_a_filled_template_splits_as_split_payload_splits_its_text(
    tree: dict[str, Any], case_id: str
) -> None:
    values: list[str] = []
    parts = _dumps(_encode(tree, values)).split(_dumps(_GAP))
    whole = _dumps(_plain(tree))
    template = PayloadTemplate(parts)
    payload = template.fill(values)
    assert payload == whole
    assert payload.presplit(case_id) == split_payload(whole, case_id)
    assert payload.presplit(case_id) == split_payload(whole, case_id)  # cached: the same


def test_a_template_needs_its_values_between_json_punctuation() -> None:
    with pytest.raises(ValueError):
        PayloadTemplate(['{"a":"x', '"}'])  # a gap inside a string
    with pytest.raises(ValueError):
        PayloadTemplate(['{"a":', "}"]).fill(["1", "2"])  # one gap, two values


def test_a_log_written_from_templates_reads_back_the_same_payloads(tmp_path: Path) -> None:
    template = PayloadTemplate(['{"kind":"Note","text":', ',"seed":', "}"])
    rows = []
    for n in range(30):
        case_id = f"c/{n:04d}"
        text = _dumps(f"note {n}: a text long enough to be stored on its own " * (n % 3 + 1))
        payload = template.fill([text, str(10**12 + n)])
        rows.append(("camp", case_id, 1, "Note", 1, None, None, payload))
    want = [str(row[7]) for row in rows]
    for compact in (False, True):
        db = tmp_path / f"log{compact}.db"

        async def write(db: Path = db, compact: bool = compact) -> None:
            async with await open_writer(str(db), compact=compact) as sink:
                await sink.append_many(rows)

        asyncio.run(write())
        with open_reader(db) as log:
            got = [r[0] for r in log.connection.execute("SELECT payload FROM events ORDER BY gseq")]
        assert got == want
