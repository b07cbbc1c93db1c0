"""An ``http:`` target's body template and response paths (unit level; the end-to-end runs
are in tests/core/running/test_targets.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.models.providers._http import render
from harness.models.providers._http_options import MISSING, find, parse_path

TEXT_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=6)


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        ("data.answer", ("data", "answer")),
        ("$.data.answer", ("data", "answer")),
        ("choices[0].message.content", ("choices", 0, "message", "content")),
        ("choices.0.text", ("choices", 0, "text")),
        ("a[1][2]", ("a", 1, 2)),
    ],
)
def test_paths_read_as_their_keys(path: str, keys: tuple[object, ...]) -> None:
    assert parse_path(path) == keys


@pytest.mark.parametrize("path", ["", "$", "a..b", "a.[0", "a b]"])
def test_a_malformed_path_is_refused(path: str) -> None:
    with pytest.raises(ValueError):
        parse_path(path)


@given(st.lists(st.one_of(TEXT_KEYS, st.integers(0, 3)), min_size=1, max_size=5), st.text())
def test_find_returns_what_sits_at_the_path(keys: list[Any], leaf: str) -> None:
    document: Any = leaf
    for key in reversed(keys):
        document = [None] * key + [document] if isinstance(key, int) else {key: document}
    path = ".".join(f"[{k}]" if isinstance(k, int) else k for k in keys).replace(".[", "[")
    assert find(document, parse_path(path)) == leaf
    assert find(document, (*parse_path(path), "deeper")) is MISSING


@given(st.text(), st.one_of(st.none(), st.text()))
def test_a_prompt_is_sent_as_written_whatever_braces_it_holds(
    prompt: str, system: str | None
) -> None:
    template = {
        "q": "{prompt}",
        "both": "S={system} P={prompt}",
        "history": "{messages}",
        "n": "{max_tokens}",
        "fixed": 3,
    }
    text = {"prompt": prompt, "system": system, "conversation_id": None}
    values = {"{messages}": [{"role": "user", "content": prompt}], "{max_tokens}": 7}
    body = render(template, text, values)
    assert body["q"] == prompt
    assert body["both"] == f"S={system or ''} P={prompt}"
    assert body["history"] == [{"role": "user", "content": prompt}]
    assert body["n"] == 7 and body["fixed"] == 3
    json.dumps(body)  # the body is JSON
