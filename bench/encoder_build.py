"""The demo's index build on a cold embedding cache, by wall time: the build step
of ``make demo`` (stdlib_docs(3000, seed 0), Chunker(200, 40), the embedding
cache encoding 256 chunks per call, then the dense and BM25 indexes), once per
encoder and round, interleaved, each time into an empty cache directory.

    .venv/bin/python bench/encoder_build.py [--rounds 2] [--engines before sequential now]
        [--docs 3000] [--json F]

Engines: ``before``: the demo's encoder before the fused graph (the bundled int8
file, 64 texts per model call by count, one call at a time: the issue's 56
chunks/s); ``sequential``: the fused fp32 graph, 256-token sub-batches one at a
time on onnxruntime's intra-op threads (the build before sub-batches ran side
by side); ``now``: ``default_encoder()``, what ``make demo`` runs (sub-batches
side by side, one core each); ``skip_ln``: ``now`` with onnxruntime's
SkipLayerNormalization fusion left on (the build before ragcore's CPU sessions
turned it off); ``kept``: ``now`` with IEEE subnormals (RAGCORE_KEEP_DENORMALS=1: the
build before ragcore's CPU runs flushed them); ``int8``: ``default_encoder(precision="int8")``;
``calls256``: ``now`` on the build path before one encode call per corpus (each
document tokenized for chunking on its own, the embedding cache encoding 256 chunks
per call).
Wall time is the figure the issue sets its target on; the process's CPU time
(every thread) is reported next to it.
"""

from __future__ import annotations

import _common  # noqa: F401  (first: re-executes without OPENBLAS_CORETYPE)

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import LoadMeter, environment, foreign_cores, markdown_table, write_json

ENGINES = ("before", "sequential", "skip_ln", "kept", "now", "int8", "calls256")
OLD_BUILD_PATH = ("calls256",)


def with_one_core_session(make, name: str):
    """make() and a first bulk encode, so that the intra-op-1 session of side-by-side
    calls (loaded at first use) is loaded too, in the same setting as the main one."""
    encoder = make()
    encoder.encode(["two texts", "load the one-core session"] * 200, warn=False)
    if encoder._one_core_model is None and encoder._workers() > 1:
        raise RuntimeError(f"{name}: the one-core session was not loaded")
    return encoder


def denormals_kept(make, name: str):
    """with_one_core_session with RAGCORE_KEEP_DENORMALS=1 while the sessions load:
    every run of the encoder keeps IEEE subnormals."""
    from unittest import mock

    from ragcore.encoders._denormals import KEEP_DENORMALS_ENV

    with mock.patch.dict(os.environ, {KEEP_DENORMALS_ENV: "1"}):
        encoder = with_one_core_session(make, name)
    if encoder.model.flush_denormals:
        raise RuntimeError(f"{name}: the session flushes denormals")
    return encoder


def make_encoder(name: str):
    import ragcore
    from ragcore.encoders import default_encoder, models

    if name == "before":
        return ragcore.BiEncoder(models.INT8_NAME, batch_size=64, token_budget=None,
                                 parallel_batches=False)
    if name == "sequential":
        return default_encoder(parallel_batches=False)
    if name == "int8":
        return default_encoder(precision="int8")
    if name == "skip_ln":
        from unittest import mock

        from ragcore.encoders import _onnx

        with mock.patch.object(_onnx, "disabled_fusions", lambda requested: []):
            return with_one_core_session(default_encoder, name)
    if name == "kept":
        return denormals_kept(default_encoder, name)
    return with_one_core_session(default_encoder, name)


class _ChunkerOneDocumentAtATime:
    """The build's chunker before chunk_documents tokenized every document in one call."""

    def __init__(self, chunker):
        self.chunker = chunker

    def chunk_documents(self, documents):
        return [c for doc_id, text, meta in documents for c in self.chunker.chunk(text, doc_id, meta)]


class _EncoderBy256:
    """The encoder as the embedding cache called it before: 256 texts per encode call."""

    def __init__(self, encoder):
        self.encoder = encoder

    def __getattr__(self, name):
        return getattr(self.encoder, name)

    def encode(self, texts, warn=True, progress=None):
        return np.concatenate([self.encoder.encode(texts[i:i + 256], warn=warn)
                               for i in range(0, len(texts), 256)])


def build(encoder, data, cache_root: Path, old_path: bool = False) -> tuple[int, float, float, np.ndarray]:
    """(chunks, wall s, process CPU s, the chunks' vectors) of one demo build into an empty cache."""
    from ragcore.cli.embedding_cache import EmbeddingCache
    from ragcore.rag.chunking import Chunker
    from ragcore.rag.pipeline import HybridRetriever

    chunker = Chunker(encoder, chunk_size=200, overlap=40)
    if old_path:
        encoder, chunker = _EncoderBy256(encoder), _ChunkerOneDocumentAtATime(chunker)
    cache = EmbeddingCache(encoder, directory=tempfile.mkdtemp(dir=cache_root), show_progress=False)
    vectors = []

    def embed(texts):
        vectors.append(cache.encode(texts))
        return vectors[-1]
    t0, c0 = time.perf_counter(), time.process_time()
    retriever = HybridRetriever.from_texts(
        data.texts(), doc_ids=[d.doc_id for d in data.documents],
        metadata=[d.metadata for d in data.documents], encoder=encoder,
        chunker=chunker, embed=embed, k0=50, k=10)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if cache.hits:
        raise RuntimeError(f"the cache was not cold: {cache.hits} hits")
    return len(retriever.chunks), wall, cpu, vectors[0]


def main() -> None:
    from ragcore.cli.datasets import stdlib_docs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=["before", "sequential", "now"])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--json")
    args = parser.parse_args()
    data = stdlib_docs(max_docs=args.docs, seed=0)
    encoders = {name: make_encoder(name) for name in args.engines}
    walls = {name: [] for name in encoders}
    cpus = {name: [] for name in encoders}
    chunks, loads, same_as = 0, [], {}
    with tempfile.TemporaryDirectory() as root:
        for r in range(args.rounds):
            for name, encoder in encoders.items():
                meter = LoadMeter()
                chunks, wall, cpu, vectors = build(encoder, data, Path(root), name in OLD_BUILD_PATH)
                if name in ("now", "calls256"):
                    same_as.setdefault("now vs calls256", []).append(vectors)
                loads.append(foreign_cores(meter.report()))
                walls[name].append(wall)
                cpus[name].append(cpu)
                print(f"round {r} {name}: {chunks} chunks in {wall:.1f} s ({chunks / wall:.1f}/s), "
                      f"CPU {cpu:.1f} s, other load {loads[-1]:.2f} cores", flush=True)
    for pair, runs in same_as.items():
        if len(runs) > 1:
            print(f"{pair}: vectors bit-identical in every round: "
                  f"{all(np.array_equal(runs[0], v) for v in runs[1:])}")
    per_s = {k: chunks / float(np.median(v)) for k, v in walls.items()}
    base = per_s.get("before") or per_s.get("calls256")
    rows = [[name, f"{float(np.median(walls[name])):.1f}", f"{per_s[name]:.1f}",
             f"{per_s[name] / base:.2f}x" if base else "", f"{per_s[name] / 56:.2f}x",
             f"{chunks / float(np.median(cpus[name])):.1f}"] for name in encoders]
    table = markdown_table(["encoder", "build s (median)", "chunks/s", "vs before / calls256 (same run)",
                            "vs the issue's 56 chunks/s", "chunks per CPU-s"], rows)
    print(f"\n{chunks} chunks, {args.rounds} rounds, load average {os.getloadavg()[0]:.2f}, "
          f"other load {min(loads):.2f}-{max(loads):.2f} cores\n\n{table}")
    if args.json:
        write_json(Path(args.json), {"environment": environment(), "chunks": chunks,
                                     "wall_s": walls, "cpu_s": cpus, "chunks_per_s": per_s,
                                     "other_load_cores": loads})


if __name__ == "__main__":
    sys.exit(main())
