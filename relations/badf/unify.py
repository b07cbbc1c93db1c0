"""Unification of concepts across all stories: similar phrases become one concept.

Phrases are embedded (`relations.badf.embedding`) and grouped by cosine similarity at a
threshold (the paper: 0.63 with all-mpnet-base-v2; the authors' released code: 0.83). The
paper picks a random member as the representative; we use a documented rule instead, so
the same input always gives the same concepts:

- phrases are ranked by (most occurrences first, then shortest, then alphabetical);
- ``linkage = "leader"`` (default): in that order, a phrase joins the cluster of the
  highest-ranked representative it is at least ``threshold`` similar to, otherwise it starts
  a cluster and is its representative. Every member is then similar to its representative
  (no chaining of "a" ~ "b" ~ "c" into one concept);
- ``linkage = "single"``: clusters are the connected components of the graph of pairs at
  least ``threshold`` similar (the transitive closure), with the best-ranked member as
  representative.

Either way the representative is the most frequent member, ties broken by the shortest, then
alphabetically, and the result depends only on the multiset of phrases, never on their
order of arrival.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy

from relations.badf.embedding import Embedder

Linkage = Literal["leader", "single"]
_BLOCK = 1024


@dataclass(frozen=True)
class Unification:
    representative: dict[str, str]  # phrase -> its concept (the cluster's representative)
    members: dict[str, tuple[str, ...]]  # concept -> its phrases, ranked
    embedder: str
    threshold: float
    linkage: Linkage

    def concept(self, phrase: str) -> str:
        return self.representative.get(phrase, phrase)


def rank_key(phrase: str, counts: Mapping[str, int]) -> tuple[int, int, str]:
    return (-counts[phrase], len(phrase), phrase)


def unify(
    counts: Mapping[str, int],
    embedder: Embedder,
    threshold: float,
    linkage: Linkage = "leader",
) -> Unification:
    """Cluster the phrases of ``counts`` (phrase -> occurrences) at ``threshold``."""
    phrases = sorted(counts, key=lambda p: rank_key(p, counts))
    vectors = embedder.embed(phrases).astype(numpy.float32) if phrases else None
    if linkage == "leader":
        owner = _leader(vectors, threshold) if vectors is not None else []
    else:
        owner = _components(vectors, threshold) if vectors is not None else []
    representative = {p: phrases[owner[i]] for i, p in enumerate(phrases)}
    members: dict[str, list[str]] = {}
    for p in phrases:  # ranked order: members listed best first
        members.setdefault(representative[p], []).append(p)
    return Unification(
        representative,
        {k: tuple(v) for k, v in members.items()},
        embedder.name,
        threshold,
        linkage,
    )


def _leader(vectors: numpy.ndarray, threshold: float) -> list[int]:
    n = len(vectors)
    leaders = numpy.zeros((n, vectors.shape[1]), dtype=numpy.float32)
    leader_index: list[int] = []
    owner = [0] * n
    for i in range(n):
        if leader_index:
            sims = leaders[: len(leader_index)] @ vectors[i]
            best = int(numpy.argmax(sims))  # ties: the first, i.e. best-ranked, leader
            # A small tolerance: float32 dot products of equal texts are not always 1.0.
            if sims[best] >= threshold - 1e-6:
                owner[i] = leader_index[best]
                continue
        leaders[len(leader_index)] = vectors[i]
        leader_index.append(i)
        owner[i] = i
    return owner


def _components(vectors: numpy.ndarray, threshold: float) -> list[int]:
    n = len(vectors)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for start in range(0, n, _BLOCK):
        block = vectors[start : start + _BLOCK] @ vectors.T
        rows, cols = numpy.nonzero(block >= threshold - 1e-6)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            a, b = find(start + r), find(c)
            if a != b:
                # The root is the best-ranked index (phrases are sorted by rank).
                parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(n)]
