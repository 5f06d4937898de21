"""BiEncoder: texts to normalised float32 vectors with an ONNX model."""

from __future__ import annotations

import warnings

import numpy as np

from .._util.arrays import check_choice, check_positive_int, check_threads
from ..errors import TruncationWarning
from .models import DEFAULT_NAME, resolve
from ._batching import plan_batches, split_padded
from ._onnx import CPU_PROVIDER, OnnxModel, embedding_rows, graph_operators, load_graph
from .build.bert_graph import ROW_WISE_OPERATORS
from .build.quantize import PER_CALL_SCALE_OPERATORS
from ._parallel import map_in_order, usable_cores
from ._text import TextTokenizer, check_texts

POOLINGS = ("mean", "cls", "graph")
DEFAULT_TOKEN_BUDGET = 256
# Padded tokens per model call when a call by count is cut into pieces of its rows:
# a 32 x 256 call in 1,024-token pieces beats the whole call on one thread (CPU time) and,
# side by side, on two intra-op threads.
BY_COUNT_PIECE_TOKENS = 1024


class Embeddings(np.ndarray):
    """float32 [n, d] embeddings; ``truncated`` counts the texts cut at max_length."""

    truncated: int = 0

    def __array_finalize__(self, obj):
        self.truncated = getattr(obj, "truncated", 0)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Attention-masked mean over tokens: padding never counts."""
    weights = mask[:, :, None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _texts_done(progress):
    """on_result for _run_each that reports the running count of texts to progress."""
    if progress is None:
        return None
    done = 0

    def report(item, _result):
        nonlocal done
        done += len(item[0])
        progress(done)
    return report


class BiEncoder:
    """Encodes texts with an ONNX transformer through onnxruntime.

    Args:
        model: a bundled model name ("all-MiniLM-L6-v2-int8", the default, or
            "all-MiniLM-L6-v2" once exported), an .onnx file or a directory
            holding model.onnx and tokenizer.json.
        tokenizer_path: tokenizer.json (default: the model's, or the one next to
            the .onnx file).
        providers: "auto" (CUDA when onnxruntime really provides it, else CPU),
            "cpu", "cuda" or a list of onnxruntime provider names.
        max_length: tokens per text, special tokens included (default: the
            model's, 256 for all-MiniLM-L6-v2). Longer texts are cut, counted and
            reported with a TruncationWarning.
        pooling: "mean" (attention-masked), "cls" (first token) or "graph" (the
            model already outputs one vector per text).
        normalize: L2-normalise the vectors (cosine = inner product).
        batch_size: at most this many texts per model call; texts are sorted by
            length so each batch pads little, and results come back in input order.
        token_budget: at most this many padded tokens per model call (its longest
            text's length times its size; a longer text goes alone); None bounds
            calls by batch_size only. Small calls keep the activations in the
            core's cache: on the CPUs measured 256 tokens is fastest per text
            for fp32 and int8. With
            None, on CPU and for a graph whose texts do not interact (ragcore's
            fused fp32 graph), each padded call is still cut into pieces of its
            rows of at most 1,024 padded tokens at the call's width: the same
            padded work and the same bits, in smaller calls. Its int8
            quantisation is cut the same way; its activation scales are set per
            model call, so an int8 vector depends on the texts batched with it
            and, cut, on the piece boundaries (up to about 9e-3 of cosine measured
            on batches of mixed texts; the derived file is kept only if its
            accuracy check passes whole, in pieces and one text per call).
        threads: cores one call may use (0: all of them). A call that makes one
            model call (a query) runs it on onnxruntime's intra-op threads; a call
            that makes several (bulk encoding) runs them on `threads` Python
            threads at once, one core each (see parallel_batches).
        parallel_batches: True (default): on CPU, the
            model calls of one encode call run side by side on `threads` threads,
            each on an intra-op-1 session loaded next to the main one at first use
            (the model's memory twice); the vectors are bit-identical to
            threads=1. With token_budget=None the pieces of the padded calls run
            side by side when the graph allows the cut (above). False, or whole
            padded calls (large, slower side by side): one model call at a time,
            on onnxruntime's intra-op threads.
        io_binding: None (default): onnxruntime IOBinding on CUDA, plain runs on
            CPU; True / False forces either (same numbers on CPU).
    """

    def __init__(self, model=DEFAULT_NAME, tokenizer_path=None, providers="auto",
                 max_length: int | None = None, pooling: str = "mean", normalize: bool = True,
                 batch_size: int = 64, threads: int = 0, io_binding: bool | None = None,
                 token_budget: int | None = DEFAULT_TOKEN_BUDGET, parallel_batches: bool = True):
        spec = resolve(model)
        self.pooling = check_choice(pooling, "pooling", POOLINGS)
        self.normalize = bool(normalize)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.token_budget = None if token_budget is None else check_positive_int(token_budget, "token_budget")
        max_length = spec.max_length if max_length is None else check_positive_int(max_length, "max_length")
        self.tokenizer = TextTokenizer(tokenizer_path or spec.tokenizer_path, max_length)
        if not isinstance(parallel_batches, bool):
            raise TypeError(f"parallel_batches must be True or False, got {type(parallel_batches).__name__}")
        self.parallel_batches = parallel_batches
        self.threads = check_threads(threads)
        self.model = OnnxModel(spec.onnx_path, providers, self.threads, io_binding)
        self._one_core_model = None  # the intra-op-1 session of parallel calls, loaded at first use
        expected_rank = 2 if pooling == "graph" else 3
        if self.model.output_rank != expected_rank:
            raise ValueError(
                f"pooling={pooling!r} needs a model output of rank {expected_rank}, but "
                f"{spec.onnx_path} outputs rank {self.model.output_rank} ({self.model.output_name})")
        graph = load_graph(spec.onnx_path)
        # texts that do not interact in the graph: a padded call can be cut into pieces
        operators = graph_operators(graph)
        self._rows_independent = graph is not None and operators <= ROW_WISE_OPERATORS
        # its int8 quantisation: the rows meet only through each call's activation scales
        self._rows_scaled_per_call = (graph is not None and not self._rows_independent
                                      and operators <= ROW_WISE_OPERATORS | PER_CALL_SCALE_OPERATORS)
        rows = embedding_rows(graph)
        del graph
        if rows is not None and self.tokenizer.vocab_size > rows:
            raise ValueError(
                f"tokenizer_path: the tokenizer has {self.tokenizer.vocab_size} tokens but the "
                f"model's embedding table has {rows} rows; they do not belong together")
        self.dim = int(self.encode(["dimension probe"], warn=False).shape[1])

    @property
    def provider(self) -> str:
        """The onnxruntime execution provider that really runs the model."""
        return self.model.provider

    @property
    def max_length(self) -> int:
        return self.tokenizer.max_length

    def __repr__(self) -> str:
        return (f"BiEncoder({str(self.model.path)!r}, provider={self.provider!r}, "
                f"max_length={self.max_length}, pooling={self.pooling!r})")

    def encode(self, texts, warn: bool = True, progress=None) -> Embeddings:
        """float32 [len(texts), dim]; an empty list gives [0, dim].

        progress: None, or a function called with the number of texts encoded so far
        as model calls finish (on the calling thread): one call over a whole corpus
        keeps one length order and one set of threads, where a caller that cut the
        corpus into calls for a progress bar waited for each call's last model run."""
        texts = check_texts(texts)
        batches = list(self._batches(texts))
        vectors = self._run_each(batches, self._embed, _texts_done(progress))
        truncated = sum(int(batch.truncated.sum()) for _, batch in batches)
        if truncated and warn:
            warnings.warn(f"{truncated} of {len(texts)} texts were longer than max_length="
                          f"{self.max_length} tokens and were cut", TruncationWarning, stacklevel=2)
        dim = vectors[0].shape[1] if vectors else self.dim  # the probe in __init__ learns dim here
        out = np.empty((len(texts), dim), dtype=np.float32)
        for (rows, _), v in zip(batches, vectors):
            out[rows] = v
        result = out.view(Embeddings)
        result.truncated = truncated
        return result

    def encode_tokens(self, texts) -> list[np.ndarray]:
        """Per text, its token embeddings [tokens, dim] (padding dropped), L2-normalised
        per token: what late-interaction scoring (MaxSim) compares."""
        if self.pooling == "graph":
            raise ValueError("encode_tokens needs token outputs; this model pools in its graph")
        texts = check_texts(texts)
        batches = list(self._batches(texts))
        out: list[np.ndarray] = [np.empty((0, 0), np.float32)] * len(texts)
        for (rows, batch), hidden in zip(batches, self._run_each(batches, self._token_vectors)):
            for row, tokens in zip(rows, hidden):
                out[row] = tokens
        return out

    def _embed(self, model: OnnxModel, batch) -> np.ndarray:
        vectors = self._pool(model.run(batch), batch.attention_mask)
        return l2_normalize(vectors) if self.normalize else vectors

    @staticmethod
    def _token_vectors(model: OnnxModel, batch) -> list[np.ndarray]:
        return [l2_normalize(h[m.astype(bool)].astype(np.float32))
                for h, m in zip(model.run(batch), batch.attention_mask)]

    def _cut_by_count(self) -> bool:
        """Whether calls by count are cut into pieces of their rows (same padding):
        on CPU, for graphs whose texts do not interact (the same bits) and for their
        dynamic int8 quantisation (other bits: scales per piece, within its check)."""
        return (self.token_budget is None and self.provider == CPU_PROVIDER
                and (self._rows_independent or self._rows_scaled_per_call))

    def _workers(self) -> int:
        # Only small calls gain side by side: two 32-text padded calls at once are slower
        # than one at a time on intra-op threads, 256-token calls faster, so whole calls by
        # count stay sequential.
        if not self.parallel_batches or self.provider != CPU_PROVIDER:
            return 1
        if self.token_budget is None and not self._cut_by_count():
            return 1
        return self.threads or usable_cores()

    def _run_each(self, batches: list, fn, on_result=None) -> list:
        """[fn(model, batch) for each (rows, batch)], in order: side by side on one
        core each when several model calls and cores are there, else one at a time
        on the main session's intra-op threads. on_result: as for map_in_order."""
        workers = self._workers()
        model = self.model
        if workers > 1 and len(batches) > 1:
            if self._one_core_model is None:
                self._one_core_model = OnnxModel(self.model.path, [CPU_PROVIDER], 1, False)
            model = self._one_core_model
        return map_in_order(lambda item: fn(model, item[1]), batches, workers, on_result)

    def _batches(self, texts):
        """(input rows, TokenBatch) over texts sorted by length, longest first,
        each within batch_size texts and token_budget padded tokens."""
        if not texts:
            return
        encodings = self.tokenizer.tokenize(texts)
        lengths = [len(e.ids) for e in encodings]
        cut = self._cut_by_count()
        for rows in plan_batches(lengths, self.batch_size, self.token_budget):
            batch = self.tokenizer.pad([encodings[i] for i in rows])
            if cut:
                yield from split_padded(rows, batch, BY_COUNT_PIECE_TOKENS)
            else:
                yield rows, batch

    def _pool(self, output: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.pooling == "graph":
            return output.astype(np.float32, copy=False)
        if self.pooling == "cls":
            return output[:, 0, :].astype(np.float32, copy=False)
        return mean_pool(output, mask)

