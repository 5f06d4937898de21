"""FlatIndex.save / FlatIndex.load: round trips, memory mapping, damaged and foreign files.

Every damaged or foreign file must be refused with ragcore.IndexFileError and a
message that says what is wrong; saving must be atomic.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

import numpy as np
import pytest

from ragcore import FlatIndex, IndexFileError
from ragcore._util import fileformat as _fileformat
from _hits_check import assert_hits_equal

METRICS = ("ip", "cosine", "l2")
DTYPES = ("float32", "float16", "bfloat16")
DIM = 12


def corpus(n: int = 40, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


QUERIES = corpus(6, seed=123)


def build(metric="ip", dtype="float32", n=40) -> FlatIndex:
    index = FlatIndex(DIM, metric=metric, dtype=dtype)
    rng = np.random.default_rng(1)
    index.add(corpus(n), ids=rng.permutation(n) * 5 + 2)  # external ids, not in order
    return index


def assert_same_index(a: FlatIndex, b: FlatIndex) -> None:
    assert (a.dim, a.metric, a.dtype, len(a)) == (b.dim, b.metric, b.dtype, len(b))
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.stored_vectors(), b.stored_vectors())
    k = max(len(a) + 2, 1)
    assert_hits_equal(a.search(QUERIES, k), b.search(QUERIES, k))
    assert_hits_equal(a.search(QUERIES[0], 3, n_threads=1), b.search(QUERIES[0], 3, n_threads=1))


def leftovers(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp") or name.startswith(".ragcore-"))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One l2 / float16 index file (three arrays) and its bytes."""
    path = tmp_path_factory.mktemp("saved") / "index.rc"
    index = build("l2", "float16", n=9)
    index.save(path)
    return index, path.read_bytes()


def write_bytes(tmp_path, data: bytes, name="bad.rc"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---- round trips -------------------------------------------------------------


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mmap", (False, True))
def test_round_trip(tmp_path, metric, dtype, mmap):
    index = build(metric, dtype)
    path = tmp_path / "index.rc"
    index.save(path)
    assert path.stat().st_size > 0
    loaded = FlatIndex.load(path, mmap=mmap)
    assert isinstance(loaded, FlatIndex)
    assert_same_index(index, loaded)
    assert leftovers(tmp_path) == []


def test_round_trip_keeps_default_id_counter(tmp_path):
    # l2 only: add() after load() for every metric is test_add_after_load
    index = FlatIndex(DIM, metric="l2")
    index.add(corpus(3), ids=[100, 5, 7])
    index.remove([100])
    index.save(tmp_path / "a.rc")
    loaded = FlatIndex.load(tmp_path / "a.rc")
    np.testing.assert_array_equal(loaded.add(corpus(2, seed=9)), [101, 102])


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_add_after_load(tmp_path, metric, dtype):
    index = build(metric, dtype, n=10)
    index.save(tmp_path / "a.rc")
    loaded = FlatIndex.load(tmp_path / "a.rc")
    extra = corpus(3, seed=4)
    assert loaded.add(extra).tolist() == index.add(extra).tolist()
    assert_same_index(index, loaded)


def test_save_accepts_str_and_pathlike(tmp_path):
    index = build()
    index.save(str(tmp_path / "s.rc"))
    index.save(tmp_path / "p.rc")
    assert (tmp_path / "s.rc").read_bytes() == (tmp_path / "p.rc").read_bytes()
    assert_same_index(index, FlatIndex.load(str(tmp_path / "s.rc")))


def test_save_overwrites_existing_file(tmp_path):
    path = tmp_path / "index.rc"
    build(n=40).save(path)
    small = build("cosine", "bfloat16", n=5)
    small.save(path)
    assert_same_index(small, FlatIndex.load(path))
    assert leftovers(tmp_path) == []


def test_round_trip_after_remove(tmp_path):
    index = build("l2")
    index.remove(index.ids[::3])
    index.save(tmp_path / "r.rc")
    assert_same_index(index, FlatIndex.load(tmp_path / "r.rc"))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("mmap", (False, True))
def test_save_and_load_empty_index(tmp_path, metric, mmap):
    index = FlatIndex(DIM, metric=metric, dtype="float16")
    index.save(tmp_path / "empty.rc")
    assert leftovers(tmp_path) == []
    loaded = FlatIndex.load(tmp_path / "empty.rc", mmap=mmap)
    assert (loaded.dim, loaded.metric, loaded.dtype, len(loaded)) == (DIM, metric, "float16", 0)
    hits = loaded.search(QUERIES, 3)
    assert (hits.ids == -1).all() and np.isneginf(hits.scores).all()
    assert loaded.add(corpus(2)).tolist() == [0, 1]
    assert len(loaded) == 2


def _hand_written_file(kind: str, params: dict, specs: list, payload: bytes) -> bytes:
    """An index file assembled here, independently of write_index (see _fileformat's layout)."""
    header = json.dumps({"kind": kind, "params": params, "arrays": specs,
                         "payload_bytes": len(payload)}).encode()
    head = b"RAGCORE\0" + struct.pack("<II", 1, len(header)) + header
    head += b"\0" * (-len(head) % 64)
    body = head + payload
    return body + struct.pack("<I", zlib.crc32(body)) + b"RCND"


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("mmap", (False, True))
def test_load_empty_index_file(tmp_path, metric, mmap):
    """The reader alone: an empty index file (assembled by hand) loads and works."""
    specs = [{"name": "vectors", "dtype": "float32", "shape": [0, DIM], "offset": 0, "nbytes": 0},
             {"name": "ids", "dtype": "int64", "shape": [0], "offset": 0, "nbytes": 0}]
    if metric == "l2":
        specs.append({"name": "sq_norms", "dtype": "float32", "shape": [0], "offset": 0, "nbytes": 0})
    params = {"dim": DIM, "metric": metric, "dtype": "float32", "next_id": 7}
    path = write_bytes(tmp_path, _hand_written_file("FlatIndex", params, specs, b""))
    loaded = FlatIndex.load(path, mmap=mmap)
    assert (loaded.dim, loaded.metric, len(loaded)) == (DIM, metric, 0)
    assert (loaded.search(QUERIES, 2).ids == -1).all()
    assert loaded.ids.tolist() == []


def test_hand_written_file_matches_writer(tmp_path):
    """The hand-assembled layout above is the real one (so the test above is meaningful)."""
    vectors = corpus(2)
    ids = np.array([4, 9], np.int64)
    params = {"dim": DIM, "metric": "ip", "dtype": "float32", "next_id": 10}
    specs = [{"name": "vectors", "dtype": "float32", "shape": [2, DIM], "offset": 0, "nbytes": 96},
             {"name": "ids", "dtype": "int64", "shape": [2], "offset": 128, "nbytes": 16}]
    payload = vectors.tobytes() + b"\0" * 32 + ids.tobytes() + b"\0" * 48
    ours = _hand_written_file("FlatIndex", params, specs, payload)
    _fileformat.write_index(tmp_path / "w.rc", "FlatIndex", params, {"vectors": vectors, "ids": ids})
    assert (tmp_path / "w.rc").read_bytes() == ours


# ---- memory mapping ----------------------------------------------------------


@pytest.mark.parametrize("metric", METRICS)
def test_mmap_is_read_only_and_add_copies(tmp_path, metric):
    index = build(metric, "float32")
    path = tmp_path / "m.rc"
    index.save(path)
    on_disk = path.read_bytes()

    mapped = FlatIndex.load(path, mmap=True)
    assert not mapped._vectors.flags.writeable  # a read-only view of the file
    assert not mapped._ids.flags.writeable
    assert_same_index(index, mapped)
    with pytest.raises(ValueError, match="read-only"):
        mapped._vectors[0, 0] = 1.0

    extra = corpus(3, seed=7)
    new_ids = mapped.add(extra)
    index.add(extra)
    assert new_ids.tolist() == [index.ids[-3], index.ids[-2], index.ids[-1]]
    assert len(mapped) == len(index) == 43
    assert mapped._vectors.flags.writeable  # copied into memory
    assert_same_index(index, mapped)
    assert path.read_bytes() == on_disk  # the file never changes

    mapped.remove(new_ids[:1])
    assert len(mapped) == 42
    assert path.read_bytes() == on_disk


def test_non_mmap_load_is_independent_of_file(tmp_path):
    index = build("l2")
    path = tmp_path / "f.rc"
    index.save(path)
    loaded = FlatIndex.load(path)
    path.write_bytes(b"garbage" * 100)
    os.remove(path)
    assert_same_index(index, loaded)


def test_mmap_index_survives_overwrite_of_its_file(tmp_path):
    """save() renames a new file over the old one, so a mapped index keeps its data."""
    index = build("ip")
    path = tmp_path / "o.rc"
    index.save(path)
    mapped = FlatIndex.load(path, mmap=True)
    build("cosine", "float16", n=7).save(path)
    assert_same_index(index, mapped)
    assert FlatIndex.load(path).metric == "cosine"


def test_mmap_index_can_be_saved_elsewhere(tmp_path):
    index = build("l2", "bfloat16")
    index.save(tmp_path / "a.rc")
    mapped = FlatIndex.load(tmp_path / "a.rc", mmap=True)
    mapped.save(tmp_path / "b.rc")
    assert (tmp_path / "a.rc").read_bytes() == (tmp_path / "b.rc").read_bytes()


# ---- damaged files -----------------------------------------------------------


def _prefix_and_layout(data: bytes):
    magic, version, header_len = struct.unpack_from("<8sII", data, 0)
    payload_start = (16 + header_len + 63) // 64 * 64
    return header_len, payload_start


def cut_points(data: bytes) -> dict[str, int]:
    header_len, payload_start = _prefix_and_layout(data)
    size = len(data)
    return {
        "empty": 0,
        "inside magic": 5,
        "after magic": 8,
        "inside prefix": 14,
        "after prefix": 16,
        "inside header": 16 + header_len // 2,
        "end of header": 16 + header_len,
        "header padding": payload_start - 1,
        "start of payload": payload_start,
        "inside payload": (payload_start + size - 8) // 2,
        "before trailer": size - 8,
        "inside crc": size - 6,
        "inside end magic": size - 2,
        "last byte": size - 1,
    }


@pytest.mark.parametrize("mmap", (False, True))
def test_truncated_file_refused(tmp_path, saved, mmap):
    _, data = saved
    for where, cut in cut_points(data).items():
        path = write_bytes(tmp_path, data[:cut], f"cut{cut}.rc")
        with pytest.raises(IndexFileError, match=r"too short|truncated|damaged|bad magic") as err:
            FlatIndex.load(path, mmap=mmap)
        assert str(path) in str(err.value), where


@pytest.mark.parametrize("mmap", (False, True))
def test_every_truncation_refused(tmp_path, saved, mmap):
    _, data = saved
    path = tmp_path / "cut.rc"
    for cut in range(len(data)):
        path.write_bytes(data[:cut])
        with pytest.raises(IndexFileError):
            FlatIndex.load(path, mmap=mmap)


def test_truncated_payload_message(tmp_path, saved):
    _, data = saved
    path = write_bytes(tmp_path, data[: len(data) - 100])
    with pytest.raises(IndexFileError, match=r"truncated or damaged"):
        FlatIndex.load(path)


def test_appended_bytes_refused(tmp_path, saved):
    _, data = saved
    with pytest.raises(IndexFileError, match=r"truncated or damaged"):
        FlatIndex.load(write_bytes(tmp_path, data + b"\0" * 64))


def flip_offsets(data: bytes) -> dict[str, int]:
    header_len, payload_start = _prefix_and_layout(data)
    size = len(data)
    return {
        "magic": 2,
        "header length": 12,
        "header length high byte": 15,
        "header start": 16,
        "header middle": 16 + header_len // 2,
        "header end": 16 + header_len - 1,
        "header padding": payload_start - 1,
        "payload start": payload_start,
        "payload middle": (payload_start + size - 8) // 2,
        "payload end": size - 9,
        "checksum": size - 8,
        "checksum last": size - 5,
        "end magic": size - 4,
        "last byte": size - 1,
    }


@pytest.mark.parametrize("mmap", (False, True))
@pytest.mark.parametrize("where", list(flip_offsets(b"\0" * 16 + b"\0" * 1000)))
def test_flipped_byte_refused(tmp_path, saved, where, mmap):
    _, data = saved
    offset = flip_offsets(data)[where]
    bad = bytearray(data)
    bad[offset] ^= 0x40
    path = write_bytes(tmp_path, bytes(bad))
    with pytest.raises(IndexFileError, match=r"checksum mismatch|damaged|truncated|bad magic") as err:
        FlatIndex.load(path, mmap=mmap)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("mask", (0x01, 0x80, 0xFF))
def test_every_flipped_byte_refused(tmp_path, saved, mask):
    """Exhaustive: a change anywhere in the file is detected, never loaded, never a crash."""
    _, data = saved
    path = tmp_path / "flip.rc"
    for offset in range(len(data)):
        bad = bytearray(data)
        bad[offset] ^= mask
        path.write_bytes(bytes(bad))
        with pytest.raises(IndexFileError):
            FlatIndex.load(path)


def test_flipped_payload_byte_says_checksum(tmp_path, saved):
    _, data = saved
    _, payload_start = _prefix_and_layout(data)
    bad = bytearray(data)
    bad[payload_start + 3] ^= 0x10
    with pytest.raises(IndexFileError, match=r"checksum mismatch; the file is damaged"):
        FlatIndex.load(write_bytes(tmp_path, bytes(bad)))


def test_wrong_magic(tmp_path, saved):
    _, data = saved
    path = write_bytes(tmp_path, b"NOTRAGC\0" + data[8:])
    with pytest.raises(IndexFileError, match=r"not a ragcore index file \(bad magic bytes\)"):
        FlatIndex.load(path)


@pytest.mark.parametrize("version", (0, 2, 7, 2**32 - 1))
def test_wrong_format_version(tmp_path, saved, version):
    _, data = saved
    path = write_bytes(tmp_path, data[:8] + struct.pack("<I", version) + data[12:])
    with pytest.raises(IndexFileError, match=rf"format version {version} is not supported.*reads version 1"):
        FlatIndex.load(path)


def test_empty_file(tmp_path):
    path = write_bytes(tmp_path, b"")
    for mmap in (False, True):
        with pytest.raises(IndexFileError, match=r"too short to be a ragcore index \(0 bytes\)"):
            FlatIndex.load(path, mmap=mmap)


@pytest.mark.parametrize("size", (3, 24, 1000, 100_000))
def test_random_bytes(tmp_path, size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    path = write_bytes(tmp_path, data)
    for mmap in (False, True):
        with pytest.raises(IndexFileError, match=r"too short|bad magic"):
            FlatIndex.load(path, mmap=mmap)


def test_text_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("This is not an index.\n" * 50)
    with pytest.raises(IndexFileError, match=r"not a ragcore index file"):
        FlatIndex.load(path)


def test_random_bytes_after_valid_magic(tmp_path):
    rng = np.random.default_rng(5)
    for _ in range(50):
        tail = rng.integers(0, 256, int(rng.integers(8, 400)), dtype=np.uint8).tobytes()
        path = write_bytes(tmp_path, _fileformat.MAGIC + struct.pack("<I", 1) + tail)
        with pytest.raises(IndexFileError):
            FlatIndex.load(path)


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        FlatIndex.load(tmp_path / "nope.rc")


# ---- foreign and inconsistent contents (valid checksum) ----------------------


def test_other_kind_refused(tmp_path):
    path = tmp_path / "other.rc"
    _fileformat.write_index(path, "Other", {"dim": DIM}, {"data": np.arange(10, dtype=np.int64)})
    params, arrays = _fileformat.read_index(path, "Other")  # the file itself is fine
    assert params == {"dim": DIM} and arrays["data"].tolist() == list(range(10))
    with pytest.raises(IndexFileError, match=r"holds a Other, not a FlatIndex"):
        FlatIndex.load(path)


def _write_flat(path, params=None, **arrays):
    n = 4
    base = {"vectors": corpus(n), "ids": np.arange(n, dtype=np.int64)}
    base.update(arrays)
    base = {k: v for k, v in base.items() if v is not None}
    p = {"dim": DIM, "metric": "ip", "dtype": "float32", "next_id": n}
    p.update(params or {})
    _fileformat.write_index(path, "FlatIndex", p, base)


@pytest.mark.parametrize(
    "params, arrays",
    [
        ({"dim": DIM + 1}, {}),
        ({"dim": "12"}, {}),
        ({"metric": "dot"}, {}),
        ({"dtype": "float16"}, {}),
        ({}, {"vectors": None}),
        ({}, {"ids": None}),
        ({}, {"ids": np.arange(5, dtype=np.int64)}),
        ({}, {"vectors": corpus(4)[:, :6].copy()}),
        ({"metric": "l2"}, {}),  # l2 needs sq_norms
        ({"metric": "l2"}, {"sq_norms": np.ones(3, np.float32)}),
    ],
)
def test_inconsistent_flat_contents_refused(tmp_path, params, arrays):
    path = tmp_path / "inconsistent.rc"
    _write_flat(path, params, **arrays)
    with pytest.raises(IndexFileError, match=r"inconsistent index contents"):
        FlatIndex.load(path)


@pytest.mark.parametrize(
    "arrays",
    [
        {"ids": np.arange(4, dtype=np.float32)},
        {"ids": np.arange(4, dtype=np.uint8)},
        {"ids": np.arange(8, dtype=np.int64).reshape(4, 2)},
        {"ids": np.array([3, 1, 3, 2], dtype=np.int64)},  # duplicates
        {"ids": np.array([0, -1, 2, 3], dtype=np.int64)},  # -1 is the padding id
        {"sq_norms": np.ones(4, np.float16)},
    ],
)
def test_arrays_of_wrong_dtype_shape_or_values_refused_at_load(tmp_path, arrays):
    """A checksummed file whose arrays break the index's invariants is refused by load(),
    not by a later search (which fails, or returns duplicate / padding ids)."""
    path = tmp_path / "ids.rc"
    params = {"metric": "l2"} if "sq_norms" in arrays else {}
    _write_flat(path, params, **arrays)
    with pytest.raises(IndexFileError, match=r"inconsistent index contents"):
        FlatIndex.load(path)


def test_write_and_read_index_round_trip_raw_arrays(tmp_path):
    """Arrays the writer accepts with allowed dtypes come back unchanged."""
    path = tmp_path / "x.rc"
    arrays = {"a": np.arange(6, dtype=np.uint8).reshape(2, 3), "b": np.ones(3, np.float16)}
    _fileformat.write_index(path, "Thing", {"x": [1, 2]}, arrays)
    params, back = _fileformat.read_index(path, "Thing", mmap=True)
    assert params == {"x": [1, 2]}
    for name in arrays:
        assert back[name].dtype == arrays[name].dtype
        np.testing.assert_array_equal(back[name], arrays[name])


# ---- atomic save -------------------------------------------------------------


def test_save_leaves_no_temp_files(tmp_path):
    index = build()
    for i in range(3):
        index.save(tmp_path / f"i{i}.rc")
    assert sorted(os.listdir(tmp_path)) == ["i0.rc", "i1.rc", "i2.rc"]


def test_save_writes_temp_file_in_same_directory_then_renames(tmp_path, monkeypatch):
    calls = []
    real_replace = os.replace

    def spy(src, dst):
        calls.append((os.fspath(src), os.fspath(dst)))
        assert os.path.exists(src) and os.path.getsize(src) > 0
        return real_replace(src, dst)

    monkeypatch.setattr(_fileformat.os, "replace", spy)
    target = tmp_path / "index.rc"
    build().save(target)
    assert len(calls) == 1
    src, dst = calls[0]
    assert os.path.dirname(os.path.abspath(src)) == str(tmp_path)
    assert dst == str(target)
    assert leftovers(tmp_path) == []


def test_failed_rename_leaves_original_untouched(tmp_path, monkeypatch):
    target = tmp_path / "index.rc"
    original = build("ip", n=10)
    original.save(target)
    before = target.read_bytes()

    def boom(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(_fileformat.os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        build("l2", "float16", n=30).save(target)
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["index.rc"]
    assert_same_index(original, FlatIndex.load(target))


def test_failure_while_writing_leaves_original_untouched(tmp_path, monkeypatch):
    target = tmp_path / "index.rc"
    original = build("cosine", n=10)
    original.save(target)
    before = target.read_bytes()
    real_write, calls = _fileformat._write, []

    def failing_write(f, data, crc):
        calls.append(1)
        if len(calls) == 2:  # after the header, inside the payload
            raise OSError("no space left on device")
        return real_write(f, data, crc)

    monkeypatch.setattr(_fileformat, "_write", failing_write)
    with pytest.raises(OSError, match="no space left"):
        build("l2", n=30).save(target)
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["index.rc"]


def test_keyboard_interrupt_while_writing_leaves_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "new.rc"

    def interrupted(f, data, crc):
        raise KeyboardInterrupt

    monkeypatch.setattr(_fileformat, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build().save(target)
    assert os.listdir(tmp_path) == []


def test_save_into_missing_directory_fails_cleanly(tmp_path):
    with pytest.raises(FileNotFoundError):
        build().save(tmp_path / "no" / "such" / "dir" / "index.rc")
    assert os.listdir(tmp_path) == []
