"""Sentence embeddings recorded in the campaign's log, so no vector is paid for twice.

`CachedEmbedder` wraps any embedder: texts whose (embedder name, text) vector is in the log
are read from it; the others are embedded in chunks of ``record_every``, and each chunk is
recorded in one transaction (its `embedding_calls` row and its vectors), so after a crash a
chunk is either fully recorded or absent and a resume pays only for what is absent.
`RecordedEmbedder` reads vectors only, never computing one: replay, re-analysis and reports
use it, so they get the recorded float32 vectors bit for bit and cannot call a vendor.

The tables are `harness.store.schema.EMBEDDINGS_SCHEMA` (why they are not events: there).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.family_api import MalformedResponseError, ReplayMissError, StoreError
from harness.store.schema import (
    EMBEDDINGS_FORMAT,
    EMBEDDINGS_SCHEMA,
    READER_PRAGMAS,
    WRITER_PRAGMAS,
    apply_pragmas,
    check_log_format,
)

_LOOKUP_CHUNK = 500  # texts per SELECT ... IN (...), under SQLite's parameter limit
_VECTOR = np.dtype("<f4")


class _Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class EmbeddingCall(BaseModel):
    """One recorded embedding call (a row of ``embedding_calls``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    campaign: str = ""
    embedder: str
    endpoint: str
    texts: int = Field(ge=1)
    dim: int = Field(ge=1)
    latency_s: float = Field(ge=0)
    ts: float


def _connect(db: Path, *, write: bool) -> sqlite3.Connection:
    if not db.exists():
        raise StoreError(f"{db} does not exist (embeddings are recorded in a campaign's log)")
    try:
        if write:
            conn = sqlite3.connect(db, isolation_level=None)
            apply_pragmas(conn, WRITER_PRAGMAS)
        else:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            apply_pragmas(conn, READER_PRAGMAS)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {db} for embeddings: {exc}") from exc
    check_log_format(conn, db)
    return conn


def _has_tables(conn: sqlite3.Connection, db: Path) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'"
    ).fetchone()
    if not row or not row[0]:
        return False  # a log written before embeddings were recorded, or none recorded yet
    marker = conn.execute("SELECT value FROM meta WHERE key = 'embeddings_format'").fetchone()
    if marker is not None and marker[0] != EMBEDDINGS_FORMAT:
        raise StoreError(
            f"{db} records embeddings as {marker[0]!r}; this harness reads {EMBEDDINGS_FORMAT!r}"
            " (upgrade the harness to read it)"
        )
    return True


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def recorded_vectors(db: str | Path, embedder: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
    """The vectors of ``texts`` that ``db`` holds for ``embedder`` (absent ones left out)."""
    db = Path(db)
    wanted = list(dict.fromkeys(texts))
    found: dict[str, np.ndarray] = {}
    with contextlib.closing(_connect(db, write=False)) as conn:
        if not _has_tables(conn, db):
            return found
        try:
            for chunk in _chunks(wanted, _LOOKUP_CHUNK):
                rows = conn.execute(
                    "SELECT text, dim, vector FROM embeddings WHERE embedder = ? AND text IN "
                    f"({','.join('?' * len(chunk))})",
                    (embedder, *chunk),
                )
                for text, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype=_VECTOR)
                    if vector.shape != (dim,):
                        raise StoreError(f"{db}: the vector of {text!r} is not {dim} floats")
                    found[text] = vector.astype(np.float32)
        except sqlite3.Error as exc:
            raise StoreError(f"reading embeddings from {db} failed: {exc}") from exc
    return found


def record_vectors(
    db: str | Path, call: EmbeddingCall, texts: Sequence[str], vectors: np.ndarray
) -> None:
    """Record one call's vectors and its `embedding_calls` row in one transaction. A text
    recorded meanwhile (by another process) keeps its first vector."""
    db = Path(db)
    with contextlib.closing(_connect(db, write=True)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")
            _create_tables(conn)
            cur = conn.execute(
                "INSERT INTO embedding_calls (campaign, embedder, endpoint, texts, dim,"
                " latency_s, ts) VALUES (?,?,?,?,?,?,?)",
                (
                    call.campaign,
                    call.embedder,
                    call.endpoint,
                    call.texts,
                    call.dim,
                    call.latency_s,
                    call.ts,
                ),
            )
            call_id = cur.lastrowid
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings (embedder, text, dim, vector, call)"
                " VALUES (?,?,?,?,?)",
                [
                    (call.embedder, text, call.dim, vector.astype(_VECTOR).tobytes(), call_id)
                    for text, vector in zip(texts, vectors, strict=True)
                ],
            )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise StoreError(f"recording embeddings in {db} failed: {exc}") from exc


def _create_tables(conn: sqlite3.Connection) -> None:
    # Statement by statement: executescript would commit the open transaction first.
    statement = ""
    for line in EMBEDDINGS_SCHEMA.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('embeddings_format', ?)",
        (EMBEDDINGS_FORMAT,),
    )


def _checked(vectors: Any, texts: Sequence[str], name: str) -> np.ndarray:
    """An embedder's output as (len(texts), dim) finite float32, or an error naming it."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != len(texts) or array.shape[1] < 1:
        raise MalformedResponseError(f"{name} returned shape {array.shape} for {len(texts)} texts")
    if not np.isfinite(array).all():
        raise MalformedResponseError(f"{name} returned a vector that is not finite")
    return array


class CachedEmbedder:
    """An embedder that reads recorded vectors from ``db`` and records the ones it computes.

    ``calls`` and ``texts_computed`` count what the inner embedder was asked, ``hits`` the
    texts served from the log.
    """

    def __init__(
        self, inner: _Embedder, db: str | Path, *, campaign: str = "", record_every: int = 256
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.db = Path(db)
        self.campaign = campaign
        self.record_every = record_every
        endpoint = getattr(inner, "endpoint", None)
        self.endpoint = getattr(endpoint, "shown", None) or "local"
        self.calls = 0
        self.texts_computed = 0
        self.hits = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys(texts))
        known = recorded_vectors(self.db, self.name, unique)
        self.hits += len(known)
        missing = [t for t in unique if t not in known]
        for chunk in _chunks(missing, self.record_every):
            started = time.monotonic()
            vectors = _checked(self.inner.embed(chunk), chunk, self.name)
            call = EmbeddingCall(
                campaign=self.campaign,
                embedder=self.name,
                endpoint=self.endpoint,
                texts=len(chunk),
                dim=vectors.shape[1],
                latency_s=time.monotonic() - started,
                ts=time.time(),
            )
            record_vectors(self.db, call, chunk, vectors)
            self.calls += 1
            self.texts_computed += len(chunk)
        # Read back what was recorded: a text another process recorded first keeps its
        # vector, and every caller sees the bytes a replay will see.
        if missing:
            known.update(recorded_vectors(self.db, self.name, missing))
        return _stack(known, texts, self.name)


class RecordedEmbedder:
    """Vectors recorded in ``db`` for the embedder ``name``; never computes one. A text the
    log does not hold is a `ReplayMissError` naming how many are missing and the first."""

    def __init__(self, db: str | Path, name: str) -> None:
        self.db = Path(db)
        self.name = name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        known = recorded_vectors(self.db, self.name, texts)
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            raise ReplayMissError(
                f"{len(missing)} text(s) have no {self.name} vector recorded in {self.db}, "
                f"e.g. {missing[0][:80]!r}: the analysis that embeds them has not run against "
                "this log (run it with the embedder, not from the recording)"
            )
        return _stack(known, texts, self.name)


def _stack(known: dict[str, np.ndarray], texts: Sequence[str], name: str) -> np.ndarray:
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    dims = {known[t].shape[0] for t in texts}
    if len(dims) != 1:
        raise StoreError(f"the log holds {name} vectors of several sizes: {sorted(dims)}")
    return np.stack([known[t] for t in texts]).astype(np.float32)


def embedding_calls(db: str | Path) -> list[EmbeddingCall]:
    """Every recorded embedding call of ``db``, oldest first (empty for older logs)."""
    db = Path(db)
    with contextlib.closing(_connect(db, write=False)) as conn:
        if not _has_tables(conn, db):
            return []
        rows = conn.execute(
            "SELECT campaign, embedder, endpoint, texts, dim, latency_s, ts"
            " FROM embedding_calls ORDER BY call"
        ).fetchall()
    fields = ("campaign", "embedder", "endpoint", "texts", "dim", "latency_s", "ts")
    return [EmbeddingCall(**dict(zip(fields, row, strict=True))) for row in rows]
