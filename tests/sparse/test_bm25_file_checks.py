"""BM25Index.load on crafted files, and the BM25 parameter and token limits (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest

from ragcore import BM25Index, IndexFileError
from _crafted import rewrite, stored

TEXTS = ["the quick brown fox", "jumps over the lazy dog", "quick quick dog",
         "a lazy afternoon", "brown bread and brown butter", "fox hunting dog"]


@pytest.fixture
def bm25_file(tmp_path):
    index = BM25Index()
    index.add(TEXTS, ids=[4, 0, 8, 15, 16, 23])
    index.remove([8])
    path = tmp_path / "bm25.rc"
    index.save(path)
    return path


def refused(path, field: str):
    with pytest.raises(IndexFileError, match=field):
        BM25Index.load(path)


@pytest.mark.parametrize("next_id", [0, -1, 23])
def test_next_id_must_exceed_every_id(bm25_file, next_id):
    """next_id 0 or -1 made add() hand out existing ids or the padding id, after which
    the index no longer reloaded after its own save."""
    rewrite(bm25_file, "BM25Index", params={"next_id": next_id})
    refused(bm25_file, "next_id")


@pytest.mark.parametrize("params, field", [
    ({"k1": 1e308}, "k1"), ({"k1": "1.2"}, "k1"), ({"b": 2}, "b"), ({"delta": 1e300}, "delta"),
    ({"variant": ["lucene"]}, "variant"), ({"lucene_norms": 1}, "lucene_norms"),
    ({"stopwords": "en"}, "stopwords"), ({"stopwords": [1]}, "stopwords"),
    ({"stemmer": 5}, "stemmer"),
])
def test_header_fields_are_typed(bm25_file, params, field):
    rewrite(bm25_file, "BM25Index", params=params)
    refused(bm25_file, field)


@pytest.mark.parametrize("name, dtype", [("doc_ids", np.int32), ("postings", np.int64),
                                         ("list_ends", np.float32), ("terms", np.int64)])
def test_array_dtypes(bm25_file, name, dtype):
    _, arrays = stored(bm25_file, "BM25Index")
    rewrite(bm25_file, "BM25Index", arrays={name: arrays[name].astype(dtype)})
    refused(bm25_file, name)


def test_duplicate_document_ids(bm25_file):
    _, arrays = stored(bm25_file, "BM25Index")
    ids = arrays["doc_ids"]
    live = np.flatnonzero(ids >= 0)
    ids[live[1]] = ids[live[0]]
    rewrite(bm25_file, "BM25Index", arrays={"doc_ids": ids})
    refused(bm25_file, "doc_ids")


def test_postings_must_add_up_to_the_document_lengths(bm25_file):
    """A file could claim every document holds every term once, with lengths of 1: a
    4 MB file declared 80M postings. A document's term frequencies now sum to its length."""
    _, arrays = stored(bm25_file, "BM25Index")
    lengths = arrays["doc_lengths"]
    lengths[lengths > 1] -= 1
    rewrite(bm25_file, "BM25Index", arrays={"doc_lengths": lengths})
    refused(bm25_file, "do not add up")


def test_a_list_cannot_claim_more_postings_than_its_bytes_hold(bm25_file):
    _, arrays = stored(bm25_file, "BM25Index")
    sizes, ends = arrays["list_sizes"], arrays["list_ends"]
    sizes[0] = 64 * int(ends[0]) + 1
    rewrite(bm25_file, "BM25Index", arrays={"list_sizes": sizes})
    refused(bm25_file, "list_sizes")


def test_terms_are_utf8_and_distinct(bm25_file):
    _, arrays = stored(bm25_file, "BM25Index")
    terms = arrays["terms"]
    terms[0] = 0xFF
    rewrite(bm25_file, "BM25Index", arrays={"terms": terms})
    refused(bm25_file, "terms")


def test_a_good_file_loads_and_reloads(bm25_file, tmp_path):
    index = BM25Index.load(bm25_file)
    index.add(["one more quick document"])
    index.save(tmp_path / "again.rc")
    assert len(BM25Index.load(tmp_path / "again.rc")) == 6


# ---- parameters --------------------------------------------------------------------

@pytest.mark.parametrize("k1", [1e308, 1000.5, float("inf")])
def test_k1_range(k1):
    """k1 = 1e308 gave NaN scores and made the algorithms disagree."""
    with pytest.raises(ValueError, match="k1"):
        BM25Index(k1=k1)


@pytest.mark.parametrize("delta", [1e300, 1001.0])
def test_delta_range(delta):
    """delta = 1e300 made every bm25+ score infinite."""
    with pytest.raises(ValueError, match="delta"):
        BM25Index(variant="bm25+", delta=delta)


@pytest.mark.parametrize("variant", ["lucene", "okapi", "bm25l", "bm25+", "atire"])
def test_largest_k1_and_delta_keep_scores_finite_and_algorithms_agreeing(variant):
    index = BM25Index(k1=1000.0, delta=1000.0, b=1.0, variant=variant)
    index.add(TEXTS * 40)
    queries = ["quick dog", "brown brown fox", "lazy afternoon butter"]
    results = [index.search(queries, 7, algorithm=a) for a in ("exhaustive", "maxscore", "bmw", "bmp")]
    assert np.isfinite(results[0].scores).all()
    for other in results[1:]:
        np.testing.assert_array_equal(other.ids, results[0].ids)
        np.testing.assert_array_equal(other.scores, results[0].scores)


# ---- pre-tokenized input ---------------------------------------------------------------

def test_empty_token_refused_by_add():
    index = BM25Index()
    with pytest.raises(ValueError, match="empty"):
        index.add([["good", ""]])
    assert len(index) == 0 and index.vocabulary == []


@pytest.mark.parametrize("token, match", [("", "empty"), ("a\udc80b", "surrogate")])
def test_bad_query_tokens_refused_as_add_refuses_them(token, match):
    index = BM25Index()
    index.add([["good", "words"]])
    with pytest.raises(ValueError, match=match):
        index.search([["good", token]], 1)
    with pytest.raises(ValueError):
        index.add([["good", token]])
