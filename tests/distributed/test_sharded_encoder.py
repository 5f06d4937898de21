"""A ShardedCollection opened without an encoder encodes queries with the bundled model at the
precision its shards' vectors were made with, not at the precision this process's default
would pick (the default is "auto": int8 where the CPU has VNNI or AMX, else fp32; a collection
made under an earlier default or on another machine keeps its own)."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("onnxruntime")

from ragcore.distributed import ShardedCollection  # noqa: E402
from ragcore.encoders import defaults, models  # noqa: E402

pytestmark = pytest.mark.usefixtures("local_ray")  # tests/distributed/conftest.py

TEXTS = ["The quick brown fox jumps over the lazy dog.",
         "Binary heaps keep the smallest item at the root.",
         "SQLite writes a journal before it changes the database file."]


def test_queries_use_the_precision_the_documents_were_encoded_with(tmp_path, monkeypatch):
    path = tmp_path / "sharded"
    with ShardedCollection.create(path, n_shards=2) as sc:  # the shards' own default
        sc.add(TEXTS, ids=[0, 1, 2])
    made_with = defaults.auto_precision()
    other = "fp32" if made_with == "int8" else "int8"
    monkeypatch.setattr(defaults, "auto_precision", lambda: other)  # this process only
    with ShardedCollection.open(path) as sc:
        results = [sc.search(text, k=1, mode="dense") for text in TEXTS]
        used = models.precision_of_file(str(sc._encoder.model.path))
    assert used == made_with
    # a document's own text as the query: the model its vector was made with gives a
    # cosine of 1 (int8 against fp32 gives about 0.998)
    for i, result in enumerate(results):
        assert result[0].id == i
        assert result[0].score == pytest.approx(1.0, abs=1e-5)
