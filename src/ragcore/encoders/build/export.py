"""ONNX exports of the bundled model (fp32, fp16), each checked against PyTorch.

``ragcore models export [--precision fp16]`` runs ``export``; it needs torch and transformers
once (the ``export`` extra). ``onnx_export`` and ``output_module`` export other transformer
models the same way (README, "Encoders").
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path

from ..bi_encoder import BiEncoder
from ..models import (EXPORT_FILE, FP16_NAME, FP32_NAME, cache_dir, check_precision,
                     max_seq_length, minilm_dir)

EXPORT_PRECISIONS = ("fp32", "fp16")
EXPORT_MIN_COSINE = 0.9999
# fp16 rounds every weight and (on GPUs) every activation: 1e-3 leaves room for
# fp16 arithmetic.
FP16_MIN_COSINE = 0.999
_CHECK_TEXTS = (
    "How do I open a file for reading in Python?",
    "Reciprocal rank fusion combines the rankings of several retrievers.",
    "short",
    "The quick brown fox jumps over the lazy dog. " * 40,  # longer than 256 tokens
    "Ünïcödé, emoji 🚀 and numbers 12345 in one sentence.",
)


def export(cache: Path | None = None, force: bool = False, precision: str = "fp32") -> Path:
    """Exports the bundled model to ONNX, checks it, and keeps it in the cache.

    precision="fp32": torch.onnx.export with dynamo=True (the legacy exporter
    gave wrong outputs for this model). precision="fp16": the fp32 export
    (made first if missing) converted by onnxruntime's float16 converter with
    keep_io_types=True, so inputs stay int64 ids and the output float32.
    Either is compared with the PyTorch model on varied texts, including one
    longer than max_length, and kept only if every embedding has cosine
    >= EXPORT_MIN_COSINE (fp32) or FP16_MIN_COSINE (fp16) with PyTorch's.
    force=True redoes the requested precision only. Returns the .onnx path.
    """
    if check_precision(precision, EXPORT_PRECISIONS) == "fp16":
        fp32 = export(cache, force=False)
        return _export_checked((cache or cache_dir()) / FP16_NAME, force, FP16_MIN_COSINE,
                               lambda out: to_fp16(fp32, out))
    return _export_checked((cache or cache_dir()) / FP32_NAME, force, EXPORT_MIN_COSINE,
                           lambda out: _export_transformer(minilm_dir(), out))


def _export_checked(target: Path, force: bool, min_cosine: float, write_onnx) -> Path:
    """Writes target/model.onnx with write_onnx(path) (which may return manifest
    entries), checks it against PyTorch, and only then moves it into place."""
    import shutil

    if (target / EXPORT_FILE).exists() and not force:
        return target / EXPORT_FILE
    model_dir = minilm_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp = Path(tmp)
        details = write_onnx(tmp / EXPORT_FILE) or {}
        shutil.copy(model_dir / "tokenizer.json", tmp / "tokenizer.json")
        cosine = _min_cosine_to_pytorch(model_dir, tmp)
        if cosine < min_cosine:
            raise RuntimeError(f"the ONNX export ({target.name}) disagrees with PyTorch (min "
                               f"cosine {cosine:.6f} < {min_cosine}); not kept")
        manifest = {"source": str(model_dir), "max_length": max_seq_length(model_dir),
                    "min_cosine_to_pytorch": cosine, "threshold": min_cosine, **details}
        (tmp / "export.json").write_text(json.dumps(manifest, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        tmp.mkdir()  # TemporaryDirectory cleans up the (now empty) name
    return target / EXPORT_FILE


def to_fp16(src: Path, out: Path) -> dict:
    """Converts an fp32 ONNX model to fp16 weights and activations, with its inputs
    and outputs kept as they are (Casts at the edges). Needs only onnx and
    onnxruntime (whose float16 converter this is), not torch. Only the ops that
    converter keeps in fp32 by default stay there; LayerNormalization and Softmax
    go to fp16 too (onnxruntime's CUDA LayerNormalization keeps its mean and
    variance in fp32 for fp16 data; bench/gpu_encoders.py measures the result on
    a GPU). On CPU, onnxruntime runs most fp16 ops in fp32 behind Casts, slower
    than fp32. Returns what to record in export.json."""
    try:
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16
    except ImportError:
        raise ModuleNotFoundError(
            "the fp16 export needs onnxruntime's float16 converter "
            "(onnxruntime.transformers.float16) and onnx: pip install onnxruntime onnx") from None
    model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
    onnx.save(model, str(out))
    return {"precision": "fp16", "converted_from": str(src),
            "converter": "onnxruntime.transformers.float16, keep_io_types=True"}


def _export_transformer(model_dir: Path, out: Path) -> None:
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    onnx_export(output_module(model, "last_hidden_state"), out, "last_hidden_state")


def output_module(model, output: str):
    """model as a torch module taking (input_ids, attention_mask, token_type_ids)
    positionally and returning one of its outputs (e.g. "last_hidden_state",
    "logits"): the form onnx_export exports."""
    import torch

    class Output(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return getattr(self.model(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids), output)

    return Output()


def onnx_export(module, out: Path, output_name: str) -> None:
    """Exports a torch module taking (input_ids, attention_mask, token_type_ids) to
    ONNX with dynamic batch and sequence axes (torch.onnx.export, dynamo=True); makes the
    folder of out if it is missing."""
    import torch

    Path(out).parent.mkdir(parents=True, exist_ok=True)
    ids = torch.randint(1000, 2000, (2, 16))
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
    axes = {0: batch, 1: seq}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's progress and deprecation notes
        torch.onnx.export(
            module.eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out),
            dynamo=True, input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=[output_name], external_data=False, verbose=False,
            dynamic_shapes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes})


def pytorch_embeddings(model_dir: Path, texts) -> "np.ndarray":  # noqa: F821
    """sentence-transformers-equivalent embeddings computed with transformers + torch."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    enc = tok(list(texts), padding=True, truncation=True, max_length=max_seq_length(model_dir),
              return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=1).numpy().astype(np.float32)


def _min_cosine_to_pytorch(model_dir: Path, exported: Path) -> float:
    onnx_vectors = BiEncoder(exported / EXPORT_FILE, providers="cpu",
                             max_length=max_seq_length(model_dir)).encode(_CHECK_TEXTS, warn=False)
    torch_vectors = pytorch_embeddings(model_dir, _CHECK_TEXTS)
    return float((onnx_vectors * torch_vectors).sum(axis=1).min())
