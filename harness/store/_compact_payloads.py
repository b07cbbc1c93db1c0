"""Format-2 payloads rebuilt in Python for `harness.store.reader.EventReader`: the same bytes
the ``events`` view gives, without its per-row SQL (a scalar subquery per text, nested
``replace``, a Python ``sqlar_uncompress`` call per compressed text), which made a full
read of an imported log several times slower than format 1's."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from harness.store._compact_schema import (
    CASE_MARKER,
    INLINE,
    SLOTS,
    inline_marker,
    slot_marker,
    ts_sql,
)
from harness.store._sqlar import uncompress

_TEXT_JOINS = " ".join(
    f"LEFT JOIN texts x{slot} ON x{slot}.key = e.t{slot}" for slot in range(SLOTS)
)
_INLINE_COLUMNS = ", ".join(f"e.i{slot} AS i{slot}" for slot in range(INLINE))


def source(blocks: bool) -> str:
    """The rows of the ``events`` view with the payload still in pieces; the view's column
    names, so the reader's WHERE and ORDER BY clauses apply unchanged (SQLite flattens the
    subquery). ``blocks``: the log's layout (`harness.store._compact_schema.has_blocks`)."""
    text_columns = ", ".join(
        f"x{slot}.data AS d{slot}, x{slot}.size AS z{slot}, "
        + (
            f"x{slot}.block AS b{slot}, x{slot}.start AS s{slot}"
            if blocks
            else f"NULL AS b{slot}, NULL AS s{slot}"
        )
        for slot in range(SLOTS)
    )
    ts = ts_sql("e") if blocks else "e.ts"
    shape_block = (
        "s.block AS shape_block, s.start AS shape_start"
        if blocks
        else ("NULL AS shape_block, NULL AS shape_start")
    )
    return (
        "(SELECT e.gseq AS gseq, p.name AS campaign, c.name AS case_id, e.seq AS seq,"
        f" k.name AS kind, e.schema_version AS schema_version, {ts} AS ts,"
        f" e.shape AS shape, s.data AS shape_data, s.size AS shape_size, {shape_block},"
        f" {text_columns},"
        f" {_INLINE_COLUMNS}"
        " FROM log e JOIN campaigns p ON p.key = e.campaign JOIN cases c ON c.key = e.case_key"
        " AND c.campaign = e.campaign"
        f" JOIN kinds k ON k.key = e.kind JOIN texts s ON s.key = e.shape {_TEXT_JOINS})"
    )


_PER_SLOT = 4  # data, size, block, start
COLUMNS = (
    "gseq, campaign, case_id, seq, kind, schema_version, ts, shape, shape_data, shape_size,"
    " shape_block, shape_start, "
    + ", ".join(f"d{slot}, z{slot}, b{slot}, s{slot}" for slot in range(SLOTS))
    + ", "
    + ", ".join(f"i{slot}" for slot in range(INLINE))
)
_CACHED_SHAPES = 4096
_CACHED_BLOCKS = 64  # inflated blocks (16 kB each): a payload's texts are mostly recent


def _as_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    return str(value)


def _token(value: object) -> str:
    """An inline token's JSON (`harness.store._compact_rows.inline_value` stored it)."""
    if isinstance(value, bytes):
        return f'"{value.hex()}"'
    return str(value)


class PayloadBuilder:
    """Puts a payload back together from its shape, texts and inline tokens; shapes (shared
    by many events) are inflated once and kept, up to a bound, as are the latest blocks."""

    def __init__(self, conn: sqlite3.Connection | None = None) -> None:
        self._conn = conn
        self._shapes: dict[int, str] = {}
        self._blocks: dict[int, bytes] = {}

    def _block(self, key: int) -> bytes:
        found = self._blocks.get(key)
        if found is None:
            assert self._conn is not None, "a log with blocks is read through its connection"
            row = self._conn.execute("SELECT data, size FROM blocks WHERE key = ?", (key,))
            data, size = row.fetchone()
            found = bytes(uncompress(data, size))
            if len(self._blocks) >= _CACHED_BLOCKS:
                self._blocks.clear()
            self._blocks[key] = found
        return found

    def _from_block(self, block: object, start: object, size: object) -> str:
        begin = int(start) - 1  # type: ignore[call-overload]
        raw = self._block(int(block))[begin : begin + int(size)]  # type: ignore[call-overload]
        return raw.decode("utf-8", "surrogatepass")

    def payload(self, case_id: str, pieces: Sequence[object]) -> str | bytes:
        """``pieces``: shape key, shape (data, size, block, start), the same per text slot,
        then the inline tokens, as `source` lists them after the first seven columns."""
        shape_key = int(pieces[0])  # type: ignore[call-overload]
        shape = self._shapes.get(shape_key)
        if shape is None:
            data, size, block, start = pieces[1:5]
            if block is not None:
                shape = self._from_block(block, start, size)
            elif isinstance(data, bytes) and len(data) == size:
                return data  # a payload written as a blob through the view: returned as is
            else:
                shape = _as_text(uncompress(data, size))
            if len(self._shapes) >= _CACHED_SHAPES:
                self._shapes.clear()
            self._shapes[shape_key] = shape
        if "\x01" not in shape:
            return shape
        # The view's replacements (`harness.store._compact_schema.payload_sql`): slots are
        # filled in order, so the first empty one ends them.
        text = shape.replace(CASE_MARKER, f'"{case_id}"')
        first_inline = 5 + _PER_SLOT * SLOTS
        for slot in range(INLINE):
            token = pieces[first_inline + slot]
            if token is None:
                break
            text = text.replace(inline_marker(slot), _token(token))
        for slot in range(SLOTS):
            at = 5 + _PER_SLOT * slot
            data, size, block, start = pieces[at : at + _PER_SLOT]
            if block is not None:
                body = self._from_block(block, start, size)
            elif data is None:
                break
            else:
                body = _as_text(uncompress(data, size))
            text = text.replace(slot_marker(slot), f'"{body}"')
        return text
