"""Embeddings recorded in the campaign log: a second run pays for nothing, a replay reads
the recorded vectors bit for bit and never computes one, a killed run leaves each call
fully recorded or absent, and logs written before the tables existed load unchanged."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import pytest

from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.store.writer import EventWriter
from harness.vocabulary.errors import (
    MalformedResponseError,
    NotAHarnessLogError,
    ReplayMissError,
    StoreError,
)
from relations.badf.embedders_vendor import openai_embedder
from relations.badf.embedding_cache import (
    CachedEmbedder,
    RecordedEmbedder,
    embedding_calls,
    recorded_vectors,
)

TESTS = Path(__file__).resolve().parents[2]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
from fixtures.badf_embedding_vendor import EmbeddingVendor  # noqa: E402

OLD_LOG = TESTS / "fixtures" / "events_v1.db"


def hash_vector(text: str, dim: int = 6) -> np.ndarray:
    import hashlib

    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    row = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return row / np.linalg.norm(row)


class CountingEmbedder:
    """A deterministic offline embedder that counts the texts it is asked for."""

    name = "hash-test"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.extend(texts)
        return np.stack([hash_vector(t) for t in texts]) if texts else np.zeros((0, 6))


def fresh_log(path: Path) -> Path:
    async def make() -> None:
        async with await EventWriter.open(path):
            pass

    asyncio.run(make())
    return path


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return fresh_log(tmp_path / "campaign.db")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingVendor]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-CANARY-openai-7f3a9c1e55d2")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    vendor = EmbeddingVendor().start()
    try:
        yield vendor
    finally:
        vendor.stop()


def test_a_second_run_over_the_same_texts_makes_no_vendor_call(
    log: Path, server: EmbeddingVendor
) -> None:
    texts = ["caring", "compassionate", "diligent", "caring", "hard-working"]
    first = CachedEmbedder(openai_embedder(base_url=f"{server.url}/v1"), log, campaign="c1")
    vectors = first.embed(texts)
    assert server.texts_sent() == ["caring", "compassionate", "diligent", "hard-working"]
    paid = len(server.requests)
    # A new process would build new objects: nothing is remembered but the log.
    again = CachedEmbedder(openai_embedder(base_url=f"{server.url}/v1"), log, campaign="c1")
    assert np.array_equal(again.embed(texts), vectors)
    assert len(server.requests) == paid, "the second run paid for a vector"
    assert again.calls == 0 and again.hits == 4
    # Overlapping texts: only the new one is paid for.
    again.embed(["diligent", "resilient"])
    assert server.texts_sent()[-1:] == ["resilient"] and len(server.requests) == paid + 1
    calls = embedding_calls(log)
    assert [c.texts for c in calls] == [4, 1]
    assert {c.endpoint for c in calls} == {f"{server.url}/v1"} and calls[0].campaign == "c1"


def test_replay_reads_identical_vectors_and_never_computes(
    log: Path, server: EmbeddingVendor
) -> None:
    texts = ["leader", "takes charge of the team", "shy"]
    computed = CachedEmbedder(openai_embedder(base_url=f"{server.url}/v1"), log).embed(texts)
    server.stop()
    replayed = RecordedEmbedder(log, "openai:text-embedding-3-small").embed(texts)
    assert replayed.tobytes() == computed.tobytes()
    with pytest.raises(ReplayMissError, match=r"1 text\(s\).*'timid'"):
        RecordedEmbedder(log, "openai:text-embedding-3-small").embed(["shy", "timid"])
    with pytest.raises(ReplayMissError):  # vectors are keyed by embedder name too
        RecordedEmbedder(log, "google:gemini-embedding-001").embed(["shy"])
    server.start()  # the fixture stops it again


def test_chunks_are_recorded_as_they_finish(log: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, log, record_every=4)
    texts = [f"t{i}" for i in range(10)]
    out = cached.embed(texts)
    np.testing.assert_array_equal(out, np.stack([hash_vector(t) for t in texts]))
    assert [c.texts for c in embedding_calls(log)] == [4, 4, 2]
    assert {c.endpoint for c in embedding_calls(log)} == {"local"}


def test_bad_inner_output_records_nothing(log: Path) -> None:
    class Broken(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.full((len(texts), 6), np.nan)

    with pytest.raises(MalformedResponseError, match="not finite"):
        CachedEmbedder(Broken(), log).embed(["a"])
    assert recorded_vectors(log, "hash-test", ["a"]) == {} and embedding_calls(log) == []


def test_logs_from_before_the_tables_load_and_accept_vectors(tmp_path: Path) -> None:
    copy = tmp_path / "old.db"
    shutil.copy(OLD_LOG, copy)
    with EventReader(copy) as reader:
        before = [(e.gseq, e.event) for e in reader.events()]
    assert embedding_calls(copy) == []
    with pytest.raises(ReplayMissError):
        RecordedEmbedder(copy, "hash-test").embed(["a"])
    CachedEmbedder(CountingEmbedder(), copy).embed(["a", "b"])
    with EventReader(copy) as reader:
        assert [(e.gseq, e.event) for e in reader.events()] == before
        assert reader.integrity_ok()
    assert len(recorded_vectors(copy, "hash-test", ["a", "b"])) == 2


def test_only_harness_logs(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        CachedEmbedder(CountingEmbedder(), tmp_path / "none.db").embed(["a"])
    other = tmp_path / "other.db"
    connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(NotAHarnessLogError):
        CachedEmbedder(CountingEmbedder(), other).embed(["a"])


_CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    from tests.families.badf.test_badf_embed_cache import CountingEmbedder
    from relations.badf.embedding_cache import CachedEmbedder
    texts = [f"concept {{i}}" for i in range(100000)]
    CachedEmbedder(CountingEmbedder(), {db!r}, record_every=3).embed(texts)
    """
)


def _recorded_calls(db: Path) -> int:
    conn = connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM embedding_calls").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


@pytest.mark.slow
def test_a_killed_run_leaves_whole_calls_and_a_resume_pays_only_for_the_rest(log: Path) -> None:
    for round_ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD.format(repo=str(REPO), db=str(log))],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        deadline = time.monotonic() + 60
        target = _recorded_calls(log) + 5 + round_ * 7
        while _recorded_calls(log) < target and time.monotonic() < deadline:
            assert child.poll() is None, "the child ended before it was killed"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    conn = connect(log)
    per_call = conn.execute(
        "SELECT c.call, c.texts, count(e.text) FROM embedding_calls c"
        " LEFT JOIN embeddings e ON e.call = c.call GROUP BY c.call"
    ).fetchall()
    recorded = {row[0] for row in conn.execute("SELECT text FROM embeddings")}
    conn.close()
    print(f"after 3 kills: {len(per_call)} calls, {len(recorded)} vectors recorded")
    assert per_call and all(texts == rows for _, texts, rows in per_call)
    # Resume over the first texts: it computes exactly those not recorded.
    texts = [f"concept {i}" for i in range(len(recorded) + 20)]
    inner = CountingEmbedder()
    out = CachedEmbedder(inner, log).embed(texts)
    assert sorted(inner.asked) == sorted(t for t in texts if t not in recorded)
    assert len(inner.asked) == 20
    np.testing.assert_array_equal(out, np.stack([hash_vector(t) for t in texts]))


@runtime_checkable
class Embedder(Protocol):
    """A copy of relations/badf/embedding.py's protocol (the family's, merged beside this)."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def test_every_embedder_here_is_an_embedder(log: Path, server: EmbeddingVendor) -> None:
    from relations.badf.embedders_offline import minilm

    vendor = openai_embedder(base_url=f"{server.url}/v1")
    for embedder in (
        minilm(),
        vendor,
        CachedEmbedder(vendor, log),
        RecordedEmbedder(log, vendor.name),
    ):
        assert isinstance(embedder, Embedder) and isinstance(embedder.name, str)


_CRASHING_CHILD = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {repo!r})
    from tests.families.badf.test_badf_embed_cache import CountingEmbedder
    from harness.store.side_tables import SideTable
    from relations.badf import embedding_cache

    real_connect = SideTable._connect
    written = 0

    class DiesBeforeCommit:
        # The process dies after a call's vectors are inserted and before COMMIT: the
        # worst moment for a kill, reached on purpose rather than by chance.
        def __init__(self, conn):
            self.conn = conn

        def __getattr__(self, name):
            return getattr(self.conn, name)

        def executemany(self, *args):
            global written
            result = self.conn.executemany(*args)
            written += 1
            if written == 3:
                os._exit(9)
            return result

    SideTable._connect = lambda self, write: DiesBeforeCommit(real_connect(self, write=write))
    texts = [f"concept {{i}}" for i in range(30)]
    embedding_cache.CachedEmbedder(CountingEmbedder(), {db!r}, record_every=4).embed(texts)
    """
)


def test_a_death_inside_the_transaction_records_nothing_of_that_call(log: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _CRASHING_CHILD.format(repo=str(REPO), db=str(log))],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert child.returncode == 9
    calls = embedding_calls(log)
    assert [c.texts for c in calls] == [4, 4], "the third call died before COMMIT"
    texts = [f"concept {i}" for i in range(30)]
    assert sorted(recorded_vectors(log, "hash-test", texts)) == sorted(texts[:8])
    inner = CountingEmbedder()
    CachedEmbedder(inner, log).embed(texts)
    assert inner.asked == texts[8:]
