"""HNSWIndex save/load: round trips, and damaged or crafted files refused."""

import os
import re

import numpy as np
import pytest

import ragcore
from ragcore._util.fileformat import read_index, write_index
from _crafted import rewrite, stored
from _hnsw_data import clustered


def _built(metric="ip", dtype="float32", n=500):
    x = clustered(n, 16, seed=1)
    index = ragcore.HNSWIndex(16, metric, M=6, ef_construction=32, dtype=dtype, seed=3)
    index.add(x, ids=np.arange(n) * 5 + 1, n_threads=1)
    index.remove(np.arange(0, n, 7) * 5 + 1)  # free slots in the file
    return index, x


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip_gives_the_same_answers(tmp_path, metric, dtype, mmap):
    index, x = _built(metric, dtype)
    path = tmp_path / "g.rc"
    index.save(path)
    loaded = ragcore.HNSWIndex.load(path, mmap=mmap)
    assert (loaded.M, loaded.ef_construction, loaded.dtype, loaded.metric, len(loaded)) == \
        (index.M, index.ef_construction, index.dtype, index.metric, len(index))
    for ef in (4, 40):
        a, b = index.search(x[:30], 5, ef=ef), loaded.search(x[:30], 5, ef=ef)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
    # Later adds behave as on the original (slots, levels and ids continue alike).
    more = clustered(40, 16, seed=9)
    np.testing.assert_array_equal(index.add(more, n_threads=1), loaded.add(more, n_threads=1))
    np.testing.assert_array_equal(index.search(more, 5).ids, loaded.search(more, 5).ids)
    os.remove(path)  # a mapped file's data was copied by add, nothing reads it any more
    assert len(loaded.search(more, 5).ids) == 40


def test_empty_index_round_trip(tmp_path):
    ragcore.HNSWIndex(3, "l2").save(tmp_path / "e.rc")
    loaded = ragcore.HNSWIndex.load(tmp_path / "e.rc")
    assert len(loaded) == 0 and (loaded.search(np.ones(3, np.float32), 2).ids == -1).all()


def test_damaged_and_foreign_files_are_refused(tmp_path):
    index, _ = _built()
    path = tmp_path / "g.rc"
    index.save(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    (tmp_path / "flip.rc").write_bytes(bytes(data))
    with pytest.raises(ragcore.IndexFileError, match="checksum"):
        ragcore.HNSWIndex.load(tmp_path / "flip.rc")
    (tmp_path / "cut.rc").write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ragcore.IndexFileError):
        ragcore.HNSWIndex.load(tmp_path / "cut.rc")
    flat = ragcore.FlatIndex(16)
    flat.save(tmp_path / "flat.rc")
    with pytest.raises(ragcore.IndexFileError, match="not a HNSWIndex"):
        ragcore.HNSWIndex.load(tmp_path / "flat.rc")


def _crafted(tmp_path, change):
    """A file whose checksum is right but whose contents were changed by change(params, arrays)."""
    index, _ = _built()
    index.save(tmp_path / "g.rc")
    params, arrays = read_index(tmp_path / "g.rc", "HNSWIndex")
    arrays = {name: a.copy() for name, a in arrays.items()}
    change(params, arrays)
    write_index(tmp_path / "bad.rc", "HNSWIndex", params, arrays)
    return tmp_path / "bad.rc"


def _live(arrays):
    return int(np.flatnonzero(arrays["levels"] >= 0)[0])


CRAFTED = {
    "neighbour outside the index": (lambda p, a: a["links0"].__setitem__((_live(a), 1), 10**6), "outside the index"),
    "neighbour count above the degree": (lambda p, a: a["links0"].__setitem__((_live(a), 0), 99), "neighbours on level 0"),
    "link to a free slot": (lambda p, a: a["links0"].__setitem__(
        (_live(a), 1), int(np.flatnonzero(a["levels"] < 0)[0])), "not on level 0"),
    "level without upper lists": (lambda p, a: a["levels"].__setitem__(_live(a), 5), "upper offsets|level"),
    "entry point out of range": (lambda p, a: p.__setitem__("entry", 10**9), "params.entry"),
    "id of a free slot": (lambda p, a: a["ids"].__setitem__(int(np.flatnonzero(a["levels"] < 0)[0]), 7), "disagree"),
    "repeated id": (lambda p, a: a["ids"].__setitem__(_live(a) + 1, a["ids"][_live(a)]), "more than once"),
    "upper offsets beyond the lists": (lambda p, a: a["upper_offsets"].__setitem__(-1, 10**9), "upper"),
    "links of the wrong dtype": (lambda p, a: a.__setitem__("links0", a["links0"].astype(np.int64)), "links0"),
    "vectors of the wrong shape": (lambda p, a: a.__setitem__("vectors", a["vectors"][:, :8].copy()), "vectors"),
    "NaN vector": (lambda p, a: a["vectors"].__setitem__((_live(a), 0), np.nan), "NaN"),
    "missing array": (lambda p, a: a.pop("upper"), "upper"),
    "M changed": (lambda p, a: p.__setitem__("M", 7), "links0"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_files_are_refused_not_followed(tmp_path, case):
    change, message = CRAFTED[case]
    path = _crafted(tmp_path, change)
    with pytest.raises(ragcore.IndexFileError, match=message):
        ragcore.HNSWIndex.load(path)


# ---- every field, edited with a valid checksum (tests/_crafted.py) ------------------

def _file(tmp_path, metric="l2"):
    """A small saved index of this metric, with free slots."""
    index = ragcore.HNSWIndex(8, metric, M=4, ef_construction=16, seed=2)
    index.add(clustered(40, 8, seed=4) * 3, ids=np.arange(40) * 2 + 10, n_threads=1)
    index.remove([10, 30, 50])
    path = tmp_path / f"h-{metric}.rc"
    index.save(path)
    return path


def _refused(path, field: str):
    """The load fails with IndexFileError naming the file and this field."""
    message = f"{re.escape(str(path))}: inconsistent index contents: {field}"
    with pytest.raises(ragcore.IndexFileError, match=message):
        ragcore.HNSWIndex.load(path)


@pytest.mark.parametrize("name, values", [
    ("dim", [0, 2**40, 8.0, True]), ("metric", ["dot", ["l2"]]), ("dtype", ["sq8", None]),
    ("M", [1, 513, "4", 4.0]), ("ef_construction", [0, 10**30, 1.5]),
    ("ef", [0, -3, 10**30, 2.5]), ("seed", [-1, 2**64, "0"]),
    ("next_id", [0, -1, 88, 2**63 - 1, 2**63, "90", None]),
    ("entry", [-2, 40, 10**9, 1.0]), ("rng_state", [-1, 2**64, 0.5, None]),
])
def test_every_header_field_is_checked(tmp_path, name, values):
    for value in values:
        path = _file(tmp_path)
        rewrite(path, "HNSWIndex", params={name: value})
        _refused(path, rf"params\.{name}")


@pytest.mark.parametrize("name", ["dim", "metric", "M", "ef_construction", "dtype", "seed",
                                  "ef", "entry", "rng_state"])
def test_a_missing_header_field_is_named(tmp_path, name):
    path = _file(tmp_path)
    rewrite(path, "HNSWIndex", drop=[name])
    _refused(path, rf"params\.{name}: missing")


def _free(arrays) -> int:
    return int(np.flatnonzero(arrays["levels"] < 0)[0])


def _first(arrays) -> int:
    return int(np.flatnonzero(arrays["levels"] >= 0)[0])


ARRAYS = {  # name: (change of the arrays, field named in the error)
    "ids of the wrong dtype": (lambda a: {"ids": a["ids"].astype(np.int32)}, "ids"),
    "an id repeated": (lambda a: {"ids": _set(a["ids"], _first(a) + 1, a["ids"][_first(a)])}, "ids"),
    "a negative id": (lambda a: {"ids": _set(a["ids"], _first(a), -5)}, "ids"),
    "an id of 2**63 - 1": (lambda a: {"ids": _set(a["ids"], _first(a), 2**63 - 1)}, "ids"),
    "an id in a free slot": (lambda a: {"ids": _set(a["ids"], _free(a), 7)}, "ids, levels"),
    "levels longer than ids": (lambda a: {"levels": np.append(a["levels"], np.int32(0))}, "levels"),
    "levels of the wrong dtype": (lambda a: {"levels": a["levels"].astype(np.int64)}, "levels"),
    "a level above the top": (lambda a: {"levels": _set(a["levels"], _first(a), 49)}, "levels"),
    "a level below -1": (lambda a: {"levels": _set(a["levels"], _first(a), -2)}, "levels"),
    "a live slot without a level": (lambda a: {"levels": _set(a["levels"], _first(a), -1)}, "ids, levels"),
    "vectors with a row too few": (lambda a: {"vectors": a["vectors"][:-1]}, "vectors"),
    "vectors of another dtype": (lambda a: {"vectors": a["vectors"].astype(np.float16)}, "vectors"),
    "a NaN vector": (lambda a: {"vectors": _set(a["vectors"], (_first(a), 0), np.nan)}, "vectors"),
    "a huge vector": (lambda a: {"vectors": _set(a["vectors"], (_first(a), 0), 3e38)}, "vectors"),
    "sq_norms not the rows'": (lambda a: {"sq_norms": a["sq_norms"] * 2}, "sq_norms"),
    "a NaN sq_norm": (lambda a: {"sq_norms": _set(a["sq_norms"], _first(a), np.nan)}, "sq_norms"),
    "sq_norms too short": (lambda a: {"sq_norms": a["sq_norms"][:-1]}, "sq_norms"),
    "links0 of the wrong width": (lambda a: {"links0": a["links0"][:, :-1].copy()}, "links0"),
    "a neighbour outside": (lambda a: {"links0": _set(a["links0"], (_first(a), 1), 10**6)},
                            "links0, upper, upper_offsets, entry: .*outside"),
    "upper of the wrong dtype": (lambda a: {"upper": a["upper"].astype(np.int64)}, "upper"),
    "upper cut short": (lambda a: {"upper": a["upper"][:-1]}, "links0, upper, upper_offsets, entry"),
    "upper_offsets too short": (lambda a: {"upper_offsets": a["upper_offsets"][:-1]}, "upper_offsets"),
    "upper_offsets past the lists": (lambda a: {"upper_offsets": _set(a["upper_offsets"], -1, 10**9)},
                                     "links0, upper, upper_offsets, entry"),
    # hi - lo of the last slot would overflow int64 (UBSan, make test-asan, caught the native check)
    "an upper offset at the int64 minimum": (
        lambda a: {"upper_offsets": _set(a["upper_offsets"], -1, np.iinfo(np.int64).min)},
        "links0, upper, upper_offsets, entry"),
}


def _set(arr, where, value):
    out = arr.copy()
    out[where] = value
    return out


@pytest.mark.parametrize("case", sorted(ARRAYS))
def test_every_array_is_checked(tmp_path, case):
    change, field = ARRAYS[case]
    path = _file(tmp_path)
    _, arrays = stored(path, "HNSWIndex")
    rewrite(path, "HNSWIndex", arrays=change(arrays))
    _refused(path, field)


@pytest.mark.parametrize("name", ["ids", "levels", "vectors", "links0", "upper", "upper_offsets",
                                  "sq_norms"])
def test_a_missing_array_is_named(tmp_path, name):
    path = _file(tmp_path)
    rewrite(path, "HNSWIndex", drop=[name])
    _refused(path, f"{name}: missing")


def test_cosine_rows_must_be_unit_vectors(tmp_path):
    path = _file(tmp_path, "cosine")
    _, arrays = stored(path, "HNSWIndex")
    rewrite(path, "HNSWIndex", arrays={"vectors": arrays["vectors"] * 3})
    _refused(path, "vectors: a cosine index holds unit vectors")


def test_an_entry_below_the_top_level_is_refused(tmp_path):
    path = _file(tmp_path)
    params, arrays = stored(path, "HNSWIndex")
    top = arrays["levels"].max()
    below = int(np.flatnonzero((arrays["levels"] >= 0) & (arrays["levels"] < top))[0])
    rewrite(path, "HNSWIndex", params={"entry": below})
    _refused(path, "links0, upper, upper_offsets, entry: .*entry point")


def test_free_slots_need_neither_unit_rows_nor_matching_norms(tmp_path):
    """A free slot's row and squared norm are never read: whatever finite values they
    hold, the file loads (remove leaves the old row there)."""
    for metric in ("cosine", "l2"):
        path = _file(tmp_path, metric)
        _, arrays = stored(path, "HNSWIndex")
        free = _free(arrays)
        changed = {"vectors": _set(arrays["vectors"], free, 5.0)}
        if metric == "l2":
            changed["sq_norms"] = _set(arrays["sq_norms"], free, 0.0)
        rewrite(path, "HNSWIndex", arrays=changed)
        assert len(ragcore.HNSWIndex.load(path)) == 37


def test_a_slot_cut_off_from_the_entry_point_is_refused(tmp_path):
    """Without in-links on level 0 a node is found by no search, ef >= n included."""
    path = _file(tmp_path)
    params, arrays = stored(path, "HNSWIndex")
    links0 = arrays["links0"]
    cut = int(next(s for s in np.flatnonzero(arrays["levels"] >= 0) if s != params["entry"]))
    for row in links0:
        kept = [v for v in row[1 : 1 + row[0]] if v != cut]
        row[1:] = 0
        row[0], row[1 : 1 + len(kept)] = len(kept), kept
    rewrite(path, "HNSWIndex", arrays={"links0": links0})
    _refused(path, f"links0: slot {cut} is not reachable from the entry point")
