"""Attention at the by-count shapes: onnxruntime's Attention operator against
attention in standard operators (bert_graph's attention="standard") and the
derived int8 graph (QAttention), each with and without denormals flushed to zero
on the thread that runs the session.

The texts are bench/encoders.py's stdlib paragraphs in calls of 32 padded to the
longest ([32, L], L up to 256), run whole or in pieces of 4 rows as BiEncoder
runs them. Why flushing matters: masked scores (-10000) make onnxruntime's
softmax exp produce denormals, and each costs a microcode assist; onnxruntime's
session.set_denormal_as_zero sets the flag on its pool threads only, not on the
calling thread, which does all the work at 1 intra-op thread; ragcore's
flushed_denormals() (the _core FTZ/DAZ scope that OnnxModel.run uses) sets it on
the calling thread. The int8 graph's calls stay whole (--int8-rows 0), as
BiEncoder runs them: its activations are quantised with one scale per call.

    .venv/bin/python bench/encoder_attention.py check|profile|time [--texts 256]
        [--rounds 3] [--threads 1] [--rows 4] [--graphs contrib standard int8]
        [--int8-rows 0]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from encoders import stdlib_paragraphs
from ragcore.encoders import models
from ragcore.encoders.build import bert_graph, derived
from ragcore.encoders._denormals import flushed_denormals, thread_state_kept
from ragcore.encoders._onnx import CPU_PROVIDER, disabled_fusions, session_options
from ragcore.encoders._text import TextTokenizer


def session(path: str, threads: int, flush: bool, profile_prefix: str | None = None):
    options = session_options(threads, denormals_as_zero=flush)  # the pool threads
    if profile_prefix:
        options.enable_profiling, options.profile_file_prefix = True, profile_prefix
    with thread_state_kept():
        return ort.InferenceSession(path, options, providers=[CPU_PROVIDER],
                                    disabled_optimizers=disabled_fusions([CPU_PROVIDER]))


def run(sess, feed, rows: int | None, flush: bool) -> np.ndarray:
    n = feed["input_ids"].shape[0]
    step = rows or n
    with flushed_denormals() if flush else contextlib.nullcontext():
        return np.concatenate([sess.run(None, {k: v[i:i + step] for k, v in feed.items()})[0]
                               for i in range(0, n, step)])


def pooled(hidden, mask):
    v = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def feeds_of(tok, texts):
    out = []
    for i in range(0, len(texts), 32):
        b = tok.encode(texts[i:i + 32])
        out.append({"input_ids": b.input_ids, "attention_mask": b.attention_mask,
                    "token_type_ids": b.token_type_ids})
    return out


def kernel_ms(profile_file: str) -> collections.Counter:
    per_op = collections.Counter()
    for event in json.load(open(profile_file)):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            per_op[event["args"]["op_name"]] += event["dur"] / 1e3
    return per_op


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("check", "profile", "time"))
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--graphs", nargs="+", default=list(bert_graph.ATTENTION_KINDS),
                        choices=[*bert_graph.ATTENTION_KINDS, "int8"])
    parser.add_argument("--int8-rows", type=int, default=0, help="0: whole calls")
    args = parser.parse_args()

    model_dir = models.minilm_dir()
    config = bert_graph.bert_config(model_dir)
    weights = bert_graph.load_weights(model_dir, config)
    tmp = Path(tempfile.mkdtemp(prefix="encoder_attention_"))
    paths, rows = {}, {}
    for kind in args.graphs:
        rows[kind] = args.rows
        if kind == "int8":
            paths[kind], rows[kind] = str(derived.ensure(models.FUSED_INT8_NAME)), args.int8_rows
            continue
        paths[kind] = str(tmp / f"{kind}.onnx")
        onnx.save(bert_graph.fused_bert(weights, config, attention=kind), paths[kind])
    tok = TextTokenizer(model_dir / "tokenizer.json", models.max_seq_length(model_dir))
    feeds = feeds_of(tok, stdlib_paragraphs(args.texts))
    print("call shapes:", [f["input_ids"].shape for f in feeds])
    setups = [(kind, flush) for flush in (False, True) for kind in paths]

    if args.mode == "check":
        reference, source = derived.reference_vectors()
        check = feeds_of(tok, list(derived.CHECK_TEXTS))[0]
        base = None
        for kind, flush in setups:
            sess = session(paths[kind], args.threads, flush)
            v = pooled(run(sess, check, rows[kind], flush), check["attention_mask"])
            bench = [pooled(run(sess, f, rows[kind], flush), f["attention_mask"]) for f in feeds]
            base = base or bench
            print(f"{kind:8} flush={flush!s:5} min cosine to PyTorch ({source}) "
                  f"{(v * reference).sum(1).min():.7f}; to contrib unflushed on the bench texts "
                  f"{min((a * b).sum(1).min() for a, b in zip(bench, base)):.7f}")
    elif args.mode == "profile":
        for kind, flush in setups:
            sess = session(paths[kind], 1, flush, str(tmp / f"profile_{kind}_{flush}"))
            for f in feeds:
                run(sess, f, rows[kind], flush)
            per_op = kernel_ms(sess.end_profiling())
            total = sum(per_op.values())
            print(f"{kind} flush={flush}: kernel {total:.0f} ms; " + ", ".join(
                f"{op} {ms:.0f} ms ({100 * ms / total:.1f}%)" for op, ms in per_op.most_common(10)))
    else:
        sessions = {s: session(paths[s[0]], args.threads, s[1]) for s in setups}
        clock = time.thread_time if args.threads == 1 else time.process_time
        rates = collections.defaultdict(list)
        for _ in range(args.rounds):
            for s in setups:
                t0, c0 = time.perf_counter(), clock()
                for f in feeds:
                    run(sessions[s], f, rows[s[0]], s[1])
                rates[s].append((args.texts / (time.perf_counter() - t0), args.texts / (clock() - c0)))
        for (kind, flush), r in rates.items():
            wall, cpu = np.median(np.array(r), axis=0)
            print(f"{kind:8} flush={flush!s:5} texts/s {wall:6.1f}  texts per CPU-s {cpu:6.1f}  "
                  f"rounds {np.round(r, 1).tolist()}")


if __name__ == "__main__":
    main()
