"""The int8 graph's calls by count (32 texts, token_budget=None, 1 thread) whole, as
BiEncoder ran them before issue 19d (its cut turned off), against the same padded
calls cut into pieces of 1,024 padded tokens as BiEncoder runs them now, as the
fp32 graph's are. The int8 graph's rows interact through the
per-call activation scales of its dynamic quantisation, so the pieces give other
bits: the min cosine between the two is printed next to the CPU times (median of
interleaved repeats, calling thread).

    .venv/bin/python bench/encoder_int8_pieces.py [--texts 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def main() -> None:
    from ragcore.cli.datasets import stdlib_docs
    from ragcore.encoders import BiEncoder, models
    from ragcore.encoders.build import derived

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    path = derived.ensure(models.FUSED_INT8_NAME)
    texts = [t for t in stdlib_docs(max_docs=400, seed=1).texts() if t.strip()][:args.texts]
    engines = {name: BiEncoder(path, providers="cpu", threads=1, token_budget=None, batch_size=32)
               for name in ("whole", "pieces")}
    engines["whole"]._rows_scaled_per_call = False
    cpu, vectors = {name: [] for name in engines}, {}
    for _ in range(args.repeats):
        for name, encoder in engines.items():
            start = time.thread_time()
            vectors[name] = encoder.encode(texts, warn=False)
            cpu[name].append(time.thread_time() - start)
    cosine = float((vectors["whole"] * vectors["pieces"]).sum(axis=1).min())
    whole, pieces = (float(np.median(cpu[n])) for n in ("whole", "pieces"))
    print(f"{len(texts)} texts: whole {whole:.2f} CPU-s, pieces {pieces:.2f} CPU-s "
          f"({whole / pieces:.2f}x), min cosine whole vs pieces {cosine:.5f}, "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
