"""BADF embedders (interface, lexical fallback, lookup) and concept unification."""

from __future__ import annotations

from collections.abc import Sequence

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.vocabulary.errors import ConfigError
from relations.badf.embedding import (
    EMBEDDERS,
    RECOMMENDED_THRESHOLDS,
    Embedder,
    LexicalEmbedder,
    embedder_for,
)
from relations.badf.unify import unify


def cos(e: Embedder, a: str, b: str) -> float:
    v = e.embed([a, b])
    return float(v[0] @ v[1])


def test_lexical_embedder_rows_are_unit_float32_and_deterministic() -> None:
    e = LexicalEmbedder()
    out = e.embed(["caring", "works as a nurse", ""])
    assert out.shape == (3, 2048) and out.dtype == numpy.float32
    assert numpy.allclose(numpy.linalg.norm(out[:2], axis=1), 1.0, atol=1e-5)
    assert numpy.array_equal(out, LexicalEmbedder().embed(["caring", "works as a nurse", ""]))
    assert e.embed([]).shape == (0, 2048)
    assert isinstance(e, Embedder) and e.name == "lexical-ngram"


def test_lexical_embedder_sees_spelling_not_meaning() -> None:
    e = LexicalEmbedder()
    t = RECOMMENDED_THRESHOLDS["lexical-ngram"]
    for a, b in [
        ("caring", "very caring"),
        ("caring", "caring nature"),
        ("anxious", "feels anxious"),
    ]:
        assert cos(e, a, b) >= t, (a, b)
    # word weight keeps look-alike words apart; synonyms it cannot see at all
    for a, b in [
        ("leader", "reader"),
        ("friendly", "unfriendly"),
        ("works as a nurse", "works as a teacher"),
    ]:
        assert cos(e, a, b) < t, (a, b)
    assert cos(e, "caring", "compassionate") < 0.1


def test_embedder_lookup() -> None:
    assert embedder_for("lexical-ngram").name == "lexical-ngram"
    assert embedder_for("lexical-ngram", dim=64).name == "lexical-ngram:64:3-5"
    assert all(callable(f) for f in EMBEDDERS.values())
    with pytest.raises(ConfigError, match="unknown embedder 'nope'"):
        embedder_for("nope")
    with pytest.raises(ConfigError, match="does not take"):
        embedder_for("lexical-ngram", colour="red")


class TableEmbedder:
    """Fixed vectors per text, for exact control of similarities."""

    name = "table"

    def __init__(self, vectors: dict[str, Sequence[float]]) -> None:
        self.vectors = {
            k: numpy.asarray(v, dtype=numpy.float32) / numpy.linalg.norm(v)
            for k, v in vectors.items()
        }

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        return (
            numpy.stack([self.vectors[t] for t in texts])
            if texts
            else numpy.zeros((0, 2), numpy.float32)
        )


def _angle(deg: float) -> list[float]:
    r = numpy.radians(deg)
    return [float(numpy.cos(r)), float(numpy.sin(r))]


def test_leader_does_not_chain_and_single_does() -> None:
    # a ~ b (cos 30deg = .87), b ~ c, but a !~ c (cos 60deg = .5) at threshold .8
    e = TableEmbedder({"a": _angle(0), "b": _angle(30), "c": _angle(60)})
    counts = {"a": 3, "b": 2, "c": 1}
    leader = unify(counts, e, 0.8)
    assert leader.members == {"a": ("a", "b"), "c": ("c",)}
    single = unify(counts, e, 0.8, linkage="single")
    assert single.members == {"a": ("a", "b", "c")}


def test_representative_is_most_frequent_then_shortest_then_alphabetical() -> None:
    e = TableEmbedder({"kind": [1, 0], "is kind": [1, 0.01], "kindly": [1, 0.02], "a kind": [1, 0]})
    assert (
        unify({"kind": 1, "is kind": 5, "kindly": 1, "a kind": 1}, e, 0.9).concept("kind")
        == "is kind"
    )
    assert (
        unify({"kind": 2, "is kind": 2, "kindly": 1, "a kind": 1}, e, 0.9).concept("kindly")
        == "kind"
    )
    assert unify({"kindly": 1, "a kind": 1}, e, 0.9).concept("kindly") == "a kind"


PHRASES = [
    "caring",
    "very caring",
    "caring nature",
    "patient",
    "is patient",
    "nurse",
    "works as a nurse",
    "leader",
    "reader",
    "calm",
    "stays calm",
    "determined",
]


@settings(max_examples=40, deadline=None)
@given(
    counts=st.dictionaries(st.sampled_from(PHRASES), st.integers(1, 5), min_size=1),
    order=st.randoms(),
    linkage=st.sampled_from(["leader", "single"]),
)
def test_clusters_do_not_depend_on_input_order(
    counts: dict[str, int], order: object, linkage: str
) -> None:
    e = LexicalEmbedder()
    items = list(counts.items())
    order.shuffle(items)  # type: ignore[attr-defined]
    a = unify(counts, e, 0.6, linkage=linkage)  # type: ignore[arg-type]
    b = unify(dict(items), e, 0.6, linkage=linkage)  # type: ignore[arg-type]
    assert a.members == b.members and a.representative == b.representative
    # every phrase has exactly one concept, which is one of its cluster's members
    assert sorted(p for m in a.members.values() for p in m) == sorted(counts)
    if linkage == "leader":
        for rep, members in a.members.items():
            assert all(cos(e, rep, m) >= 0.6 - 1e-6 for m in members)
