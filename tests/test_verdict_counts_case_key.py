"""`sqlite_case_key` (harness/verdict_counts.py) is `case_key` in SQL: the expression the
verdict counts sort by gives, for any case id, what the Python function gives (it calls the
function only for ids that may hold a repeat)."""

from __future__ import annotations

import sqlite3

from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.verdict_counts import case_key, sqlite_case_key

# Pieces that build ids near the repeat pattern ("/r", digits, "@") beside any text: ASCII
# and other digits (the regex's \d reads both), and any code point.
PIECES = st.sampled_from(["/", "r", "/r", "@", "0", "1", "9", "12", "123", "\u0663", "x", "-"])
IDS = st.one_of(
    st.lists(st.one_of(PIECES, st.text(max_size=3)), max_size=12).map("".join),
    st.text(max_size=40),
)


def _sql_keys(ids: list[str]) -> list[str]:
    conn = sqlite3.connect(":memory:")
    expression = sqlite_case_key(conn)
    conn.execute("CREATE TABLE t (n INTEGER, case_id TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", enumerate(ids))
    return [key for (key,) in conn.execute(f"SELECT {expression} FROM t ORDER BY n")]


@settings(max_examples=400, deadline=None)
@given(st.lists(IDS, min_size=1, max_size=20))
@example(["biaslens.answer/role/ability/r1/00000@released:gpt4omini"])
@example(["m.mr1/4/r3@sim:x", "m.mr1/4/r12@sim:x", "m.mr1/4/r1234@sim:x", "a/r\u0663@b"])
@example(["a/r1@b/r2@c", "a/rx@b/r22@c", "a/r1\u0663@b", "a\t/r1@b"])
def test_the_sql_case_key_is_case_key(ids: list[str]) -> None:
    assert _sql_keys(ids) == [case_key(i) for i in ids]


def test_ids_without_a_repeat_skip_the_python_function() -> None:
    """The point of the expression: the Python function is not called for a BiasLens id."""
    conn = sqlite3.connect(":memory:")
    expression = sqlite_case_key(conn)
    calls: list[str] = []

    def counting(case_id: str) -> str:
        calls.append(case_id)
        return case_key(case_id)

    conn.create_function("harness_case_key", 1, counting, deterministic=True)
    ids = ["biaslens.answer/role/ability/r1/00000@released:gpt4omini", "m.mr1/4/r3@sim:x"]
    keys = [
        conn.execute(f"SELECT {expression} FROM (SELECT ? AS case_id)", (i,)).fetchone()[0]
        for i in ids
    ]
    assert keys == [ids[0], "m.mr1/4@sim:x"]
    assert calls == ["m.mr1/4/r3@sim:x"]
