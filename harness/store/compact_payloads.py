"""Format-2 payloads rebuilt in Python for `harness.store.reader.EventReader`: the same bytes
the ``events`` view gives, without its per-row SQL (a scalar subquery per text, nested
``replace``, a Python ``sqlar_uncompress`` call per compressed text), which made a full
read of an imported log several times slower than format 1's."""

from __future__ import annotations

from collections.abc import Sequence

from harness.store.compact_schema import CASE_MARKER, INLINE, SLOTS, inline_marker, slot_marker
from harness.store.sqlar import uncompress

_TEXT_JOINS = " ".join(
    f"LEFT JOIN texts x{slot} ON x{slot}.key = e.t{slot}" for slot in range(SLOTS)
)
_TEXT_COLUMNS = ", ".join(
    f"x{slot}.data AS d{slot}, x{slot}.size AS z{slot}" for slot in range(SLOTS)
)
_INLINE_COLUMNS = ", ".join(f"e.i{slot} AS i{slot}" for slot in range(INLINE))

# The rows of the ``events`` view with the payload still in pieces; the view's column names,
# so the reader's WHERE and ORDER BY clauses apply unchanged (SQLite flattens the subquery).
SOURCE = (
    "(SELECT e.gseq AS gseq, p.name AS campaign, c.name AS case_id, e.seq AS seq,"
    " k.name AS kind, e.schema_version AS schema_version, e.ts AS ts,"
    f" e.shape AS shape, s.data AS shape_data, s.size AS shape_size, {_TEXT_COLUMNS},"
    f" {_INLINE_COLUMNS}"
    " FROM log e JOIN campaigns p ON p.key = e.campaign JOIN cases c ON c.key = e.case_key"
    " AND c.campaign = e.campaign"
    f" JOIN kinds k ON k.key = e.kind JOIN texts s ON s.key = e.shape {_TEXT_JOINS})"
)
COLUMNS = (
    "gseq, campaign, case_id, seq, kind, schema_version, ts, shape, shape_data, shape_size, "
    + ", ".join(f"d{slot}, z{slot}" for slot in range(SLOTS))
    + ", "
    + ", ".join(f"i{slot}" for slot in range(INLINE))
)
_CACHED_SHAPES = 4096


def _as_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    return str(value)


class PayloadBuilder:
    """Puts a payload back together from its shape, texts and inline tokens; shapes (shared
    by many events) are inflated once and kept, up to a bound."""

    def __init__(self) -> None:
        self._shapes: dict[int, str] = {}

    def payload(self, case_id: str, pieces: Sequence[object]) -> str | bytes:
        """``pieces``: shape key, shape data and size, (data, size) per text slot, then the
        inline tokens, as `SOURCE` lists them after the first seven columns."""
        shape_key = int(pieces[0])  # type: ignore[call-overload]
        shape = self._shapes.get(shape_key)
        if shape is None:
            data, size = pieces[1], pieces[2]
            if isinstance(data, bytes) and len(data) == size:
                return data  # a payload written as a blob through the view: returned as is
            shape = _as_text(uncompress(data, size))
            if len(self._shapes) >= _CACHED_SHAPES:
                self._shapes.clear()
            self._shapes[shape_key] = shape
        if "\x01" not in shape:
            return shape
        # The view's replacements (`harness.store.compact_schema.payload_sql`): slots are
        # filled in order, so the first empty one ends them.
        text = shape.replace(CASE_MARKER, f'"{case_id}"')
        for slot in range(INLINE):
            token = pieces[3 + 2 * SLOTS + slot]
            if token is None:
                break
            text = text.replace(inline_marker(slot), _as_text(token))
        for slot in range(SLOTS):
            data = pieces[3 + 2 * slot]
            if data is None:
                break
            body = _as_text(uncompress(data, pieces[4 + 2 * slot]))
            text = text.replace(slot_marker(slot), f'"{body}"')
        return text
