"""IVFIndex(dtype="rabitq"): arguments, save / load, damaged and crafted files."""

import mmap

import numpy as np
import pytest

import ragcore
from ragcore import IndexFileError
from _crafted import rewrite, set_element, stored
from _hits_check import assert_hits_equal
from _rabitq_fixtures import data, index  # noqa: F401 (fixtures)

KIND = "IVFIndex"


@pytest.mark.parametrize("kwargs, match", [
    ({"bits": 0}, "bits must be an integer from 1 to 8"),
    ({"bits": 9}, "bits must be an integer from 1 to 8"),
    ({"bits": 2.0}, "bits must be"),
    ({"bits": True}, "bits must be"),
    ({"epsilon": -1.0}, "epsilon must be"),
    ({"epsilon": float("inf")}, "epsilon must be"),
    ({"rescore": 0}, "rescore must be"),
    ({"rescore": "some"}, "rescore must be"),
    ({"rescore": 1 << 63}, "rescore must be"),
])
def test_constructor_arguments_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ragcore.IVFIndex(12, 8, "ip", "rabitq", **kwargs)


def test_dim_limit_and_training_size_are_checked(data):
    with pytest.raises(ValueError, match="dim"):
        ragcore.IVFIndex(1 << 17, 8, dtype="rabitq")
    index = ragcore.IVFIndex(12, 8, dtype="rabitq")
    with pytest.raises(ValueError, match="needs at least 8"):
        index.train(data[:5])
    with pytest.raises(RuntimeError, match="not trained"):
        index.search(data[:1], 3)


def test_search_arguments_are_checked(index, data):
    with pytest.raises(ValueError, match="nprobe must be between 1 and nlist=8"):
        index.search(data[:1], 3, nprobe=9)
    with pytest.raises(ValueError, match="rescore must be"):
        index.search(data[:1], 3, rescore=-2)
    with pytest.raises(ValueError, match="k"):
        index.search(data[:1], 0)


def test_save_load_roundtrip(tmp_path, index, data):
    path = tmp_path / "rabitq.rc"
    index.save(path)
    loaded = ragcore.IVFIndex.load(path)
    assert repr(loaded) == repr(index) and loaded.bits == 3
    assert_hits_equal(loaded.search(data[:9], 4, nprobe=3), index.search(data[:9], 4, nprobe=3))
    assert loaded.add(data[:1])[0] == 400


def test_untrained_index_roundtrip(tmp_path):
    ragcore.IVFIndex(8, 4, dtype="rabitq", bits=2).save(tmp_path / "empty.rc")
    loaded = ragcore.IVFIndex.load(tmp_path / "empty.rc")
    assert not loaded.is_trained and loaded.bits == 2


def test_damaged_file_is_refused(tmp_path, index):
    path = tmp_path / "rabitq.rc"
    index.save(path)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(IndexFileError, match="checksum"):
        ragcore.IVFIndex.load(path)


def _crafted_cases(index):
    n = len(index)
    rows_bytes = index.bytes_per_vector()["scanned"]
    return [
        ({"params": {"bits": 9}}, "params.bits"),
        ({"params": {"bits": 2}}, "rows"),  # rows of 3-bit codes read as 2-bit ones
        ({"params": {"rescore": "everything"}}, "params.rescore"),
        ({"params": {"epsilon": -1}}, "params.epsilon"),
        ({"params": {"dim": 1 << 17}}, "params.dim"),
        ({"arrays": {"rows": np.zeros((n, rows_bytes - 1), np.uint8)}}, "rows"),
        ({"arrays": {"rotation": np.eye(16, 12, dtype=np.float32) * 2},
          "drop": ["rabitq_layout"]}, "rotation"),  # layout 1: not orthonormal
        ({"arrays": {"rotation": np.zeros((8, 12), np.float32)}, "drop": ["rabitq_layout"]},
         "rotation"),
        ({"arrays": {"offsets": np.array([0, 5, 3] + [n] * 6, np.int64)}}, "offsets"),
        ({"arrays": {"exact": np.zeros((n - 1, 12), np.float32)}}, "exact"),
        ({"drop": ["rotation"]}, "rotation"),
        ({"params": {"training": {"iterations": "many"}}}, "params.training.iterations"),
        ({"params": {"training": {"objective": [1.0, "x"]}}}, "params.training.objective"),
    ]


@pytest.mark.parametrize("mmap_load", [False, True])
def test_crafted_files_are_refused(tmp_path, index, mmap_load):
    path = tmp_path / "rabitq.rc"
    for change, field in _crafted_cases(index):
        index.save(path)
        rewrite(path, KIND, **change)
        with pytest.raises(IndexFileError, match=field):
            ragcore.IVFIndex.load(path, mmap=mmap_load)


@pytest.mark.parametrize("column, value", [(0, np.nan), (1, -1.0), (2, np.inf), (2, 1e30)])
def test_crafted_factors_are_refused(tmp_path, index, column, value):
    path = tmp_path / "rabitq.rc"
    index.save(path)
    _, arrays = stored(path, KIND)
    rows = arrays["rows"]
    fac = np.ascontiguousarray(rows[:, -12:]).view(np.float32)
    fac[3, column] = value
    rows[:, -12:] = fac.view(np.uint8)
    rewrite(path, KIND, arrays={"rows": rows})
    with pytest.raises(IndexFileError, match="factors"):
        ragcore.IVFIndex.load(path)


def test_any_code_bits_load_and_search_exactly(tmp_path, index, data):
    # Codes are never followed as offsets: random code bytes only change which rows
    # are re-scored; "all" re-scoring still returns the exact answer.
    path = tmp_path / "rabitq.rc"
    index.save(path)
    _, arrays = stored(path, KIND)
    rows = arrays["rows"]
    rows[:, :-12] = np.random.default_rng(0).integers(0, 256, rows[:, :-12].shape, dtype=np.uint8)
    rewrite(path, KIND, arrays={"rows": rows})
    loaded = ragcore.IVFIndex.load(path)
    assert_hits_equal(loaded.search(data[:5], 4, nprobe=8, rescore="all"),
                      index.search(data[:5], 4, nprobe=8, rescore="all"))


def _mapping_of(arr):
    """The object an array's memory comes from (an mmap.mmap for a mapped file)."""
    while isinstance(arr, np.ndarray):
        arr = arr.base
    return arr.obj if isinstance(arr, memoryview) else arr


def test_mmap_load_maps_the_exact_rows_and_codes(tmp_path, index, data):
    path = tmp_path / "rabitq.rc"
    index.save(path)
    mapped = ragcore.IVFIndex.load(path, mmap=True)
    for name in ("exact", "rows", "ids"):
        arr = getattr(mapped._lists, name)
        assert not arr.flags.writeable and isinstance(_mapping_of(arr), mmap.mmap), name
    assert not isinstance(_mapping_of(ragcore.IVFIndex.load(path)._lists.exact), mmap.mmap)
    for rescore in ("bound", "all", 2):
        assert_hits_equal(mapped.search(data[:30], 4, nprobe=3, rescore=rescore),
                          index.search(data[:30], 4, nprobe=3, rescore=rescore))
    assert_hits_equal(mapped.search(data[:1], 4), index.search(data[:1], 4))  # one query
    # Changes build a new snapshot in memory; the mapped file is never written.
    before = path.read_bytes()
    mapped.add(data[:2])
    mapped.remove([0, 1])
    assert len(mapped) == len(index) and path.read_bytes() == before
    assert not isinstance(_mapping_of(mapped._lists.exact), mmap.mmap)
