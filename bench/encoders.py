"""Encoder throughput: ragcore's ONNX BiEncoder (fp32 and fp16 exports, int8)
against sentence-transformers, and the ONNX CrossEncoder against transformers,
in one run.

    .venv/bin/python bench/encoders.py [--texts 256] [--json F] [--markdown F]
        [--batches 1 32 128] [--threads 1 2] [--no-cross]

Texts: paragraphs of the running Python's standard library docstrings (local,
varied lengths, some over 256 tokens). Each cell encodes every text with the
given batch size; texts per second from the median of interleaved repeats (all
systems of a cell take turns, so a slow phase of this shared VM hits them
alike). Threads: onnxruntime's intra-op threads for ragcore, torch's for the
peers. Embeddings are compared in the same run (min cosine to
sentence-transformers, and fp16 to fp32). fp16 on CPU: onnxruntime has no CPU
kernels for most fp16 ops and runs them in fp32 behind inserted Casts, so it is
measured here for agreement and for CI, not as a CPU option. The cross-encoder
is a tiny random BERT (no pre-trained cross-encoder ships in an installable
package): the comparison is of runtimes.
"""

from __future__ import annotations

import _common  # noqa: F401  (first: re-executes without OPENBLAS_CORETYPE)

import argparse
import ast
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

from _common import LoadMeter, environment, fmt_num, markdown_table, time_calls, write_json, write_text

BATCHES = (1, 32, 128)
THREADS = (1, 2)


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


def bi_encoder_rows(texts, args) -> tuple[list, dict]:
    import sentence_transformers as st

    import ragcore
    from ragcore.encoders import export, models
    fp32_path = export.export()
    fp16_path = export.export(precision="fp16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st_model = st.SentenceTransformer(str(models.minilm_dir()), device="cpu")
    reference = st_model.encode(texts, normalize_embeddings=True, batch_size=32)
    agreement = {}
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        fp32 = ragcore.BiEncoder(fp32_path, providers="cpu", threads=threads)
        fp16 = ragcore.BiEncoder(fp16_path, providers="cpu", threads=threads)
        int8 = ragcore.BiEncoder(models.INT8_NAME, providers="cpu", threads=threads)
        vectors = {}
        for enc, name in ((fp32, "fp32"), (fp16, "fp16"), (int8, "int8")):
            vectors[name] = enc.encode(texts, warn=False)
            agreement[name] = float((vectors[name] * reference).sum(axis=1).min())
        agreement["fp16_to_fp32"] = float((vectors["fp16"] * vectors["fp32"]).sum(axis=1).min())
        for batch in args.batches:
            fp32.batch_size = fp16.batch_size = int8.batch_size = batch
            meter = LoadMeter()
            timings, _ = time_calls({
                "onnx_fp32": lambda: fp32.encode(texts, warn=False),
                "onnx_fp16": lambda: fp16.encode(texts, warn=False),
                "onnx_int8": lambda: int8.encode(texts, warn=False),
                "sentence_transformers": lambda: st_model.encode(texts, batch_size=batch),
            }, rounds=3, min_repeats=2, target_s=1.0, slow_budget_s=6.0)
            tps = {k: len(texts) / t.median for k, t in timings.items()}
            rows.append({"threads": threads, "batch": batch, "texts_per_s": tps,
                         "fp32_vs_st": tps["onnx_fp32"] / tps["sentence_transformers"],
                         "int8_vs_st": tps["onnx_int8"] / tps["sentence_transformers"],
                         "fp16_vs_fp32": tps["onnx_fp16"] / tps["onnx_fp32"],
                         "load": meter.report()})
            print(rows[-1], flush=True)
    return rows, agreement


def cross_encoder_rows(texts, args) -> list:
    import transformers

    import ragcore
    from ragcore.encoders import export, models
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


def markdown(report) -> str:
    bi = markdown_table(
        ["threads", "batch", "ONNX fp32 texts/s", "ONNX fp16 texts/s", "ONNX int8 texts/s",
         "sentence-transformers texts/s", "fp32 / ST", "int8 / ST", "fp16 / fp32", "other load (cores)"],
        [[r["threads"], r["batch"], fmt_num(r["texts_per_s"]["onnx_fp32"]),
          fmt_num(r["texts_per_s"]["onnx_fp16"]), fmt_num(r["texts_per_s"]["onnx_int8"]),
          fmt_num(r["texts_per_s"]["sentence_transformers"]),
          f"{r['fp32_vs_st']:.2f}x", f"{r['int8_vs_st']:.2f}x", f"{r['fp16_vs_fp32']:.2f}x",
          f"{r['load']['other_processes_cores'] + r['load']['steal_cores']:.2f}"] for r in report["bi"]])
    ce = markdown_table(
        ["threads", "batch", "ONNX pairs/s", "transformers pairs/s", "ONNX / transformers",
         "max |score diff|"],
        [[r["threads"], r["batch"], fmt_num(r["pairs_per_s"]["onnx"]),
          fmt_num(r["pairs_per_s"]["transformers"]), f"{r['onnx_vs_transformers']:.2f}x",
          f"{r['max_abs_score_diff']:.1e}"] for r in report["cross"]])
    agree = report["agreement_min_cosine_to_st"]
    text = (f"{report['n_texts']} stdlib docstring paragraphs. Minimum cosine to sentence-transformers "
            f"over them: ONNX fp32 {agree['fp32']:.6f}, ONNX fp16 {agree['fp16']:.6f}, ONNX int8 "
            f"{agree['int8']:.4f}; fp16 to fp32 {agree['fp16_to_fp32']:.6f}.\n\n{bi}\n")
    if report["cross"]:
        text += f"\nCross-encoder (tiny random BERT, 2 layers x 128):\n\n{ce}\n"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--threads", type=int, nargs="+", default=list(THREADS))
    parser.add_argument("--no-cross", action="store_true", help="bi-encoders only")
    args = parser.parse_args()
    texts = stdlib_paragraphs(args.texts)
    bi, agreement = bi_encoder_rows(texts, args)
    report = {"environment": environment(), "n_texts": len(texts), "bi": bi,
              "agreement_min_cosine_to_st": agreement,
              "cross": [] if args.no_cross else cross_encoder_rows(texts, args)}
    if args.json:
        write_json(Path(args.json), report)
    text = markdown(report)
    if args.markdown:
        write_text(Path(args.markdown), text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
