"""HybridRetriever end to end on a small corpus, the embedding cache, and the
demo's command line (JSON output) on a tiny sample."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import ragcore  # noqa: E402
from ragcore.rag.pipeline import HybridRetriever  # noqa: E402

DOCS = {
    "json": "The json module encodes and decodes JSON. Use json.loads to parse a string. "
            "Use json.dumps to serialise Python objects.",
    "open": "The open function returns a file object. Mode r reads text; mode w writes text. "
            "Always close the file or use a with statement.",
    "math": "The math module provides sqrt, sin and cos. It works on floats. "
            "For complex numbers use cmath instead.",
    "re": "The re module matches regular expressions. re.findall returns all matches. "
          "Compile a pattern with re.compile for reuse.",
}


@pytest.fixture(scope="module")
def encoder():
    return ragcore.encoders.default_encoder(providers="cpu")


@pytest.fixture(scope="module")
def retriever(encoder):
    from ragcore.rag.chunking import Chunker

    return HybridRetriever.from_texts(list(DOCS.values()), doc_ids=list(DOCS), encoder=encoder,
                                      chunker=Chunker(encoder, chunk_size=16, overlap=4),
                                      k0=10, k=3)


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_modes_find_the_right_document(retriever, mode):
    result = retriever.retrieve("how do I parse a JSON string", mode=mode)
    assert result.chunks[0][0].doc_id == "json"
    assert result.hits.ids.shape == (1, 3) and result.rerank_error is None
    for c in result.chunks[0]:  # chunk offsets point at the source text
        assert DOCS[c.doc_id][c.start:c.end] == c.text
    stages = {s for s, t in result.timings.items() if t > 0}
    want = {"hybrid": {"encode", "dense", "sparse"}, "dense": {"encode", "dense"}, "sparse": {"sparse"}}
    assert want[mode] <= stages


def test_batch_equals_single_queries(retriever):
    queries = ["read a text file", "square root of a float", "regular expression matches"]
    batch = retriever.retrieve_batch(queries)
    for row, q in enumerate(queries):
        single = retriever.retrieve(q)
        np.testing.assert_array_equal(single.hits.ids[0], batch.hits.ids[row])
    assert [c[0].doc_id for c in batch.chunks] == ["open", "math", "re"]


class Failing:
    def score(self, query, passages):
        raise RuntimeError("model crashed")


class Reverse:
    def score(self, query, passages):
        return -np.arange(len(passages), dtype=np.float32)[::-1]  # last candidate best


def test_reranker_reorders_and_fails_open(retriever):
    try:
        retriever.reranker = Reverse()
        reranked = retriever.retrieve("how do I parse a JSON string")
        first = reranked.candidates.ids[0][reranked.candidates.ids[0] != -1]
        assert reranked.hits.ids[0][0] == first[-1]
        assert reranked.timings["rerank"] > 0
        retriever.reranker = Failing()
        failed = retriever.retrieve("how do I parse a JSON string")
        assert failed.rerank_error == "RuntimeError: model crashed"
        np.testing.assert_array_equal(failed.hits.ids[0], failed.candidates.ids[0][:3])
    finally:
        retriever.reranker = None


def test_bad_arguments(retriever, encoder):
    with pytest.raises(ValueError, match="unknown mode"):
        retriever.retrieve("q", mode="both")
    with pytest.raises(TypeError, match="query must be a str"):
        retriever.retrieve(["q"])
    with pytest.raises(ValueError, match="unknown fusion"):
        HybridRetriever(encoder, None, None, [], fusion="max")
    with pytest.raises(ValueError, match="doc_ids"):
        HybridRetriever.from_texts(["a b c"], doc_ids=[1, 2], encoder=encoder)


def test_demo_json_output(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCORE_CACHE", str(tmp_path))
    from ragcore.cli.main import main

    assert main(["demo", "--docs", "40", "--questions", "8", "--latency-queries", "2", "--k0", "10",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    from ragcore.rag.defaults import DEFAULT_FUSION

    first = ["BM25", "dense", "hybrid RRF (r0 = 60)", f"hybrid default ({DEFAULT_FUSION.describe()})",
             "hybrid (tuned)"]
    assert list(report["quality"]) == first + [f"{name} + rerank" for name in first]
    for values in report["quality"].values():
        assert set(values) == {"recall@1", "recall@5", "recall@10", "mrr@10", "doc ndcg@10"}
        assert all(0.0 <= v <= 1.0 for v in values.values())
    assert report["questions"] == 8 and report["embeddings_computed"] == report["chunks"]
    # Tuned on a third (2 of 8), reported on the other 6; each sign test covers those 6.
    assert (report["tuning_questions"], report["held_out_questions"]) == (2, 6)
    tuning = report["tuning"]
    assert tuning["queries"] == 2 and tuning["method"] in ("rrf", "convex")
    assert tuning["settings_searched"] == 9 + 3 * 21 and len(tuning["fold_settings"]) == 2
    assert tuning["metric"] == "worst_gain(recall@10, mrr@10)"
    assert len(report["tuning_qids"]) == 2 and len(report["held_out_qids"]) == 6
    assert not set(report["tuning_qids"]) & set(report["held_out_qids"])
    assert len(report["sign_tests"]) == 12
    for s in report["sign_tests"]:
        assert s["gained"] + s["lost"] + s["tied"] == 6 and 0 < s["p_value"] <= 1
    assert {"encode", "dense", "sparse", "fuse", "rerank", "total"} <= set(report["latency_ms_p50_p95"])
    # A second run reuses every embedding from the disk cache.
    main(["demo", "--docs", "40", "--questions", "8", "--latency-queries", "2", "--json"])
    again = json.loads(capsys.readouterr().out)
    assert again["embeddings_computed"] == 0 and again["embeddings_cached"] == report["chunks"]


def test_embedding_cache_reuses_vectors(tmp_path):
    import numpy as np

    from ragcore.cli.embedding_cache import EmbeddingCache
    from ragcore.encoders import default_encoder

    encoder = default_encoder(providers="cpu")
    cache = EmbeddingCache(encoder, tmp_path)
    texts = ["alpha beta gamma", "delta", "alpha beta gamma"]
    first = cache.encode(texts)
    np.testing.assert_allclose(first, encoder.encode(texts), atol=1e-6)
    assert cache.misses == 2
    again = EmbeddingCache(encoder, tmp_path)
    np.testing.assert_array_equal(again.encode(texts[::-1]), first[::-1])
    assert again.misses == 0 and again.hits == 2


def test_eval_command_on_a_beir_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCORE_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": name, "title": name, "text": text}) + "\n" for name, text in DOCS.items()))
    questions = {"q1": "parse a JSON string", "q2": "square root of a number", "q3": "read a file"}
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": t}) + "\n" for q, t in questions.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tjson\t1\nq2\tmath\t1\n"
                                               "q3\topen\t2\n")
    from ragcore.cli.main import main

    assert main(["eval", str(folder), "--questions", "3", "--latency-queries", "1", "--k0", "4",
                 "--k", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dataset"] == "beir" and report["questions"] == 3
    for values in report["quality"].values():
        assert set(values) == {"recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"}
    # The one held-out question, "square root of a number", meets the math page ("sqrt",
    # "numbers") only through the default English stemmer: number ~ numbers.
    assert report["held_out_qids"] == ["q2"]
    assert report["quality"]["BM25"]["recall@5"] == 1.0
    assert report["quality"]["dense"]["recall@5"] == 1.0


def test_one_default_fusion_and_analyzer_and_strings_keep_their_meaning(retriever, tmp_path):
    from ragcore import Collection
    from ragcore.rag.defaults import DEFAULT_BM25, DEFAULT_FUSION
    from ragcore.rag.fusion import FusionSetting

    assert DEFAULT_FUSION == FusionSetting("convex", alpha=0.7, norm="zscore")
    assert retriever.fusion == DEFAULT_FUSION
    assert retriever.bm25_index.stemmer == DEFAULT_BM25["stemmer"] == "english"
    other = HybridRetriever(retriever.encoder, None, None, [], fusion="rrf")
    assert other.fusion == FusionSetting("rrf", r0=60)
    assert HybridRetriever(retriever.encoder, None, None, [], fusion="wsum").fusion == "wsum"
    # The Collection: the same fusion when none is named, and the same analyzer recorded.
    with Collection.create(tmp_path / "c", encoder=retriever.encoder, chunker="none") as col:
        col.add(list(DOCS.values()), ids=list(range(len(DOCS))))
        for query in ("parse a JSON string", "reading files", "square root"):
            default = col.search(query, k=3)
            named = col.search(query, k=3, fusion=DEFAULT_FUSION)
            assert [(m.id, m.score) for m in default] == [(m.id, m.score) for m in named]
        # "reads" in the open page matches "reading" only through the stemmer.
        assert [m.id for m in col.search("reading", k=3, mode="sparse")] == [1]


@pytest.mark.parametrize("setting", ["convex", "tuned convex", "tuned rrf"])
def test_a_fusion_setting_fuses_the_first_stage_as_fusion_does(retriever, setting):
    from ragcore.rag import fusion
    from ragcore.rag.pipeline import HybridRetriever

    chosen = {"convex": "convex", "tuned convex": fusion.FusionSetting("convex", alpha=0.8),
              "tuned rrf": fusion.FusionSetting("rrf", r0=5)}[setting]
    hybrid = HybridRetriever(retriever.encoder, retriever.dense_index, retriever.bm25_index,
                             retriever.chunks, fusion=chosen, k0=10, k=3)
    query = "how do I parse a JSON string"
    got = hybrid.retrieve(query).candidates
    dense = retriever.retrieve(query, mode="dense").candidates
    sparse = retriever.retrieve(query, mode="sparse").candidates
    want = {"convex": fusion.convex(dense, sparse, 0.5, k=10),
            "tuned convex": fusion.convex(dense, sparse, 0.8, k=10),
            "tuned rrf": fusion.rrf([dense, sparse], r0=5, k=10)}[setting]
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)


def test_the_split_is_fixed_by_the_seed_and_disjoint():
    from ragcore.cli.demo_hybrid import split_questions

    tune, held = split_questions(300, seed=0)
    assert len(tune) == 100 and len(held) == 200
    assert not set(tune.tolist()) & set(held.tolist())
    assert sorted(tune.tolist() + held.tolist()) == list(range(300))
    again, _ = split_questions(300, seed=0)
    assert again.tolist() == tune.tolist()
    assert split_questions(300, seed=1)[0].tolist() != tune.tolist()
    with pytest.raises(ValueError, match="at least 3 questions"):
        split_questions(2, seed=0)


def test_demo_refuses_an_unknown_precision(capsys):
    from ragcore.cli.main import main

    with pytest.raises(SystemExit):
        main(["demo", "--precision", "fp31"])
    assert "invalid choice: 'fp31'" in capsys.readouterr().err
