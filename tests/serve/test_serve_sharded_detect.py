"""Which directories ragcore serve takes for a ShardedCollection (no Ray: the manifest is
read before anything starts)."""

from __future__ import annotations

import json
import os

import pytest

from _serve_data import WordHashEncoder, documents, make_sharded

from ragcore import CollectionError
from ragcore.distributed import is_sharded_collection


def test_a_sharded_directory_is_told_from_a_collection(tmp_path, collection_path):
    texts, ids, metadata = documents(12)
    make_sharded(tmp_path / "sharded", texts, ids, metadata, encoder=WordHashEncoder())
    assert is_sharded_collection(tmp_path / "sharded")
    assert not is_sharded_collection(collection_path)
    assert not is_sharded_collection(tmp_path / "missing")


def test_a_damaged_manifest_is_refused_before_anything_starts(tmp_path, capsys):
    from ragcore.cli.main import main

    path = tmp_path / "sharded"
    texts, ids, metadata = documents(6)
    make_sharded(path, texts, ids, metadata, encoder=WordHashEncoder())
    manifest = path / "sharded-collection.json"
    data = json.loads(manifest.read_text())
    data["n_shards"] = 3  # two shards listed
    manifest.write_text(json.dumps(data))
    with pytest.raises(CollectionError, match="n_shards"):
        is_sharded_collection(path)
    assert main(["serve", os.fspath(path), "--port", "1"]) == 2
    assert "the shard list does not match n_shards" in capsys.readouterr().err


def test_the_in_process_backend_points_to_ragcore_serve(tmp_path):
    from ragcore.serve import LocalBackend

    texts, ids, metadata = documents(6)
    make_sharded(tmp_path / "sharded", texts, ids, metadata, encoder=WordHashEncoder())
    with pytest.raises(ValueError, match="ragcore serve"):
        LocalBackend(tmp_path / "sharded", encoder=WordHashEncoder())
