"""`harness.store.verdict_counts.case_key_sql`: the case key in SQLite's SQL (the id itself when it
holds no "@", else the registered Python function) equals `case_key` for any id, so the
verdict counts group a case's repeats as before."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.store.verdict_counts import _CASE_KEY_SQLITE, case_key, case_key_sql

# Ids mixing the pieces that matter ("/r", digits, "@", "/") with any text, so that repeats
# ("x/r3@m"), near misses ("x/r@m", "x/rr3@m", "x/r3m") and ids without "@" all come up.
_pieces = st.sampled_from(["/r", "/", "r", "@", "0", "12", "x", "é", "%", "_", "'"]) | st.text(
    max_size=3
)
_ids = st.lists(_pieces, max_size=10).map("".join)


def _connection() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.create_function(_CASE_KEY_SQLITE, 1, case_key, deterministic=True)
    return conn


@settings(deadline=None)
@given(st.lists(_ids, min_size=1, max_size=20))
def test_the_sql_key_is_case_key(ids: list[str]) -> None:
    conn = _connection()
    conn.execute("CREATE TABLE t (case_id TEXT NOT NULL)")
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in ids])
    got = [row[0] for row in conn.execute(f"SELECT {case_key_sql('case_id')} FROM t")]
    assert got == [case_key(i) for i in ids]


def test_an_id_without_an_at_sign_is_keyed_without_the_python_function() -> None:
    calls: list[str] = []
    conn = sqlite3.connect(":memory:")
    conn.create_function(_CASE_KEY_SQLITE, 1, lambda i: calls.append(i) or case_key(i))
    keys = conn.execute(
        f"SELECT {case_key_sql('c')} FROM (SELECT 'biaslens.answer/m/role/a/r1/00019' AS c"
        " UNION ALL SELECT 'metaquerier.mr1/7/r2@sim:x')"
    ).fetchall()
    assert keys == [("biaslens.answer/m/role/a/r1/00019",), ("metaquerier.mr1/7@sim:x",)]
    assert calls == ["metaquerier.mr1/7/r2@sim:x"]
