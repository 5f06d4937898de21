"""The bundled encoder a Collection uses when given none: its vectors against the fused
fp32 model's on real text, their independence of batching and of chunk order, and the
precision an existing collection keeps."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ragcore.encoders import defaults, models  # noqa: E402
from ragcore.rag.collection import Collection  # noqa: E402
from ragcore.rag.collection import store  # noqa: E402

# The stated agreement of the default path with fp32 (derived.INT8_MIN_COSINE's value,
# written out so a looser recipe threshold cannot loosen this test with it).
MIN_COSINE = 0.995


@pytest.fixture(scope="module")
def paragraphs():
    """Real prose and code comments: a seeded sample of the standard library's docstrings
    (the encode benchmark's texts), of every length up to past max_length."""
    from ragcore.cli.bench.stdlib_vectors import stdlib_paragraphs

    pool = stdlib_paragraphs()
    pick = np.random.default_rng(7).choice(len(pool), 48, replace=False)
    texts = [pool[i] for i in sorted(pick)]
    return texts + [" ".join(texts[:6])]  # one document of several chunks


def _stored(path) -> dict:
    """chunk text -> stored vector, and the chunk rows in id order."""
    conn = store.connect(str(path / store.DB_NAME), readonly=True)
    try:
        rows = conn.execute("SELECT c.chunk_id, c.doc_rowid, c.position, c.text, e.vector "
                            "FROM chunks c JOIN embeddings e ON e.hash = c.hash "
                            "ORDER BY c.chunk_id").fetchall()
    finally:
        conn.close()
    return rows


def test_default_collection_vectors_stay_within_the_stated_cosine_of_fp32(tmp_path, paragraphs):
    with Collection.create(tmp_path / "c") as col:
        col.add(paragraphs, ids=list(range(len(paragraphs))))
        default_model = col._get_encoder().model.path
    rows = _stored(tmp_path / "c")
    texts = [r[3] for r in rows]
    got = np.stack([np.frombuffer(r[4], dtype=np.float32) for r in rows])
    want = defaults.default_encoder("fp32").encode(texts, warn=False)
    cosines = np.sum(got * want, axis=1)
    assert cosines.min() >= MIN_COSINE, (default_model, cosines.min())
    expected = "int8" if defaults.auto_precision() == "int8" else "fp32"
    assert models.precision_of_file(str(default_model)) == expected


def test_chunk_order_and_batching_change_no_id_and_no_stored_byte(tmp_path, paragraphs):
    """One call, one call in reverse order and one call per document: the same ids, chunk
    rows and vector bytes per chunk (the default encoder's vectors do not depend on the
    texts encoded with them)."""
    ids = list(range(len(paragraphs)))
    with Collection.create(tmp_path / "whole") as col:
        col.add(paragraphs, ids=ids)
    with Collection.create(tmp_path / "reversed") as col:
        col.add(paragraphs[::-1], ids=ids[::-1])
    with Collection.create(tmp_path / "one_by_one") as col:
        for i, text in zip(ids, paragraphs):
            col.add([text], ids=[i])
    whole = _stored(tmp_path / "whole")
    vectors = {r[3]: r[4] for r in whole}
    for other in ("reversed", "one_by_one"):
        rows = _stored(tmp_path / other)
        assert {r[3]: r[4] for r in rows} == vectors, other
    # documents added in the same order get the same chunk ids and rows
    assert [r[:4] for r in _stored(tmp_path / "one_by_one")] == [r[:4] for r in whole]


def test_a_collection_made_with_fp32_keeps_fp32(tmp_path, paragraphs, monkeypatch):
    """A collection made with the bundled encoder when its default was the fused fp32
    model opens without an encoder and encodes its queries and new texts with fp32 again."""
    import ragcore.encoders

    fp32 = defaults.default_encoder("fp32")
    with monkeypatch.context() as earlier:
        earlier.setattr(ragcore.encoders, "default_encoder", lambda: fp32)
        with Collection.create(tmp_path / "c") as col:
            col.add(paragraphs[:4], ids=[0, 1, 2, 3])
    with Collection.open(tmp_path / "c") as col:
        assert col.search(paragraphs[2], k=1, mode="dense")[0].id == 2
        assert col._get_encoder().model.path == fp32.model.path
        col.add(paragraphs[4:5], ids=[4])
    rows = _stored(tmp_path / "c")
    np.testing.assert_array_equal(np.frombuffer(rows[-1][4], dtype=np.float32),
                                  fp32.encode(paragraphs[4:5], warn=False)[0])


def test_precision_of_file_names_only_bundled_models(tmp_path):
    assert models.precision_of_file(str(models.derived_path(models.FUSED_INT8_BLOCKS_NAME))) == "int8"
    assert models.precision_of_file(str(models.derived_path(models.FUSED_INT8_NAME))) == \
        "int8-ffn-fp32"
    assert models.precision_of_file(str(models.derived_path(models.FUSED_NAME))) == "fp32"
    assert models.precision_of_file(str(tmp_path / "all-MiniLM-L6-v2-fused-x" / "model.onnx")) is None
    assert models.precision_of_file(str(tmp_path / "model.onnx")) is None
    assert defaults.bundled_precision({"model": "HashEncoder"}) is None
    assert defaults.bundled_precision(None) is None
