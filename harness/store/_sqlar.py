"""Texts compressed in the SQLite Archive convention, for log format 2
(`harness.store._compact_schema`): ``data`` is ``zlib.compress(text)`` when that is smaller,
else the text itself, and ``size`` is the text's length in bytes; ``sqlar_uncompress(data,
size)`` reads either. The stock ``sqlite3`` shell defines that SQL function; `register` gives
it to a Python connection (every connection the harness opens on a log), so the ``events``,
``turns`` and ``verdicts`` views work there too."""

from __future__ import annotations

import os
import sqlite3
import zlib
from typing import Any

COMPRESS_FROM = 64  # bytes; shorter texts rarely shrink under zlib's 6 bytes of framing
_LEVEL = 9
# Texts inflated lately: a text is shared by many events (a BiasLens question by every role
# and run that asks it) and a view rebuilds it for each, at ~5 us of zlib a time; a block
# of texts (`harness.store._compact_texts`, ~8 kB compressed) is read once for each of its
# texts. Kept by the first bytes of the compressed data and checked whole on a hit: a
# dict keyed by the whole bytes hashed all of them at each call (~4 us for a block), a
# comparison is a memcmp. Bounded: cleared when full.
_INFLATED_KEPT = 8192
_KEPT_UP_TO = 4096  # bytes of text: at most 32 MB kept
_inflated: dict[tuple[int, bytes], tuple[bytes, bytes]] = {}
_LARGE_KEPT = 64  # blocks: at most ~2 MB kept
_inflated_large: dict[tuple[int, bytes], tuple[bytes, bytes]] = {}
_PREFIX = 48  # bytes of the data in the key: zlib streams of two texts part within them


def compress(text: str) -> tuple[bytes | str, int]:
    """(data, size) for ``text``: zlib only when that is smaller, as sqlar stores a file."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) >= COMPRESS_FROM:
        packed = zlib.compress(raw, _LEVEL)
        if len(packed) < len(raw):
            return packed, len(raw)
    return text, len(raw)


def uncompress(data: Any, size: Any) -> Any:
    """``sqlar_uncompress`` as the sqlite3 shell defines it: ``data`` unchanged when its
    length is ``size`` (stored as is), else inflated."""
    if data is None or size is None:
        return data
    if isinstance(data, str):
        return data  # stored as text: never compressed
    if not isinstance(data, bytes) or len(data) == size:
        return data
    small = not isinstance(size, int) or size <= _KEPT_UP_TO
    kept = _inflated if small else _inflated_large
    key = (len(data), data[:_PREFIX])
    entry = kept.get(key)
    if entry is not None and entry[0] == data:
        return entry[1]
    try:
        # A buffer one byte larger than the text: zlib then never resizes its output (a
        # fifth of the time of inflating a few hundred bytes).
        if isinstance(size, int) and size >= 0:
            found = zlib.decompress(data, zlib.MAX_WBITS, size + 1)
        else:
            return zlib.decompress(data)
    except zlib.error:
        return None  # the shell's function returns NULL for data it cannot inflate
    if len(kept) >= (_INFLATED_KEPT if small else _LARGE_KEPT):
        kept.clear()
    kept[key] = (data, found)
    return found


def register(conn: sqlite3.Connection) -> sqlite3.Connection:
    """Give ``conn`` the ``sqlar_uncompress`` function the format-2 views call."""
    conn.create_function("sqlar_uncompress", 2, uncompress, deterministic=True)
    return conn


def connect(path: str | os.PathLike[str], **kwargs: Any) -> sqlite3.Connection:
    """`sqlite3.connect` with ``sqlar_uncompress`` registered: the way to open a log of
    either format for ad-hoc SQL from Python (``pandas.read_sql`` over its views, say)."""
    return register(sqlite3.connect(path, **kwargs))
