"""How well an embedder tells paraphrased concepts from different ones: the measurement
behind the unification threshold (docs/embeddings.md).

The labelled set is ``corpora/badf_concept_pairs.csv`` (our own; corpora/PROVENANCE.md):
pairs of concept phrases of the kind BADF's extractor produces, marked ``same`` = 1 when
they name one concept (paraphrases) and 0 otherwise, of ``kind`` paraphrase, unrelated, or
related (antonyms and neighbours within one domain: the hard negatives that a too-low
threshold merges). Scores are the cosine similarities of the pair's embeddings. The AUC is
scipy's Mann-Whitney U over the two classes divided by the number of pairs of pairs (the
probability that a random paraphrase pair outscores a random negative one), with a
bootstrap interval from ``scipy.stats.bootstrap``; everything else is counts.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from scipy import stats

import corpora

PAIRS_FILE = corpora.data_file("badf_concept_pairs.csv")
PAPER_THRESHOLD = 0.63  # the paper's Appendix G, for all-mpnet-base-v2
RELEASED_CODE_THRESHOLD = 0.83  # the authors' released code

PairKind = Literal["paraphrase", "unrelated", "related"]


class _Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class ConceptPair:
    a: str
    b: str
    same: bool
    kind: PairKind


def concept_pairs(path: Path = PAIRS_FILE) -> list[ConceptPair]:
    """The labelled pairs, in file order."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    pairs = []
    for row in rows:
        kind = row["kind"]
        if kind not in ("paraphrase", "unrelated", "related"):
            raise ValueError(f"{path}: unknown pair kind {kind!r}")
        pairs.append(ConceptPair(row["concept_a"], row["concept_b"], row["same"] == "1", kind))  # type: ignore[arg-type]
    return pairs


def pair_scores(embedder: _Embedder, pairs: Sequence[ConceptPair]) -> np.ndarray:
    """Cosine similarity of each pair (rows of an `Embedder` are unit vectors)."""
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors = embedder.embed(texts)
    index = {t: i for i, t in enumerate(texts)}
    a = vectors[[index[p.a] for p in pairs]]
    b = vectors[[index[p.b] for p in pairs]]
    return np.asarray((a * b).sum(axis=1), dtype=np.float64)


def roc_auc(scores: np.ndarray, same: np.ndarray) -> float:
    """P(score of a same pair > score of a different pair), ties counting one half."""
    positive, negative = scores[same], scores[~same]
    u = stats.mannwhitneyu(positive, negative, alternative="two-sided").statistic
    return float(u / (len(positive) * len(negative)))


@dataclass(frozen=True)
class AtThreshold:
    threshold: float
    true_pos: int
    false_pos: int
    false_neg: int
    true_neg: int

    @property
    def precision(self) -> float:
        merged = self.true_pos + self.false_pos
        return self.true_pos / merged if merged else 1.0

    @property
    def recall(self) -> float:
        return self.true_pos / (self.true_pos + self.false_neg)


def at_threshold(scores: np.ndarray, same: np.ndarray, threshold: float) -> AtThreshold:
    """Counts when pairs at or above ``threshold`` are merged (unification's rule)."""
    merged = scores >= threshold
    return AtThreshold(
        threshold,
        true_pos=int((merged & same).sum()),
        false_pos=int((merged & ~same).sum()),
        false_neg=int((~merged & same).sum()),
        true_neg=int((~merged & ~same).sum()),
    )


def best_threshold(scores: np.ndarray, same: np.ndarray) -> AtThreshold:
    """The observed score that, used as the threshold, gets the most pairs right; ties go to
    the higher threshold, which merges less."""
    candidates = sorted(set(scores.tolist()), reverse=True)
    best = max(
        (at_threshold(scores, same, t) for t in candidates),
        key=lambda r: (r.true_pos + r.true_neg, r.threshold),
    )
    return best


@dataclass(frozen=True)
class PairEvaluation:
    embedder: str
    pairs: int
    auc: float
    auc_low: float  # 95 % bootstrap interval
    auc_high: float
    best: AtThreshold
    paper: AtThreshold
    released_code: AtThreshold


def evaluate(
    embedder: _Embedder,
    pairs: Sequence[ConceptPair] | None = None,
    *,
    kinds: Sequence[PairKind] = ("paraphrase", "unrelated"),
    resamples: int = 2000,
) -> PairEvaluation:
    """The figures of docs/embeddings.md for ``embedder`` over the pairs of ``kinds``."""
    chosen = [p for p in (pairs or concept_pairs()) if p.kind in kinds]
    scores = pair_scores(embedder, chosen)
    same = np.array([p.same for p in chosen])
    interval = stats.bootstrap(
        (scores, same),
        lambda s, y: roc_auc(s, y.astype(bool)),
        paired=True,
        vectorized=False,
        n_resamples=resamples,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    return PairEvaluation(
        embedder=embedder.name,
        pairs=len(chosen),
        auc=roc_auc(scores, same),
        auc_low=float(interval.low),
        auc_high=float(interval.high),
        best=best_threshold(scores, same),
        paper=at_threshold(scores, same, PAPER_THRESHOLD),
        released_code=at_threshold(scores, same, RELEASED_CODE_THRESHOLD),
    )
