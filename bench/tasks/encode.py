"""Encoder throughput: ragcore's ONNX BiEncoder (the fused all-MiniLM-L6-v2 graph, int8 and
fp32) against sentence-transformers (the same weights in torch, fp32, CPU, intra- and
inter-op threads set), texts handed over in calls of `batch` texts (each library's own
batching inside a call: sentence-transformers pads a call's texts to its longest, ragcore cuts
it into calls of at most 256 padded tokens by length), max_length 256. Texts: a seeded sample
of the docstring paragraphs of this Python's standard library (4 to 256 tokens: padding
weighs), and chunks of this machine's man pages as a Collection cuts them (most near 200
tokens: the model's arithmetic weighs).

Share of limit: the model's multiply-adds per second (per text of L tokens, 6 layers of
2 * (4 d^2 + 2 d * 1536) * L for the projections and 4 * L^2 * d for attention, d = 384)
over the peak of the arithmetic it runs on (int8 dot peak for the int8 graph, fp32 FMA peak
otherwise). cosine: the smallest cosine between a text's vector and sentence-transformers'."""

from __future__ import annotations

import numpy as np

from peers import adapters, distributions
from results_file import table, write_section
from timing import seconds_per_call

D, FFN, LAYERS = 384, 1536, 6


def model_flops(lengths) -> float:
    lengths = np.asarray(lengths, dtype=np.float64)
    per_layer = 2 * (4 * D * D + 2 * D * FFN) * lengths + 4 * lengths ** 2 * D
    return float(LAYERS * per_layer.sum())


def man_page_chunks(n: int, tokenizer) -> list[str]:
    """n chunks of this machine's man pages as a Collection cuts them (200 tokens, 40 of
    overlap), a seeded sample: text the model's authors did not train on, of even length."""
    from ragcore.cli.datasets import man_pages
    from ragcore.rag.chunking import Chunker

    chunker = Chunker(tokenizer, 200, 40)
    docs = man_pages(max_docs=max(4, n // 8), seed=3, exclude=("gcloud*",)).documents
    chunks = [c.text for d in docs for c in chunker.chunk(d.text)]
    pick = np.random.default_rng(0).choice(len(chunks), min(n, len(chunks)), replace=False)
    return [chunks[i] for i in sorted(pick)]


def measure(texts, tokenizer, systems, reference, grid, limits, suffix):
    """Rows (peer, batch, texts/s, share of limit, min cosine to the reference) of texts."""
    lengths = [len(e.ids) for e in tokenizer.tokenize(texts)]
    flops = model_flops(lengths)
    ref_vectors = reference.encode(texts, 32) if reference else None
    rows = []
    for batch in grid["batches"]:
        fns = {name: (lambda s=s: s.encode(texts, batch)) for name, s in systems.items()}
        secs = seconds_per_call(fns, grid["rounds"], grid["min_seconds"])
        for name, s in systems.items():
            peak = limits.get(("int8" if "int8" in name else "fp32") + "_gops" + suffix)
            cos = None
            if ref_vectors is not None:
                cos = float(np.min(np.sum(s.encode(texts, batch) * ref_vectors, axis=1)))
            rows.append({"peer": name, "batch": batch, "texts_s": len(texts) / secs[name],
                         "share": flops / secs[name] / (peak * 1e9) if peak else None,
                         "limit": ("int8" if "int8" in name else "fp32") + " peak",
                         "cosine": cos})
    return rows, lengths


def padding_note(lengths, grid) -> str:
    """Padded tokens per text token at each batch: sentence-transformers pads a call's
    texts to its longest; ragcore's fp32 cuts a call by length into calls of at most
    256 padded tokens (its int8 runs one text per call: no padding)."""
    from ragcore.encoders._batching import plan_batches
    from ragcore.encoders.bi_encoder import DEFAULT_TOKEN_BUDGET

    lengths = np.asarray(lengths)
    parts = []
    for batch in grid["batches"]:
        calls = [lengths[i:i + batch] for i in range(0, len(lengths), batch)]
        st = sum(c.max() * len(c) for c in calls)
        rc = sum(c[b].max() * len(b) for c in calls
                 for b in plan_batches(c, 64, DEFAULT_TOKEN_BUDGET))
        parts.append(f"batch {batch}: sentence-transformers {st / lengths.sum():.2f}, "
                     f"ragcore fp32 {rc / lengths.sum():.2f}")
    return "Padded tokens per text token, " + "; ".join(parts) + "."


def summarise(rows, grid, label) -> list[dict]:
    summary = []
    for batch in grid["batches"]:
        cell = [r for r in rows if r["batch"] == batch]
        mine = [r for r in cell if r["peer"].startswith("ragcore")]
        peers = [r for r in cell if not r["peer"].startswith("ragcore")]
        if mine and peers:
            me, best = (max(mine, key=lambda r: r["texts_s"]),
                        max(peers, key=lambda r: r["texts_s"]))
            summary.append({"row": f"encode ({me['peer']}), {label}batch {batch}",
                            "measure": "texts/s", "ragcore": me["texts_s"],
                            "best_peer": best["peer"], "best_peer_value": best["texts_s"],
                            "share": me["share"], "limit": me["limit"], "format": ",.0f"})
    return summary


def run(grid, out_dir, command, limits):
    from ragcore.cli.bench.stdlib_vectors import stdlib_paragraphs
    from ragcore.encoders.defaults import default_encoder

    pool = stdlib_paragraphs()
    pick = np.random.default_rng(0).choice(len(pool), grid["texts"], replace=False)
    texts = [pool[i] for i in sorted(pick)]
    threads = grid["threads"]
    tokenizer = default_encoder("fp32").tokenizer
    classes, missing = adapters("encode")
    systems = {}
    for cls in classes:
        s = cls(threads)
        systems[s.name] = s
    reference = next((s for n, s in systems.items() if n.startswith("sentence")), None)
    suffix = "_1t" if threads == 1 else ""
    rows, lengths = measure(texts, tokenizer, systems, reference, grid, limits, suffix)
    chunks = man_page_chunks(grid["texts"], tokenizer)
    man_rows, man_lengths = measure(chunks, tokenizer, systems, reference, grid, limits, suffix)
    summary = summarise(rows, grid, "") + summarise(man_rows, grid, "man-page chunks, ")
    columns = [{"key": "peer", "label": "encoder"}, {"key": "batch", "label": "texts per call"},
               {"key": "texts_s", "label": "texts/s", "format": ",.1f"},
               {"key": "share", "label": "share of limit", "format": ".1%"},
               {"key": "limit", "label": "limit"},
               {"key": "cosine", "label": "min cosine", "format": ".4f"}]
    notes = [f"Not installed here: {', '.join(missing)}."] if missing else []
    return write_section(
        "encode", "Encoder throughput", command, threads=threads, order=40,
        intro=(f"{len(texts)} texts, {sum(lengths):,} tokens (mean {np.mean(lengths):.0f}, "
               f"max {max(lengths)}), and {len(chunks)} man-page chunks, {sum(man_lengths):,} "
               f"tokens (mean {np.mean(man_lengths):.0f}), {threads} thread(s). "
               + " ".join(__doc__.split())),
        tables=[table("Standard-library docstring paragraphs", columns, rows,
                      notes + [padding_note(lengths, grid)]),
                table("Man-page chunks", columns, man_rows, [padding_note(man_lengths, grid)])],
        peers=distributions("encode"),
        plot={"table": 0, "x": "batch", "y": "texts_s", "series": "peer", "logx": True,
              "xlabel": "texts per call", "ylabel": "texts/s"},
        summary=summary, limits=limits, out_dir=out_dir)
