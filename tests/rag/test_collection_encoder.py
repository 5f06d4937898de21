"""The Collection and the encoder that made its vectors: its fingerprint is recorded, another
encoder (or vectors of another dimension) is refused naming both, and reembed changes
models all at once."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from types import SimpleNamespace

import numpy as np
import pytest

import ragcore.encoders
from _collection_data import HashEncoder
from ragcore import Collection, CollectionError
from ragcore.rag.collection import fingerprint
from ragcore.rag.collection.indexes import Indexes

TEXTS = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota", "kappa alpha"]


def _meta(path, key):
    with sqlite3.connect(path / "collection.sqlite") as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def _forget_fingerprint(path):
    """Makes the collection one written before fingerprints were recorded."""
    with sqlite3.connect(path / "collection.sqlite") as db:
        db.execute("DELETE FROM meta WHERE key = 'fingerprint'")


def _made(path, encoder=None, n=len(TEXTS)) -> Collection:
    col = Collection.create(path, encoder=encoder or HashEncoder(), chunker="none")
    col.add(TEXTS[:n], ids=list(range(n)))
    return col


class ShuffledEncoder(HashEncoder):
    """Another model of HashEncoder's dimension: the same vectors, coordinates reversed."""

    fingerprint = "shuffled-hash"

    def encode(self, texts, warn: bool = True):
        return np.ascontiguousarray(super().encode(texts)[:, ::-1])


class FailingEncoder(HashEncoder):
    """Fails at its second call (a crash midway through a re-embedding)."""

    fingerprint = "failing-hash"

    def __init__(self, dim=16):
        super().__init__(dim)
        self.calls = 0

    def encode(self, texts, warn: bool = True):
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("the model server went away")
        return super().encode(texts)


# ---- the fingerprint ------------------------------------------------------------------


def test_create_records_the_encoders_fingerprint(tmp_path):
    _made(tmp_path / "c").close()
    assert json.loads(_meta(tmp_path / "c", "fingerprint")) == {
        "model": "HashEncoder", "dim": 24, "normalized": None, "checksum": None}


def test_a_model_file_is_identified_by_its_checksum_not_its_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "model.onnx").write_bytes(b"weights one")
    shutil.copytree(tmp_path / "a", tmp_path / "b")

    def bi_encoder(directory, normalize=True):
        return SimpleNamespace(encode=None, dim=384, normalize=normalize, pooling="mean",
                               model=SimpleNamespace(path=tmp_path / directory / "model.onnx"))

    fp = fingerprint.of(bi_encoder("a"))
    assert fp == {"model": str(tmp_path / "a" / "model.onnx"), "dim": 384, "normalized": True,
                  "checksum": hashlib.sha256(b"weights one").hexdigest(), "pooling": "mean"}
    assert fingerprint.differences(fp, fingerprint.of(bi_encoder("b"))) == []  # moved: same
    assert fingerprint.differences(fp, fingerprint.of(bi_encoder("a", False))) == [
        "normalisation (True vs False)"]
    (tmp_path / "b" / "model.onnx").write_bytes(b"weights two")
    assert fingerprint.differences(fp, fingerprint.of(bi_encoder("b"))) == [
        "the model file's checksum"]


def test_an_encoder_may_declare_its_model(tmp_path):
    assert fingerprint.of(ShuffledEncoder())["model"] == "shuffled-hash"
    assert fingerprint.of(SimpleNamespace(encode=None, fingerprint={"model": "m", "dim": 8}))[
        "dim"] == 8  # a wrapper gives the whole fingerprint of what it wraps


# ---- opening with another encoder --------------------------------------------------------


@pytest.mark.parametrize("readonly", [False, True])
def test_opening_with_another_encoder_is_refused_naming_both(tmp_path, readonly):
    _made(tmp_path / "c").close()
    with pytest.raises(CollectionError) as err:
        Collection.open(tmp_path / "c", readonly=readonly, encoder=HashEncoder(16))
    message = str(err.value)
    assert "encoder is HashEncoder (16-d)" in message
    assert "made by HashEncoder (24-d)" in message and "the dimension (24 vs 16)" in message
    assert "reembed(encoder)" in message
    with pytest.raises(CollectionError, match=r"ShuffledEncoder|shuffled-hash.*HashEncoder"):
        Collection.open(tmp_path / "c", readonly=readonly, encoder=ShuffledEncoder())
    with Collection.open(tmp_path / "c", readonly=readonly, encoder=HashEncoder()) as col:
        assert col.search("kappa alpha", k=1, mode="dense")[0].id == 3  # the lock was released


def test_a_collection_without_a_fingerprint_opens_and_records_one_at_its_first_add(tmp_path):
    _made(tmp_path / "c").close()
    _forget_fingerprint(tmp_path / "c")
    with pytest.raises(CollectionError, match=r"24 dimensions \(not recorded\).*24 vs 16"):
        Collection.open(tmp_path / "c", encoder=HashEncoder(16))
    with Collection.open(tmp_path / "c", encoder=ShuffledEncoder()) as col:  # same dimension
        assert len(col) == 4
    assert _meta(tmp_path / "c", "fingerprint") is None  # opening writes nothing
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        col.add(["omega"], ids=[9])
    assert json.loads(_meta(tmp_path / "c", "fingerprint"))["model"] == "HashEncoder"
    with pytest.raises(CollectionError, match="shuffled-hash"):
        Collection.open(tmp_path / "c", encoder=ShuffledEncoder())


def test_the_bundled_encoder_must_be_the_model_of_the_vectors(tmp_path, monkeypatch):
    # The bundled model that loads depends on the machine; a stand-in plays it here.
    monkeypatch.setattr(ragcore.encoders, "default_encoder", lambda: ShuffledEncoder())
    with Collection.create(tmp_path / "c", chunker="none") as col:
        col.add(TEXTS, ids=[0, 1, 2, 3])
    assert json.loads(_meta(tmp_path / "c", "fingerprint"))["model"] == "shuffled-hash"
    monkeypatch.setattr(ragcore.encoders, "default_encoder", lambda: HashEncoder())
    with Collection.open(tmp_path / "c") as col:
        assert col.search("alpha", k=1, mode="sparse")[0].id in (0, 3)  # needs no encoder
        with pytest.raises(CollectionError, match="the bundled encoder is HashEncoder.*made by "
                                                  "shuffled-hash"):
            col.search("alpha", mode="dense")


# ---- embeddings= of another dimension ----------------------------------------------------


def test_embeddings_of_another_dimension_than_the_encoders_are_refused(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as col:
        wrong = np.full((2, 128), 1 / np.sqrt(128), np.float32)
        with pytest.raises(CollectionError, match=r"embeddings has 128 dimensions per vector, "
                                                  r"but this collection's vectors have 24"):
            col.add(["one", "two"], ids=[1, 2], embeddings=wrong)  # the first add: no vector yet
        assert len(col) == 0 and _meta(tmp_path / "c", "dim") is None  # nothing was written
        right = np.float32(HashEncoder().encode(["one", "two"]))
        col.add(["one", "two"], ids=[1, 2], embeddings=right)
        with pytest.raises(CollectionError, match="128 dimensions.*have 24"):
            col.upsert(["one"], ids=[1], embeddings=wrong[:1])
        assert col.search("one", k=1, mode="dense")[0].id == 1  # later calls still work


# ---- reembed -----------------------------------------------------------------------------


def test_reembed_changes_the_model_and_the_dimension(tmp_path):
    col = _made(tmp_path / "c")
    new = HashEncoder(16)
    assert col.reembed(new, batch_size=3) == 4
    assert json.loads(_meta(tmp_path / "c", "fingerprint"))["dim"] == 16
    assert _meta(tmp_path / "c", "dim") == "16"
    hit = col.search_by_vector(new.encode([TEXTS[2]])[0], k=1)[0]
    assert hit.id == 2 and hit.score == pytest.approx(1.0, abs=1e-5)
    col.add(["omega alpha"], ids=[7])  # adds and queries use the new encoder
    assert col.search("omega", k=1, mode="dense")[0].id == 7
    col.close()
    with pytest.raises(CollectionError, match="made by HashEncoder \\(16-d\\)"):
        Collection.open(tmp_path / "c", encoder=HashEncoder())
    with Collection.open(tmp_path / "c", encoder=HashEncoder(16)) as col:
        assert col.search("omega", k=1, mode="dense")[0].id == 7
        col.verify()


def test_reembed_shows_progress(tmp_path, capsys):
    with _made(tmp_path / "c") as col:
        col.reembed(HashEncoder(16), show_progress=True, batch_size=3)
    err = capsys.readouterr().err
    assert "re-embedding" in err and "4/4" in err


def test_a_reembedding_that_fails_midway_changes_nothing(tmp_path):
    col = _made(tmp_path / "c")
    before = _meta(tmp_path / "c", "fingerprint")
    failing = FailingEncoder()
    with pytest.raises(RuntimeError, match="went away"):
        col.reembed(failing, batch_size=2)
    assert failing.calls == 2 and _meta(tmp_path / "c", "fingerprint") == before
    assert col.search("kappa alpha", k=1, mode="dense")[0].score == pytest.approx(1.0, abs=1e-5)
    col.close()
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        col.verify()


def test_a_crash_after_the_reembedding_commits_rebuilds_the_dense_index(tmp_path, monkeypatch):
    col = _made(tmp_path / "c")
    col.flush()
    monkeypatch.setattr(Indexes, "save", lambda *args: None)  # the process dies before saving
    col.reembed(ShuffledEncoder())  # the same dimension: the old file would load
    col.close()
    monkeypatch.undo()
    with Collection.open(tmp_path / "c", encoder=ShuffledEncoder()) as col:
        assert col.repaired
        hit = col.search("zeta eta theta iota", k=1, mode="dense")[0]
        assert hit.id == 2 and hit.score == pytest.approx(1.0, abs=1e-5)


def test_a_reader_follows_a_reembedding(tmp_path):
    col = _made(tmp_path / "c")
    with Collection.open(tmp_path / "c", readonly=True, encoder=HashEncoder()) as reader:
        assert reader.search("delta", k=1, mode="dense")[0].id == 1
        col.reembed(HashEncoder(16))
        assert reader.search("delta", k=1, mode="sparse")[0].id == 1
        hit = reader.search_by_vector(HashEncoder(16).encode(["delta epsilon"])[0], k=1)[0]
        assert hit.id == 1 and hit.score == pytest.approx(1.0, abs=1e-5)
        with pytest.raises(CollectionError, match=r"HashEncoder\(dim=16\); pass it again"):
            reader.search("delta", mode="dense")  # its encoder is the old model's
    col.close()


class _Tokenizer:
    """Tokens: runs of `width` characters (spaces included)."""

    max_length, special_tokens = 512, 2

    def __init__(self, width):
        self.width = width

    def token_spans(self, text):
        return [(i, min(i + self.width, len(text))) for i in range(0, len(text), self.width)]


class TokenizingEncoder(HashEncoder):
    """HashEncoder with a tokenizer, as a BiEncoder has (the default chunker counts its
    tokens)."""

    def __init__(self, width):
        super().__init__()
        self.tokenizer = _Tokenizer(width)
        self.fingerprint = f"tokens-of-{width}"


def test_after_reembed_new_documents_are_chunked_with_the_new_models_tokens(tmp_path):
    text = "alpha beta gamma delta. " * 40  # 960 characters
    with Collection.create(tmp_path / "c", encoder=TokenizingEncoder(100)) as col:
        col.add([text], ids=[1])
        col.reembed(TokenizingEncoder(1))
        col.add([text], ids=[2])
        positions = [m.position for m in col.search("alpha", k=50, mode="sparse")
                     if m.id == 2]
    assert len(positions) > 1  # 960 tokens of one character: more than one 200-token chunk


def test_reembed_arguments(tmp_path):
    with _made(tmp_path / "c") as col:
        with pytest.raises(TypeError, match="encoder must have encode"):
            col.reembed("all-MiniLM-L6-v2")
        with pytest.raises(ValueError, match="batch_size"):
            col.reembed(HashEncoder(16), batch_size=0)
    with Collection.open(tmp_path / "c", readonly=True) as reader:
        with pytest.raises(CollectionError, match="readonly"):
            reader.reembed(HashEncoder(16))
