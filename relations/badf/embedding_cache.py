"""Sentence embeddings recorded in the campaign's log, so no vector is paid for twice.

`CachedEmbedder` wraps any embedder: texts whose (embedder name, text) vector is in the log
are read from it; the others are embedded in chunks of ``record_every``, and each chunk is
recorded in one transaction (its `embedding_calls` row and its vectors), so after a crash a
chunk is either fully recorded or absent and a resume pays only for what is absent.
`RecordedEmbedder` reads vectors only, never computing one: replay, re-analysis and reports
use it, so they get the recorded float32 vectors bit for bit and cannot call a vendor.

The tables are `EMBEDDINGS_SCHEMA` (why they are not events: there), kept in the log through
`harness.family_api.Log.side_table`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.family_api import (
    Log,
    MalformedResponseError,
    ReplayMissError,
    SideTable,
    StoreError,
)

# Sentence embeddings computed during a campaign (BADF's concept unification), cached by
# (embedder, text) so resume, replay and re-analysis never pay for a vector twice. Vectors are
# not events: a JSON payload would triple their size, and they are a cache of a pure function
# of (embedder, text), not a fact about a conversation. The tables live in the log file (one
# file holds a campaign: `harness.store.side_tables`) and are created by the first write
# (`CREATE ... IF NOT EXISTS`), so logs written before them load unchanged and read as
# holding no vectors. Rows are only ever inserted; one call's rows and its `embedding_calls`
# row commit in one transaction.
EMBEDDINGS_FORMAT = "bias-harness-embeddings/1"
EMBEDDINGS_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding_calls (
    call       INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign   TEXT    NOT NULL,       -- '' outside a campaign
    embedder   TEXT    NOT NULL,       -- the embedder's stable name, e.g. minilm-l6-numpy
    endpoint   TEXT    NOT NULL,       -- base URL, credentials removed; 'local' offline
    texts      INTEGER NOT NULL,       -- vectors this call recorded
    dim        INTEGER NOT NULL,
    latency_s  REAL    NOT NULL,
    ts         REAL    NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    embedder   TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    dim        INTEGER NOT NULL,
    vector     BLOB    NOT NULL,       -- dim float32 values, little-endian
    call       INTEGER NOT NULL REFERENCES embedding_calls (call),
    PRIMARY KEY (embedder, text)
);
"""

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


def _tables(db: str | Path) -> SideTable:
    """The embedding tables of the log ``db`` (a SQLite file)."""
    return Log.at(db).side_table(
        "embeddings",
        schema=EMBEDDINGS_SCHEMA,
        format_key="embeddings_format",
        format=EMBEDDINGS_FORMAT,
    )


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def recorded_vectors(db: str | Path, embedder: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
    """The vectors of ``texts`` that ``db`` holds for ``embedder`` (absent ones left out)."""
    wanted = list(dict.fromkeys(texts))
    found: dict[str, np.ndarray] = {}
    with _tables(db).reading() as conn:
        if conn is None:
            return found
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
    return found


def record_vectors(
    db: str | Path, call: EmbeddingCall, texts: Sequence[str], vectors: np.ndarray
) -> None:
    """Record one call's vectors and its `embedding_calls` row in one transaction. A text
    recorded meanwhile (by another process) keeps its first vector."""
    with _tables(db).writing() as conn:
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
    with _tables(db).reading() as conn:
        if conn is None:
            return []
        rows = conn.execute(
            "SELECT campaign, embedder, endpoint, texts, dim, latency_s, ts"
            " FROM embedding_calls ORDER BY call"
        ).fetchall()
    fields = ("campaign", "embedder", "endpoint", "texts", "dim", "latency_s", "ts")
    return [EmbeddingCall(**dict(zip(fields, row, strict=True))) for row in rows]
