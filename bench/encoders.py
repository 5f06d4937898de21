"""Encoder throughput: ragcore's ONNX BiEncoder (the fused fp32 graph written from
the bundled safetensors weights, its int8 quantisation, and the bundled int8 file
that a user without the derived files had before) against sentence-transformers,
and the ONNX CrossEncoder against transformers, in one run; plus the demo's index
build and query encoding.

    .venv/bin/python bench/encoders.py [--texts 256] [--json F] [--markdown F]
        [--batches 1 32] [--threads 1 2] [--no-cross] [--fp16] [--before]
        [--demo-chunks 768] [--kept] [--engines fp32_fused int8_fused ...]

Texts: paragraphs of the running Python's standard library docstrings (local,
varied lengths, some over 256 tokens), in a seeded random order. What each row
measures (every system encodes the same texts to the same vectors):

- ``b`` (``--batches``): the texts handed over b per call, in their order, as a
  user with batches of b does: ``BiEncoder.encode(texts[i:i + b])`` with its
  default batching (sorted by length, sub-batches of at most 256 padded tokens
  inside the call; batch_size=b) against ``SentenceTransformer.encode(texts[i:i + b],
  batch_size=b)`` (sorted by length, one padded forward pass of b texts).
- ``b by count``: every text in one call, batch_size=b and token_budget=None:
  model calls of b texts each, padded to their longest, in both engines (the
  row the issue's table measured at 32); for the fused fp32 graph BiEncoder cuts
  each padded call into pieces of its rows at the same width (the same padded
  work and bits, see BiEncoder's token_budget), and so for its int8 quantisation
  (other bits: activation scales per piece); ``int8_whole`` keeps the fused int8
  graph's calls whole as before (timed in this row only: elsewhere it is int8 fused).
- ``budget``: every text in one call with BiEncoder's default batching (at most
  32 texts and 256 padded tokens per model call) against sentence-transformers
  at batch_size=32.

Texts per second from the median of interleaved repeats (all systems of a cell
take turns, so a slow phase of this shared VM hits them alike); at 1 thread also
from the median CPU time of the calling thread (onnxruntime and torch then
compute in it), which other processes' load disturbs far less. Threads:
onnxruntime's intra-op threads for ragcore, torch's for the peers. Embeddings
are compared in the same run (min cosine to sentence-transformers; int8 to fp32
with nearest-neighbour agreement). --before adds the dynamo fp32 export;
--kept the fused fp32 and int8 graphs with IEEE subnormals (RAGCORE_KEEP_DENORMALS=1
while their sessions load: ragcore before its CPU runs flushed them); --engines
keeps only the ragcore engines named.

Demo build: the demo's chunks (stdlib_docs(3000), Chunker(200, 40)), a seeded
sample of --demo-chunks of them, encoded 256 at a time as the demo's embedding
cache does, by the demo's encoder before the fused graph (the bundled int8 file,
64 texts per call by count, one call at a time), by default_encoder() with its
model calls one at a time on onnxruntime's intra-op threads (the build before
sub-batches ran side by side), by default_encoder() now and by
default_encoder(precision="auto"), at every core; query
encode p50 over 100 demo questions one at a time. The build is timed by wall
clock and by the process's CPU time (onnxruntime's pool threads included).
The cross-encoder is a tiny random BERT (no pre-trained cross-encoder ships in
an installable package): the comparison is of runtimes.
"""

from __future__ import annotations

import _common  # noqa: F401  (first: re-executes without OPENBLAS_CORETYPE)

import argparse
import ast
import sys
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from _common import LoadMeter, environment, fmt_num, markdown_table, time_calls, write_json, write_text
from encoder_build import denormals_kept

BATCHES = (1, 32)
THREADS = (1, 2)
BUDGET = 256
DEMO_STEP = 256  # the embedding cache's encode step (cli/embedding_cache.py)


def stdlib_paragraphs(count: int) -> list[str]:
    """Docstring paragraphs of standard-library modules, longest ones kept whole."""
    out = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    out += [p.strip() for p in doc.split("\n\n") if len(p.strip()) > 20]
    rng = np.random.default_rng(0)
    return [out[i] for i in rng.choice(len(out), size=min(count, len(out)), replace=False)]


def ragcore_encoders(threads: int, fp16: bool = False, before: bool = False, kept: bool = False,
                     only=None) -> tuple[dict, dict]:
    """{engine: BiEncoder} and {engine: why it is missing}; fp16: the fp16 export
    too (onnxruntime runs most fp16 ops in fp32 behind Casts on a CPU); before:
    the dynamo fp32 export too. At threads > 1, also the fused fp32 graph with its
    model calls one at a time on onnxruntime's intra-op threads (the engines'
    default runs a call's sub-batches side by side, one core each). kept: the fused
    graphs with IEEE subnormals too; only: the engine names to keep (None: all)."""
    import ragcore
    from ragcore.encoders import models
    from ragcore.encoders.build import derived, export

    engines, missing = {}, {}
    paths = {"fp32_fused": lambda: derived.ensure(models.FUSED_NAME),
             "int8_fused": lambda: derived.ensure(models.FUSED_INT8_NAME),
             "int8_bundled": lambda: models.INT8_NAME}
    if before:
        paths["fp32_before"] = export.export
    if fp16:
        paths["fp16"] = lambda: export.export(precision="fp16")
    options = {name: {} for name in paths}
    if threads > 1:
        paths["fp32_intra_op"] = paths["fp32_fused"]
        options["fp32_intra_op"] = {"parallel_batches": False}
    paths["int8_whole"] = paths["int8_fused"]
    options["int8_whole"] = {}
    if kept:
        paths["fp32_kept"], paths["int8_kept"] = paths["fp32_fused"], paths["int8_fused"]
        options["fp32_kept"] = options["int8_kept"] = {}
    for name, path in paths.items():
        if only is not None and name not in only:
            continue

        def make(path=path, name=name):
            return ragcore.BiEncoder(path(), providers="cpu", threads=threads, max_length=256,
                                     **options[name])

        try:
            engines[name] = denormals_kept(make, name) if name.endswith("_kept") else make()
        except RuntimeError as err:  # a derived file that missed its check
            missing[name] = str(err)
    if "int8_whole" in engines:  # calls by count whole, as before they were cut
        engines["int8_whole"]._rows_scaled_per_call = False
    return engines, missing


def nearest(vectors: np.ndarray) -> np.ndarray:
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    return sims.argmax(axis=1)


def cpu_timed(fn, log: list, clock=time.thread_time):
    """fn, recording each call's CPU time (by default the calling thread's) in log."""
    def timed():
        t0 = clock()
        result = fn()
        log.append(clock() - t0)
        return result
    return timed


def in_calls(encode, texts, size: int):
    """Encodes texts handed over `size` per call, in order."""
    return np.concatenate([encode(texts[s:s + size]) for s in range(0, len(texts), size)])


def set_batching(engines: dict, batch_size: int, token_budget) -> None:
    for enc in engines.values():
        enc.batch_size, enc.token_budget = batch_size, token_budget


BY_COUNT_ONLY = ("int8_whole",)


def cell_fns(kind: str, size: int, texts, engines: dict, st_model) -> dict:
    """The functions a row times: see the module docstring for each kind."""
    fns = {}
    if kind != "by count":  # the same calls as int8 fused there
        engines = {k: e for k, e in engines.items() if k not in BY_COUNT_ONLY}
    if kind == "calls":
        set_batching(engines, size, BUDGET)
        for name, enc in engines.items():
            fns[name] = lambda e=enc: in_calls(lambda t: e.encode(t, warn=False), texts, size)
        fns["sentence_transformers"] = lambda: in_calls(
            lambda t: st_model.encode(t, batch_size=size), texts, size)
    elif kind == "by count":
        set_batching(engines, size, None)
        for name, enc in engines.items():
            fns[name] = lambda e=enc: e.encode(texts, warn=False)
        fns["sentence_transformers"] = lambda: st_model.encode(texts, batch_size=size)
    else:  # budget
        set_batching(engines, 32, BUDGET)
        for name, enc in engines.items():
            fns[name] = lambda e=enc: e.encode(texts, warn=False)
        fns["sentence_transformers"] = lambda: st_model.encode(texts, batch_size=32)
    return fns


def bi_encoder_rows(texts, args, st_model) -> tuple[list, dict]:
    reference = st_model.encode(texts, normalize_embeddings=True, batch_size=32)
    agreement, rows = {}, []
    cells = [("calls", b) for b in args.batches] + [("by count", b) for b in args.batches if b > 1]
    cells.append(("budget", 32))
    for threads in args.threads:
        torch.set_num_threads(threads)
        engines, missing = ragcore_encoders(threads, args.fp16, args.before, args.kept, args.engines)
        agreement["missing"] = missing
        vectors = {name: enc.encode(texts, warn=False) for name, enc in engines.items()}
        for name, v in vectors.items():
            agreement[name] = float((v * reference).sum(axis=1).min())
        for pair, (x, y) in {"int8_to_fp32": ("fp32_fused", "int8_fused"),
                             "fp32_flushed_to_kept": ("fp32_kept", "fp32_fused"),
                             "int8_flushed_to_kept": ("int8_kept", "int8_fused")}.items():
            if x in vectors and y in vectors:
                a, b = vectors[x], vectors[y]
                cos = (a * b).sum(axis=1)
                agreement[pair] = {"min": float(cos.min()), "mean": float(cos.mean()),
                                   "same_nearest": float((nearest(a) == nearest(b)).mean())}
        for kind, size in cells:
            cpu = {}
            fns = {name: cpu_timed(fn, cpu.setdefault(name, []))
                   for name, fn in cell_fns(kind, size, texts, engines, st_model).items()}
            meter = LoadMeter()
            timings, _ = time_calls(fns, rounds=3, min_repeats=2, target_s=1.0, slow_budget_s=6.0)
            tps = {k: len(texts) / t.median for k, t in timings.items()}
            row = {"threads": threads, "batch": size if kind == "calls" else
                   (f"{size} by count" if kind == "by count" else "budget"),
                   "texts_per_s": tps,
                   "vs_st": {k: v / tps["sentence_transformers"] for k, v in tps.items()},
                   "load": meter.report()}
            if threads == 1:  # the work runs in the calling thread: its CPU time is the cost
                cps = {k: len(texts) / float(np.median(v[1:] or v)) for k, v in cpu.items()}
                row["cpu_texts_per_s"] = cps
                row["cpu_vs_st"] = {k: v / cps["sentence_transformers"] for k, v in cps.items()}
            rows.append(row)
            print(rows[-1], flush=True)
    return rows, agreement


def demo_rows(args) -> dict:
    """The demo's index build (chunks/s) and query encoding (p50 ms), before and now."""
    import ragcore
    from ragcore.cli.datasets import stdlib_docs
    from ragcore.encoders import default_encoder, models
    from ragcore.rag.chunking import Chunker

    engines = {"before": ragcore.BiEncoder(models.INT8_NAME, batch_size=64, token_budget=None,
                                           parallel_batches=False),
               "one call at a time": default_encoder(parallel_batches=False),
               "now": default_encoder(), "auto": default_encoder(precision="auto")}
    if args.kept:
        engines["kept"] = denormals_kept(default_encoder, "kept")
    now = engines["now"]
    data = stdlib_docs(max_docs=3000, seed=0)
    chunks = Chunker(now, chunk_size=200, overlap=40).chunk_documents(
        (d.doc_id, d.text, d.metadata) for d in data.documents)
    texts = [c.text for c in chunks]
    rng = np.random.default_rng(0)
    sample = [texts[i] for i in sorted(rng.choice(len(texts), min(args.demo_chunks, len(texts)),
                                                  replace=False))]

    def build(enc):
        return [enc.encode(sample[s:s + DEMO_STEP], warn=False) for s in range(0, len(sample), DEMO_STEP)]

    meter = LoadMeter()
    cpu = {name: [] for name in engines}  # process CPU time: onnxruntime's pool threads too
    timings, _ = time_calls({name: cpu_timed(lambda e=enc: build(e), cpu[name], time.process_time)
                             for name, enc in engines.items()},
                            rounds=3, min_repeats=2, target_s=1.0, slow_budget_s=20.0)
    questions = data.questions[:100]
    latency = {name: [] for name in engines}
    for q in questions:  # interleaved, one question at a time
        for name, enc in engines.items():
            t0 = time.perf_counter()
            enc.encode([q], warn=False)
            latency[name].append((time.perf_counter() - t0) * 1e3)
    cps = {k: len(sample) / t.median for k, t in timings.items()}
    cpu_cps = {k: len(sample) / float(np.median(v[1:] or v)) for k, v in cpu.items()}
    return {"chunks_total": len(texts), "chunks_timed": len(sample), "chunks_per_s": cps,
            "chunks_per_cpu_s": cpu_cps,
            "cpu_build_speedup": {k: cpu_cps[k] / cpu_cps["before"] for k in cpu_cps},
            "build_speedup": {k: cps[k] / cps["before"] for k in cps},
            "query_p50_ms": {k: float(np.percentile(v, 50)) for k, v in latency.items()},
            "models": {k: f"{Path(e.model.path).parent.name} (batch_size {e.batch_size})"
                       for k, e in engines.items()},
            "load": meter.report()}


def cross_encoder_rows(texts, args) -> list:
    import transformers

    import ragcore
    from ragcore.encoders import models
    from ragcore.encoders.build import export
    config = transformers.BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=512, num_labels=1)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).eval()

    tmp = Path(tempfile.mkdtemp())
    export.onnx_export(export.output_module(model, "logits"), tmp / "model.onnx", "logits")
    (tmp / "tokenizer.json").write_bytes((models.minilm_dir() / "tokenizer.json").read_bytes())
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(models.minilm_dir()), local_files_only=True)
    query, passages = "how do I read a file", texts
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        ce = ragcore.CrossEncoder(tmp / "model.onnx", providers="cpu", max_length=256,
                                  batch_size=32, threads=threads)

        def transformers_scores():
            out = []
            for s in range(0, len(passages), 32):
                chunk = passages[s:s + 32]
                enc = hf_tok([query] * len(chunk), chunk, padding=True, truncation="only_second",
                             max_length=256, return_tensors="pt")
                with torch.no_grad():
                    out.append(model(**enc).logits[:, 0])
            return torch.cat(out).numpy()

        timings, results = time_calls({"onnx": lambda: ce.score(query, passages),
                                       "transformers": transformers_scores},
                                      rounds=3, min_repeats=2, target_s=1.0)
        pps = {k: len(passages) / t.median for k, t in timings.items()}
        diff = float(np.abs(results["onnx"] - results["transformers"]).max())
        rows.append({"threads": threads, "batch": 32, "pairs_per_s": pps,
                     "onnx_vs_transformers": pps["onnx"] / pps["transformers"],
                     "max_abs_score_diff": diff})
        print(rows[-1], flush=True)
    return rows


ENGINES = (("fp32_fused", "fp32 fused"), ("fp32_intra_op", "fp32 fused, calls one at a time"),
           ("fp32_kept", "fp32 fused, denormals kept"), ("int8_fused", "int8 fused"),
           ("int8_whole", "int8 fused, calls by count whole"),
           ("int8_kept", "int8 fused, denormals kept"),
           ("fp32_before", "fp32 before"), ("int8_bundled", "int8 bundled"), ("fp16", "fp16 (CPU)"))


def ratio(ratios: dict, key: str) -> str:
    return f"{ratios[key]:.2f}x" if key in ratios else ""


def markdown(report) -> str:
    present = [(k, label) for k, label in ENGINES
               if any(k in r["texts_per_s"] for r in report["bi"])]  # some only at threads > 1
    cpu = any("cpu_texts_per_s" in r for r in report["bi"])
    headers = ["threads", "batch", *[f"{label} texts/s" for _, label in present],
               "sentence-transformers texts/s", *[f"{label} / ST" for _, label in present],
               *([f"{label} / ST (CPU time)" for _, label in present] if cpu else []),
               "other load (cores)"]
    bi = markdown_table(headers, [
        [r["threads"], r["batch"], *[fmt_num(r["texts_per_s"].get(k)) for k, _ in present],
         fmt_num(r["texts_per_s"]["sentence_transformers"]),
         *[ratio(r["vs_st"], k) for k, _ in present],
         *([ratio(r.get("cpu_vs_st", {}), k) for k, _ in present] if cpu else []),
         f"{r['load']['other_processes_cores'] + r['load']['steal_cores']:.2f}"] for r in report["bi"]])
    agree = report["agreement_min_cosine_to_st"]
    text = (f"{report['n_texts']} stdlib docstring paragraphs. Minimum cosine to sentence-transformers: "
            + ", ".join(f"{label} {agree[k]:.6f}" for k, label in present if k in agree) + ".")
    for pair, what in (("int8_to_fp32", "int8 fused to fp32 fused"),
                       ("fp32_flushed_to_kept", "fp32 fused, flushed to kept"),
                       ("int8_flushed_to_kept", "int8 fused, flushed to kept")):
        if pair in agree:
            a = agree[pair]
            text += (f" {what}: min cosine {a['min']:.7f}, mean {a['mean']:.7f}, "
                     f"same nearest neighbour for {100 * a['same_nearest']:.1f}% of the texts.")
    for name, why in agree.get("missing", {}).items():
        text += f" {name} not measured: {why}."
    text += f"\n\n{bi}\n"
    demo = report.get("demo")
    if demo:
        rows = [[name, demo["models"][name], f"{demo['chunks_per_s'][name]:.1f}",
                 f"{demo['build_speedup'][name]:.2f}x", f"{demo['chunks_per_cpu_s'][name]:.1f}",
                 f"{demo['cpu_build_speedup'][name]:.2f}x", f"{demo['query_p50_ms'][name]:.2f}"]
                for name in demo["chunks_per_s"]]
        text += (f"\nDemo index build ({demo['chunks_timed']} of its {demo['chunks_total']} chunks, "
                 f"256 per encode call, default threads) and query encode p50 (100 questions, one "
                 f"per call); other load {demo['load']['other_processes_cores'] + demo['load']['steal_cores']:.2f} cores:\n\n"
                 + markdown_table(["encoder", "model (batch_size)", "chunks/s", "vs before",
                                   "chunks per CPU-s (process)", "vs before (CPU)",
                                   "query encode p50 ms"], rows) + "\n")
    if report["cross"]:
        ce = markdown_table(
            ["threads", "batch", "ONNX pairs/s", "transformers pairs/s", "ONNX / transformers",
             "max |score diff|"],
            [[r["threads"], r["batch"], fmt_num(r["pairs_per_s"]["onnx"]),
              fmt_num(r["pairs_per_s"]["transformers"]), f"{r['onnx_vs_transformers']:.2f}x",
              f"{r['max_abs_score_diff']:.1e}"] for r in report["cross"]])
        text += f"\nCross-encoder (tiny random BERT, 2 layers x 128):\n\n{ce}\n"
    return text


def main() -> None:
    import sentence_transformers as st

    from ragcore.encoders import models

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--threads", type=int, nargs="+", default=list(THREADS))
    parser.add_argument("--no-cross", action="store_true", help="bi-encoders only")
    parser.add_argument("--fp16", action="store_true", help="the fp16 export too")
    parser.add_argument("--before", action="store_true", help="the dynamo fp32 export too")
    parser.add_argument("--kept", action="store_true",
                        help="the fused graphs with IEEE subnormals too (before the flush)")
    parser.add_argument("--engines", nargs="+", help="only these ragcore engines (default: all)")
    parser.add_argument("--demo-chunks", type=int, default=768,
                        help="demo chunks timed for the index build (0: skip the demo part)")
    args = parser.parse_args()
    texts = stdlib_paragraphs(args.texts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st_model = st.SentenceTransformer(str(models.minilm_dir()), device="cpu")
    bi, agreement = bi_encoder_rows(texts, args, st_model)
    report = {"environment": environment(), "n_texts": len(texts), "bi": bi,
              "agreement_min_cosine_to_st": agreement,
              "demo": demo_rows(args) if args.demo_chunks else None,
              "cross": [] if args.no_cross else cross_encoder_rows(texts, args)}
    if args.json:
        write_json(Path(args.json), report)
    text = markdown(report)
    if args.markdown:
        write_text(Path(args.markdown), text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
