"""Why the int8 recipe keeps the FFN's second product in fp32: the int8 model
quantised as the recipe does, and with that product quantised too (smoothed and
not), each put through the recipe's own check (derived._check_int8's inputs: the
check texts padded together and one per call; min cosine to the fused fp32 and
the same nearest neighbour for every check text).

    .venv/bin/python bench/encoder_int8_ffn.py

Accuracy only (no timing): it needs no lock.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np


def main() -> None:
    from ragcore.encoders import models
    from ragcore.encoders.build import derived, quantize
    from ragcore.encoders._text import TextTokenizer
    from ragcore.encoders.build.derived import CHECK_TEXTS, INT8_MIN_COSINE, _encode, _nearest
    from ragcore.encoders.models import max_seq_length, minilm_dir

    fp32 = derived.ensure(models.FUSED_NAME)
    tokenizer = TextTokenizer(minilm_dir() / "tokenizer.json", max_seq_length(minilm_dir()))
    want, n = _encode(fp32), len(CHECK_TEXTS)
    print(f"| FFN second product | products int8 / fp32 | min cosine to fp32 | mean cosine | "
          f"same nearest neighbours (needs min cosine >= {INT8_MIN_COSINE} and yes) |\n"
          f"| --- | ---: | ---: | ---: | --- |")
    variants = (("fp32 (the recipe)", True, quantize._is_ffn_output),
                ("int8, smoothed", True, lambda name: False),
                ("int8, not smoothed", False, lambda name: False))
    for label, smooth, kept_fp32 in variants:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "model.onnx"
            shutil.copy(minilm_dir() / "tokenizer.json", Path(folder) / "tokenizer.json")
            with mock.patch.object(quantize, "_is_ffn_output", kept_fp32):
                info = quantize.write_int8(fp32, path, tokenizer, smooth=smooth)
            got = _encode(path)
        cosine = (want * got).sum(axis=1)
        same = np.array_equal(_nearest(want[:n]), _nearest(got[:n]))
        print(f"| {label} | {info['products_int8']} / {info['products_fp32']} | {cosine.min():.4f} | "
              f"{cosine.mean():.4f} | {'yes' if same else 'no'} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
