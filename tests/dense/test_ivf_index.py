"""IVFIndex: argument checks, add/remove, save/load."""

import numpy as np
import pytest

import ragcore
from ragcore import IndexFileError
from _hits_check import assert_hits_equal
from _ivf_data import clustered


@pytest.fixture
def data():
    return clustered(400, 8, 6, seed=0)


@pytest.fixture
def index(data):
    ix = ragcore.IVFIndex(8, 8, "l2", "sq8", seed=1)
    ix.train(data)
    ix.add(data)
    return ix


def test_untrained_index_says_to_train(data):
    ix = ragcore.IVFIndex(8, 4)
    assert not ix.is_trained
    for call in (lambda: ix.search(data[:1], 3), lambda: ix.add(data)):
        with pytest.raises(RuntimeError, match=r"not trained; call train\(sample\)"):
            call()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"nprobe": 0}, ValueError, "nprobe must be >= 1"),
    ({"nprobe": 9}, ValueError, "nprobe must be between 1 and nlist=8, got 9"),
    ({"nprobe": 2.0}, TypeError, "nprobe must be an integer"),
    ({"rescore": 0}, ValueError, "rescore must be >= 1"),
    ({"allow": np.array([1.5])}, TypeError, "allow must hold integer ids or be a boolean mask"),
    ({"allow": np.array([-1])}, ValueError, "allow must hold non-negative ids"),
    ({"allow": np.ones((2, 2), bool)}, ValueError, "allow must be 1-D"),
    ({"n_threads": -1}, ValueError, "n_threads must be >= 0"),
])
def test_search_arguments_are_checked(index, data, kwargs, error, match):
    with pytest.raises(error, match=match):
        index.search(data[:1], 3, **kwargs)


@pytest.mark.parametrize("args, error, match", [
    ((8, 0), ValueError, "nlist must be >= 1"),
    ((8, 4, "dot"), ValueError, "unknown metric 'dot'"),
    ((8, 4, "ip", "int4"), ValueError, "unknown dtype 'int4'"),
    # The 8-bit codes are called "sq8" (as in the module _sq8 and Storage.SQ8).
    ((8, 4, "ip", "int8"), ValueError,
     "unknown dtype 'int8'; expected one of 'float32', 'float16', 'bfloat16', 'sq8'"),
])
def test_constructor_arguments_are_checked(args, error, match):
    with pytest.raises(error, match=match):
        ragcore.IVFIndex(*args)


def test_train_needs_nlist_vectors_and_an_empty_index(data, index):
    with pytest.raises(ValueError, match="needs at least 8"):
        ragcore.IVFIndex(8, 8).train(data[:7])
    with pytest.raises(RuntimeError, match="already holds 400 vectors"):
        index.train(data)


def test_add_and_remove(data):
    ix = ragcore.IVFIndex(8, 4, seed=2)
    ix.train(data)
    first = ix.add(data[:100])
    more = ix.add(data[100:150], ids=np.arange(1000, 1050))
    np.testing.assert_array_equal(first, np.arange(100))
    assert len(ix) == 150 and ix.list_sizes().sum() == 150
    with pytest.raises(ValueError, match="already in the index"):
        ix.add(data[:1], ids=[5])
    ix.remove(more[:25])
    with pytest.raises(ValueError, match="not in the index"):
        ix.remove([1000])
    assert len(ix) == 125
    hits = ix.search(data[:150], 200, nprobe=4)
    assert set(hits.ids[0][hits.ids[0] >= 0]) == set(range(100)) | set(range(1025, 1050))
    assert ix.add(data[:1])[0] == 1050


def test_save_load_roundtrip(tmp_path, index, data):
    path = tmp_path / "ivf.rc"
    index.save(path)
    loaded = ragcore.IVFIndex.load(path)
    assert repr(loaded) == repr(index)
    assert loaded.training == index.training
    assert_hits_equal(loaded.search(data[:5], 4, nprobe=3), index.search(data[:5], 4, nprobe=3))
    assert loaded.add(data[:1])[0] == 400


def test_untrained_index_roundtrip(tmp_path):
    ragcore.IVFIndex(8, 4).save(tmp_path / "empty.rc")
    assert not ragcore.IVFIndex.load(tmp_path / "empty.rc").is_trained


def test_damaged_or_foreign_files_are_refused(tmp_path, index, data):
    path = tmp_path / "ivf.rc"
    index.save(path)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tmp_path / "bad.rc").write_bytes(bytes(raw))
    with pytest.raises(IndexFileError, match="checksum"):
        ragcore.IVFIndex.load(tmp_path / "bad.rc")
    flat = ragcore.FlatIndex(8)
    flat.add(data)
    flat.save(tmp_path / "flat.rc")
    with pytest.raises(IndexFileError, match="not a IVFIndex"):
        ragcore.IVFIndex.load(tmp_path / "flat.rc")


def test_files_from_before_the_sq8_name_still_load(data, tmp_path):
    from ragcore._util.fileformat import read_index, write_index

    ix = ragcore.IVFIndex(8, 4, dtype="sq8", seed=2)
    ix.train(data)
    ix.add(data)
    ix.save(tmp_path / "new.rc")
    params, arrays = read_index(tmp_path / "new.rc", "IVFIndex")
    write_index(tmp_path / "old.rc", "IVFIndex", {**params, "dtype": "int8"}, arrays)
    old = ragcore.IVFIndex.load(tmp_path / "old.rc")
    assert old.dtype == "sq8"
    assert_hits_equal(old.search(data[:5], 7, nprobe=4), ix.search(data[:5], 7, nprobe=4))


@pytest.mark.parametrize("dtype", ["float32", "sq8"])
def test_index_keeps_its_own_copy_of_the_vectors(data, dtype):
    ix = ragcore.IVFIndex(8, 4, dtype=dtype)
    ix.train(data)
    x = data.copy()
    ix.add(x)
    before = ix.search(data[:3], 5, nprobe=4)
    x[:] = 0
    assert_hits_equal(ix.search(data[:3], 5, nprobe=4), before)
