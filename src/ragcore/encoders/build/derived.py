"""Model files derived from the bundled all-MiniLM-L6-v2 at first use, each checked
before it is kept (models.py says where they live). Neither needs torch.

- fused fp32 (``FUSED_NAME``): the model's safetensors weights written straight
  into onnxruntime's fused BERT operators (bert_graph.py: EmbedLayerNormalization,
  Attention, BiasGelu; the residual LayerNorms as Add and LayerNormalization,
  faster on CPU than SkipLayerNormalization), the graph onnxruntime's BERT
  optimizer makes of a TorchScript export but for those. Kept at cosine >= FUSED_MIN_COSINE to the PyTorch embeddings of
  CHECK_TEXTS stored in check_vectors.npz (made with
  ``pytorch_embeddings``; tests/encoders recompute them with torch); for
  weights other than those stored vectors were made from, PyTorch itself is
  the reference (torch and transformers needed then).
- int8 (``FUSED_INT8_BLOCKS_NAME``; ``FUSED_INT8_NAME`` for "int8-ffn-fp32"):
  onnxruntime's dynamic quantisation of the fused
  graph (quantize.py: int8 weights per output channel, uint8 activations
  quantised per call, outlier channels smoothed first; the FFN's second product
  in 8-bit blocks (MatMulNBits), or in fp32 for FUSED_INT8_NAME; the embeddings
  stay fp32), which runs on onnxruntime's int8 GEMM kernels
  (AMX, AVX-512 VNNI or AVX-VNNI, chosen by onnxruntime from the CPU). Kept at
  cosine >= INT8_MIN_COSINE to the fused fp32 with the same nearest neighbour for
  every check text; if the smoothed recipe misses, the same without smoothing is
  tried, then the smoothed one with 7-bit weights (CPUs without VNNI, whose
  uint8 x int8 products can saturate with 8-bit weights); if all miss, nothing
  is kept and the error says so. The
  activation scale is set per call, so a text's int8 vector depends a little on
  the texts batched with it and on where BiEncoder cuts a call by count into
  pieces (checked within the same threshold: the check texts whole, in pieces
  and one per call; fp32 vectors do not depend on either).

Deriving needs onnx and onnxruntime (the ``onnx`` extra) and the bundled files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .._text import TextTokenizer
from ..bi_encoder import BiEncoder
from .bert_graph import write_fused_bert
from ..models import (DERIVED_RECIPES, EXPORT_FILE, FUSED_INT8_BLOCKS_NAME, FUSED_NAME,
                     derived_path, max_seq_length, minilm_dir, source_digest)
from .quantize import write_int8

FUSED_MIN_COSINE = 0.9999
INT8_MIN_COSINE = 0.995
# Varied texts (code, unicode, one word, one longer than max_length) and two topics
# of three texts each, so that every text has a nearest neighbour to agree on.
CHECK_TEXTS = (
    "How do I open a file for reading in Python?",
    "Reciprocal rank fusion combines the rankings of several retrievers.",
    "short",
    "The quick brown fox jumps over the lazy dog. " * 40,
    "Ünïcödé, emoji 🚀 and numbers 12345 in one sentence.",
    "def read(path):\n    with open(path) as f:\n        return f.read()",
)
NEIGHBOUR_TEXTS = (
    "How do I read a text file line by line in Python?",
    "Opening files for reading with open() and iterating over the lines.",
    "json.loads parses a JSON string into Python objects.",
    "Bananas are rich in potassium and easy to digest.",
    "An apple a day: fruit as part of a healthy diet.",
    "Oranges and lemons are citrus fruits full of vitamin C.",
)
CHECK_TEXTS = CHECK_TEXTS + NEIGHBOUR_TEXTS
CHECK_VECTORS = Path(__file__).with_name("check_vectors.npz")


def ensure(name: str) -> Path:
    """The derived model's .onnx path, made and checked first if it is not cached."""
    if name not in DERIVED_RECIPES:
        raise ValueError(f"name must be one of {', '.join(map(repr, DERIVED_RECIPES))}, got {name!r}")
    target = derived_path(name)
    if target.exists():
        return target
    if name == FUSED_NAME:
        return _make(name, {"fused": write_fused}, _check_fused)
    fp32 = ensure(FUSED_NAME)
    tokenizer = TextTokenizer(minilm_dir() / "tokenizer.json", max_seq_length(minilm_dir()))
    # The last recipe is for CPUs without VNNI, where 8-bit weights can saturate
    # (quantize.write_int8); where the first passes it is never tried.
    blocks = name == FUSED_INT8_BLOCKS_NAME
    recipes = {"smoothed": lambda out: write_int8(fp32, out, tokenizer, ffn_output_blocks=blocks),
               "not smoothed": lambda out: write_int8(fp32, out, tokenizer, smooth=False,
                                                      ffn_output_blocks=blocks),
               "smoothed, 7-bit weights": lambda out: write_int8(
                   fp32, out, tokenizer, seven_bit_weights=True, ffn_output_blocks=blocks)}
    return _make(name, recipes, lambda path: _check_int8(fp32, path))


def _encode(path: Path) -> np.ndarray:
    """CHECK_TEXTS through the candidate file, all padded to the longest of them
    (so padding and the attention mask are exercised) as one call by count, which
    BiEncoder runs in pieces of its rows where the graph allows it; the same as
    one whole call (a token budget that holds them all); and one text per call:
    the three blocks of CHECK_TEXTS rows, concatenated."""
    n, width = len(CHECK_TEXTS), max_seq_length(minilm_dir())
    by_count = BiEncoder(path, providers="cpu", max_length=width, token_budget=None, batch_size=n)
    whole = BiEncoder(path, providers="cpu", max_length=width, token_budget=n * width, batch_size=n)
    alone = BiEncoder(path, providers="cpu", max_length=width, batch_size=1)
    return np.concatenate([e.encode(CHECK_TEXTS, warn=False) for e in (by_count, whole, alone)])


def _check_fused(path: Path) -> dict:
    reference, source = reference_vectors()
    cosine = float((_encode(path) * np.tile(reference, (3, 1))).sum(axis=1).min())
    if cosine < FUSED_MIN_COSINE:
        return {"passed": False, "why": f"min cosine to PyTorch {cosine:.6f} < {FUSED_MIN_COSINE}"}
    return {"passed": True, "min_cosine_to_pytorch": cosine, "threshold": FUSED_MIN_COSINE,
            "pytorch_reference": source}


def reference_vectors() -> tuple[np.ndarray, str]:
    """PyTorch's embeddings of CHECK_TEXTS and where they came from: the stored
    ones when they were made from these very model files and texts, else
    computed now (needs torch and transformers)."""
    stored = np.load(CHECK_VECTORS)
    if (str(stored["source_sha256"]) == source_digest()
            and str(stored["texts_sha256"]) == _texts_digest()
            and stored["vectors"].shape[:1] == (len(CHECK_TEXTS),)):
        return stored["vectors"].astype(np.float32), f"stored ({CHECK_VECTORS.name})"
    from .export import pytorch_embeddings

    return pytorch_embeddings(minilm_dir(), CHECK_TEXTS), "computed with torch"


def _texts_digest() -> str:
    return hashlib.sha256("\0".join(CHECK_TEXTS).encode()).hexdigest()


def write_check_vectors(path: Path = None) -> Path:
    """Stores PyTorch's embeddings of CHECK_TEXTS with the digest of the model files
    (needs torch and transformers; run once per bundled model version)."""
    from .export import pytorch_embeddings

    path = Path(path or CHECK_VECTORS)
    np.savez(path, texts_sha256=np.array(_texts_digest()), source_sha256=np.array(source_digest()),
             vectors=pytorch_embeddings(minilm_dir(), CHECK_TEXTS))
    return path


def _check_int8(fp32: Path, path: Path) -> dict:
    want, got = _encode(fp32), _encode(path)
    cosine = float((want * got).sum(axis=1).min())
    n = len(CHECK_TEXTS)
    same = all(np.array_equal(_nearest(want[i:i + n]), _nearest(got[i:i + n]))
               for i in range(0, len(want), n))
    if cosine < INT8_MIN_COSINE or not same:
        return {"passed": False, "why": f"min cosine to fp32 {cosine:.6f} (needs {INT8_MIN_COSINE})"
                                        f", same nearest neighbours: {same}"}
    return {"passed": True, "min_cosine_to_fp32": cosine, "threshold": INT8_MIN_COSINE,
            "same_nearest_neighbours": True}


def _nearest(vectors: np.ndarray) -> np.ndarray:
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    return sims.argmax(axis=1)


def _make(name: str, recipes: dict, check) -> Path:
    """Tries each recipe in turn (write to a temporary folder, check), keeps the
    first that passes with its tokenizer and a manifest, renamed into place."""
    target = derived_path(name)
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    for label, write in recipes.items():
        with tempfile.TemporaryDirectory(dir=target.parent.parent) as tmp:
            tmp = Path(tmp)
            details = write(tmp / EXPORT_FILE) or {}
            shutil.copy(minilm_dir() / "tokenizer.json", tmp / "tokenizer.json")
            result = check(tmp / EXPORT_FILE)
            if not result.pop("passed"):
                failures.append(f"{label}: {result['why']}")
                continue
            manifest = {"name": target.parent.name, "recipe": f"{DERIVED_RECIPES[name]} ({label})",
                        "source": str(minilm_dir()), "source_sha256": source_digest(),
                        "max_length": max_seq_length(minilm_dir()), **result, **details}
            (tmp / "derived.json").write_text(json.dumps(manifest, indent=1))
            try:
                os.replace(tmp, target.parent)
            except OSError:  # another process kept the same file first
                if not target.exists():
                    raise
            else:
                tmp.mkdir()  # TemporaryDirectory cleans up the (now empty) name
            return target
    raise RuntimeError(f"{target.parent.name}: no recipe passed its check; not kept ("
                       + "; ".join(failures) + ")")


def write_fused(out: Path) -> dict:
    """Writes the bundled model's fused fp32 graph (bert_graph.py); returns the
    fused operator counts."""
    return write_fused_bert(minilm_dir(), out)
