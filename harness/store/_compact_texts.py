"""The ``texts`` table of log format 2 (`harness.store._compact_schema`): each distinct text
stored once under an integer key, found again by its hash. Texts of a commit are packed in
blocks of about `BLOCK_BYTES` and zlib-compressed together: a BiasLens answer of a few
hundred bytes shrinks to ~61 % on its own and to ~32 % in a 16 kB block (the words of one
answer recur in the next), which is the largest part of the log.

Keys are handed out here (max(key) + 1 read at each commit's start: one writer holds the
file's write lock), so a row can name a text before its block is written at the end of
the commit. The caches only save lookups, are bounded, and are dropped on a rollback.
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib

from harness.store._sqlar import compress, uncompress

BLOCK_BYTES = 32_768  # raw bytes a block holds (one text may overrun it)
_LEVEL = 6  # zlib level of a block: level 9 is ~3x the CPU for under 1 % smaller blocks
_CACHE_LIMIT = 50_000  # texts remembered, then the cache starts afresh


def text_hash(text: str, size: int = 8) -> int:
    """blake2b of ``text`` as a signed integer of ``size`` bytes: 8 in logs written before
    blocks, 4 since (4 bytes less in a row and in its index entry; two texts of one hash,
    ~1 in 10^5 at 100,000 texts, are told apart by their bytes)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=size).digest()
    return int.from_bytes(digest, "big", signed=True)


class TextStore:
    """Interns texts into ``texts`` on the connection's own thread. ``blocks``: the log has
    the ``blocks`` table (logs written before it store each text on its own)."""

    def __init__(self, blocks: bool) -> None:
        self.blocks = blocks
        self._keys: dict[str, int] = {}
        self._pending: dict[str, tuple[int, int, bytes]] = {}  # text -> (key, hash, bytes)
        self._next_key = 0

    def forget(self) -> None:
        self._keys.clear()
        self._pending.clear()
        self._next_key = 0

    def begin(self, conn: sqlite3.Connection) -> None:
        """Before a commit's rows: the next free key (another writer may have added texts)."""
        if self.blocks:
            row = conn.execute("SELECT coalesce(max(key), 0) + 1 FROM texts").fetchone()
            self._next_key = int(row[0])

    def _remember(self, text: str, key: int) -> int:
        if len(self._keys) >= _CACHE_LIMIT:
            self._keys.clear()
        self._keys[text] = key
        return key

    def _stored(self, conn: sqlite3.Connection, data: object, size: int, block: object,
                start: object) -> bytes | None:  # fmt: skip
        """A stored text's bytes (to tell two texts of one hash apart: rare)."""
        if block is not None:
            row = conn.execute("SELECT data, size FROM blocks WHERE key = ?", (block,)).fetchone()
            whole = uncompress(row[0], row[1]) if row else None
            if not isinstance(whole, bytes) or not isinstance(start, int):
                return None
            return whole[start - 1 : start - 1 + size]
        raw = uncompress(data, size)
        return raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw

    def key(self, conn: sqlite3.Connection, text: str, *, packed: bool = True) -> int:
        """The key of ``text``, stored now if new. ``packed``: compressed (in a block when
        the log has blocks); a shape is stored as is, since every row reads one."""
        found = self._keys.get(text)
        if found is not None:
            return found
        pending = self._pending.get(text)
        if pending is not None:
            return self._remember(text, pending[0])
        digest = text_hash(text, 4 if self.blocks else 8)
        raw = text.encode("utf-8", "surrogatepass")
        columns = "key, data, size, block, start" if self.blocks else "key, data, size, NULL, NULL"
        for key, data, size, block, start in conn.execute(
            f"SELECT {columns} FROM texts WHERE hash = ?", (digest,)
        ):
            if size == len(raw) and self._stored(conn, data, size, block, start) == raw:
                return self._remember(text, int(key))
        if self.blocks and packed and len(raw) >= 64:
            key = self._next_key
            self._next_key += 1
            self._pending[text] = (key, digest, raw)
            return self._remember(text, key)
        data, size = compress(text) if packed else (text, len(raw))
        if self.blocks:
            key = self._next_key
            self._next_key += 1
            conn.execute(
                "INSERT INTO texts (key, hash, size, data) VALUES (?, ?, ?, ?)",
                (key, digest, size, data),
            )
            return self._remember(text, key)
        cur = conn.execute(
            "INSERT INTO texts (hash, size, data) VALUES (?, ?, ?)", (digest, size, data)
        )
        return self._remember(text, int(cur.lastrowid or 0))

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write the commit's new texts: in blocks of about `BLOCK_BYTES`, a text alone in
        its block as a text of its own."""
        pending = sorted(self._pending.values())
        self._pending.clear()
        group: list[tuple[int, int, bytes]] = []
        filled = 0
        for item in pending:
            group.append(item)
            filled += len(item[2])
            if filled >= BLOCK_BYTES:
                self._write_block(conn, group)
                group, filled = [], 0
        if group:
            self._write_block(conn, group)

    def _write_block(self, conn: sqlite3.Connection, group: list[tuple[int, int, bytes]]) -> None:
        if len(group) == 1:
            key, digest, raw = group[0]
            data, size = compress(raw.decode("utf-8", "surrogatepass"))
            conn.execute(
                "INSERT INTO texts (key, hash, size, data) VALUES (?, ?, ?, ?)",
                (key, digest, size, data),
            )
            return
        whole = b"".join(raw for _k, _d, raw in group)
        packed = zlib.compress(whole, _LEVEL)
        cur = conn.execute(
            "INSERT INTO blocks (size, data) VALUES (?, ?)",
            (len(whole), packed if len(packed) < len(whole) else whole),
        )
        block = int(cur.lastrowid or 0)
        rows: list[object] = []
        start = 1
        for key, digest, raw in group:
            rows += (key, digest, len(raw), block, start)
            start += len(raw)
        for i in range(0, len(group), 150):  # 5 parameters a row, under SQLite's 999
            n = min(150, len(group) - i)
            conn.execute(
                "INSERT INTO texts (key, hash, size, block, start) VALUES "
                + ",".join(["(?,?,?,?,?)"] * n),
                rows[5 * i : 5 * (i + n)],
            )
