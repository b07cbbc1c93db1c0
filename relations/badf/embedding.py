"""Sentence embedders for concept unification: the interface, the lexical fallback, the lookup.

`Embedder` is what `relations.badf.unify` needs: a stable ``name`` (recorded with the
analysis) and ``embed(texts)`` returning float32 rows of unit length. Embedders are found by
name through `EMBEDDERS`, a plain mapping of name -> factory: the semantic embedders (an
offline CPU model, the OpenAI and Gemini embedding APIs, their cache) live in
``relations/badf/embedders_*.py`` and add their factories to this mapping.

`LexicalEmbedder` ("lexical-ngram") needs nothing but numpy: each text becomes the hashed
counts of its character n-grams (3 to 5 characters of the lower-cased text, padded with
spaces) plus its words of three letters or more, weighted 3 (so that "leader" and "reader",
or "friendly" and "unfriendly", which share most n-grams, stay apart), L2-normalised. It
is deterministic (a stable hash, never Python's salted one) and free, which makes it the
fallback and what the tests use. It sees spelling, not meaning: "caring" and "very caring"
are close, "caring" and "compassionate" are not (they share no n-gram).
A text without a letter or digit has no feature: its row is all zeros (similar to nothing,
so it stays a concept of its own). `RECOMMENDED_THRESHOLDS` holds the cosine threshold each
embedder is meant to be used with.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harness.family_api import ConfigError, require_extra

# numpy is imported where vectors are made: every command imports this family's CLI.
if TYPE_CHECKING:
    import numpy


@runtime_checkable
class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        """Shape (len(texts), dim), float32, every row L2-normalised."""
        ...


_WORD = re.compile(r"[a-z0-9]+")
WORD_WEIGHT = 3.0


def _bucket(feature: str, dim: int) -> int:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % dim


class LexicalEmbedder:
    """Hashed character n-grams (and whole words) of the lower-cased text."""

    def __init__(self, dim: int = 2048, n_min: int = 3, n_max: int = 5) -> None:
        if dim < 16 or not 1 <= n_min <= n_max:
            raise ConfigError(
                f"lexical embedder: dim={dim}, n={n_min}..{n_max}",
                field="embedder options",
                fix="give dim >= 16 and 1 <= n_min <= n_max",
            )
        self.dim, self.n_min, self.n_max = dim, n_min, n_max
        self.name = (
            "lexical-ngram"
            if (dim, n_min, n_max) == (2048, 3, 5)
            else (f"lexical-ngram:{dim}:{n_min}-{n_max}")
        )
        self._cache: dict[str, numpy.ndarray] = {}

    def _vector(self, text: str) -> numpy.ndarray:
        found = self._cache.get(text)
        if found is not None:
            return found
        import numpy

        vec = numpy.zeros(self.dim, dtype=numpy.float64)
        low = " ".join(_WORD.findall(text.lower()))
        padded = f" {low} "
        for n in range(self.n_min, self.n_max + 1):
            for i in range(len(padded) - n + 1):
                vec[_bucket("c" + padded[i : i + n], self.dim)] += 1.0
        for word in low.split():
            if len(word) > 2:
                vec[_bucket("w" + word, self.dim)] += WORD_WEIGHT
        norm = float(numpy.linalg.norm(vec))
        out = (vec / norm if norm else vec).astype(numpy.float32)
        self._cache[text] = out
        return out

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        import numpy

        if not texts:
            return numpy.zeros((0, self.dim), dtype=numpy.float32)
        return numpy.stack([self._vector(t) for t in texts])


def _lexical(**options: Any) -> Embedder:
    return LexicalEmbedder(**options)


EmbedderFactory = Callable[..., Embedder]


def _minilm(**options: Any) -> Embedder:
    # Deferred: numpy MiniLM loads tokenizers and safetensors (the 'embeddings' extra),
    # which the lexical path and the report never need.
    require_extra("embeddings", field="embedder")
    from relations.badf.embedders_offline import minilm

    return minilm(**options)


# name -> factory. Vendor embedders are named "<vendor>:<model>" (`embedder_for`).
EMBEDDERS: dict[str, EmbedderFactory] = {"lexical-ngram": _lexical, "minilm-l6-numpy": _minilm}
VENDOR_SCHEMES = ("openai", "google")
DEFAULT_EMBEDDER = "minilm-l6-numpy"

# The cosine threshold each embedder is calibrated for (a campaign may override it).
# all-mpnet-base-v2: the paper's 0.63 (the authors' released code used 0.83).
# minilm-l6-numpy: 0.63 merges no unrelated pair of corpora/badf_concept_pairs.csv and 37 %
# of its paraphrases (docs/embeddings.md): precise rather than complete.
RECOMMENDED_THRESHOLDS: dict[str, float] = {
    "lexical-ngram": 0.6,
    "minilm-l6-numpy": 0.63,
    "all-mpnet-base-v2": 0.63,
}
PAPER_THRESHOLD = 0.63
RELEASED_CODE_THRESHOLD = 0.83


def embedder_for(name: str, **options: Any) -> Embedder:
    """The embedder registered as ``name`` (options go to its factory), or a ConfigError."""
    factory = EMBEDDERS.get(name)
    if factory is None and name.split(":", 1)[0] in VENDOR_SCHEMES and ":" in name:
        from relations.badf.embedders_vendor import vendor_embedder

        return vendor_embedder(name, **options)
    if factory is None:
        raise ConfigError(
            f"unknown embedder {name!r}",
            field="embedder",
            fix=f"use one of {', '.join(sorted(EMBEDDERS))}, or openai:MODEL / google:MODEL",
        )
    try:
        return factory(**options)
    except TypeError as exc:
        raise ConfigError(
            f"embedder {name!r} does not take these options: {sorted(options)}",
            field="embedder options",
            fix="see the embedder's docstring",
        ) from exc


def known_embedders() -> Mapping[str, EmbedderFactory]:
    return dict(EMBEDDERS)
