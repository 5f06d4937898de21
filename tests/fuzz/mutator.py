"""Mutation fuzzing of the index loaders: valid files, changed and re-checksummed.

A CRC-32 catches accidents, not edits: a file whose checksum was recomputed after a
change reaches every check behind it. ``mutate`` changes one thing of a valid file (a
header value, an array element set to an awkward value of its dtype, random bytes of
the payload, a spliced run of bytes) and recomputes the header length, padding and
checksum. ``run_one`` loads the result: it must be refused with IndexFileError, or load
into an index that keeps the contracts (``check_index``). Used by tests/fuzz (a brief
run in CI) and bench/fuzz.py (the long run, in worker processes that survive crashes).
"""

from __future__ import annotations

import json
import os
import struct
import zlib

import numpy as np

from ragcore import BM25Index, FlatIndex, HNSWIndex, IndexFileError, IVFIndex
from ragcore._util import fileformat
from ragcore.dense._storage import to_float32

_PREFIX = struct.Struct("<8sII")
_ALIGN = 64
DIM = 5


# ---- the valid files every mutation starts from ----------------------------

def _vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def seed_indexes(kind: str) -> list:
    """Small valid indexes of one loader's kind, covering its parameters."""
    if kind == "flat":
        out = []
        for metric in ("ip", "l2", "cosine"):
            for dtype in ("float32", "float16", "bfloat16"):
                index = FlatIndex(DIM, metric, dtype)
                index.add(_vectors(7, 1), ids=[3, 9, 0, 12, 5, 7, 40])
                index.remove([9])
                out.append(index)
        out.append(FlatIndex(DIM))  # empty
        return out
    if kind == "ivf":
        out = []
        for metric, dtype in (("ip", "float32"), ("l2", "float16"), ("cosine", "bfloat16"),
                              ("l2", "sq8"), ("ip", "sq8")):
            index = IVFIndex(DIM, 3, metric, dtype, max_iter=3)
            index.train(_vectors(12, 2))
            index.add(_vectors(9, 3), ids=np.arange(9) * 3 + 1)
            out.append(index)
        out.append(IVFIndex(DIM, 2, "l2", "sq8"))  # untrained
        return out
    if kind == "bm25":
        texts = ["the quick brown fox", "jumps over the lazy dog", "quick quick dog",
                 "a lazy afternoon", "brown bread and brown butter", "fox hunting dog"]
        out = []
        for variant, stop in (("lucene", "en"), ("bm25+", None), ("bm25l", "en"),
                              ("atire", None)):
            index = BM25Index(variant=variant, stopwords=stop)
            index.add(texts, ids=[4, 0, 8, 15, 16, 23])
            index.remove([8])
            out.append(index)
        out.append(BM25Index())  # empty
        return out
    if kind == "hnsw":
        out = []
        for metric, dtype in (("ip", "float32"), ("l2", "float16"), ("cosine", "bfloat16"),
                              ("l2", "int8"), ("cosine", "float32")):
            index = HNSWIndex(DIM, metric, M=2, ef_construction=8, dtype=dtype, seed=5)
            index.add(_vectors(12, 4), ids=np.arange(12) * 5 + 2, n_threads=1)
            index.remove([7, 32])  # free slots in the file
            out.append(index)
        out.append(HNSWIndex(DIM, "l2"))  # empty
        return out
    raise ValueError(kind)


LOADERS = {"flat": FlatIndex.load, "ivf": IVFIndex.load, "bm25": BM25Index.load,
           "hnsw": HNSWIndex.load}
FILE_KINDS = {"flat": "FlatIndex", "hnsw": "HNSWIndex"}
KINDS = tuple(LOADERS)


def seed_files(kind: str, directory) -> list[bytes]:
    """The bytes of each seed index of `kind`, saved in `directory`."""
    out = []
    for i, index in enumerate(seed_indexes(kind)):
        path = os.path.join(directory, f"seed-{kind}-{i}.rc")
        index.save(path)
        with open(path, "rb") as f:
            out.append(f.read())
        os.unlink(path)
    return out


# ---- taking a file apart and putting it back together ----------------------

def split(data: bytes) -> tuple[dict, bytes]:
    """(header, payload) of a valid file."""
    _, _, header_len = _PREFIX.unpack_from(data, 0)
    header = json.loads(data[_PREFIX.size : _PREFIX.size + header_len])
    start = _aligned(_PREFIX.size + header_len)
    return header, data[start : len(data) - 8]


def assemble(header_bytes: bytes, payload: bytes) -> bytes:
    """A file of this header text and payload with a correct header length and checksum."""
    head = _PREFIX.pack(fileformat.MAGIC, fileformat.FORMAT_VERSION, len(header_bytes))
    head += header_bytes
    head += b"\x00" * (_aligned(len(head)) - len(head))
    body = head + payload
    return body + struct.pack("<I4s", zlib.crc32(body), fileformat.END_MAGIC)


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


# ---- mutations ---------------------------------------------------------------

_INTERESTING_JSON = [0, -1, 1, 2, 3, 7, 63, 64, 65, 255, 256, 2**31 - 1, 2**31, 2**32, 2**40,
                     2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64, -2**63, 10**30, 0.5, -0.0, 1e308,
                     -1e308, float("nan"), float("inf"), float("-inf"), 1e-320, True, False,
                     None, "", "x", "float32", "uint8", "int64", "sq8", "int8", "l2", "cosine",
                     "lucene", "bm25l", "english", "\udcff", [], [0], [1, 2], [2**40, 2**40],
                     {}, {"a": 1}]
_INTERESTING_FLOAT = [0.0, -0.0, 1.0, -1.0, 1e-45, 1e18, 1e19, 1e30, 3.4e38, -3.4e38, 65504.0,
                      np.inf, -np.inf, np.nan]
_INTERESTING_INT = [0, 1, -1, -2, 2, 127, 128, 255, 256, 65535, 2**31 - 1, 2**31, 2**32,
                    2**62, 2**63 - 1, -2**63]


def _header_paths(header, prefix=()):
    """Every (path, value) inside the header's params and array specs."""
    if isinstance(header, dict):
        items = header.items()
    elif isinstance(header, list):
        items = enumerate(header)
    else:
        return
    for key, value in items:
        path = prefix + (key,)
        yield path
        yield from _header_paths(value, path)


def _set_path(obj, path, value) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _del_path(obj, path) -> None:
    for key in path[:-1]:
        obj = obj[key]
    del obj[path[-1]]


def _mutate_header(header: dict, payload: bytes, rng) -> bytes:
    paths = list(_header_paths(header))
    path = paths[rng.integers(len(paths))]
    action = rng.integers(10)
    if action == 0 and isinstance(path[-1], str):
        _del_path(header, path)
    elif action == 1:  # a value from elsewhere in the header
        other = paths[rng.integers(len(paths))]
        value = header
        for key in other:
            value = value[key]
        _set_path(header, path, json.loads(json.dumps(value)))
    elif action == 2 and isinstance(path[-1], str):  # an extra key next to it
        parent = header
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1] + "_x"] = _INTERESTING_JSON[rng.integers(len(_INTERESTING_JSON))]
    else:
        value = _INTERESTING_JSON[rng.integers(len(_INTERESTING_JSON))]
        _set_path(header, path, json.loads(json.dumps(value)) if not isinstance(value, float)
                  else value)
    return assemble(json.dumps(header).encode(), payload)


def _array_specs(header: dict, size: int) -> list:
    """The arrays of header that lie in a payload of size bytes (a header mutated before,
    by the first of two mutations, may describe others: they are not mutated again)."""
    arrays = header.get("arrays", [])
    return [s for s in (arrays if isinstance(arrays, list) else []) if isinstance(s, dict)
            and type(s.get("nbytes")) is int and type(s.get("offset")) is int
            and 0 <= s["offset"] and 0 < s["nbytes"] and s["offset"] + s["nbytes"] <= size
            and s.get("dtype") in ("float32", "float16", "uint16", "int64", "uint8", "int32",
                                   "uint32", "int8")]


def _mutate_element(header: dict, payload: bytes, rng) -> bytes:
    """One element of one array set to an awkward value of its dtype."""
    specs = _array_specs(header, len(payload))
    if not specs:
        return _mutate_bytes(header, payload, rng)
    spec = specs[rng.integers(len(specs))]
    dtype = np.dtype(spec["dtype"])
    count = spec["nbytes"] // dtype.itemsize
    arr = np.frombuffer(payload, dtype=dtype, count=count, offset=spec["offset"]).copy()
    for _ in range(1 + rng.integers(3)):
        i = rng.integers(count)
        if dtype.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                arr[i] = _INTERESTING_FLOAT[rng.integers(len(_INTERESTING_FLOAT))]
        elif dtype == np.uint16:  # bfloat16 bits or float16
            arr[i] = rng.choice([0x7F80, 0xFF80, 0x7FC0, 0x7C00, 0x7BFF, 0x7F7F, 0, 0x8000,
                                 int(rng.integers(65536))])
        else:
            info = np.iinfo(dtype)
            value = _INTERESTING_INT[rng.integers(len(_INTERESTING_INT))]
            if rng.integers(2):
                arr[i] = np.clip(value, info.min, info.max)
            else:  # a small step, wrapping around at the ends of the dtype
                arr[i] = (int(arr[i]) + int(rng.integers(-3, 4)) - info.min) % (1 << (8 * dtype.itemsize)) + info.min
    data = bytearray(payload)
    data[spec["offset"] : spec["offset"] + spec["nbytes"]] = arr.tobytes()
    return assemble(json.dumps(header).encode(), bytes(data))


def _mutate_bytes(header: dict, payload: bytes, rng) -> bytes:
    data = bytearray(payload)
    if not data:
        return _mutate_header(header, payload, rng)
    for _ in range(1 + rng.integers(4)):
        i = rng.integers(len(data))
        if rng.integers(2):
            data[i] ^= 1 << int(rng.integers(8))
        else:
            data[i] = int(rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.integers(256)]))
    return assemble(json.dumps(header).encode(), bytes(data))


def _mutate_splice(header: dict, payload: bytes, rng) -> bytes:
    data = bytearray(payload)
    if len(data) < 2:
        return _mutate_bytes(header, payload, rng)
    n = int(rng.integers(1, min(64, len(data)) + 1))
    src, dst = rng.integers(len(data) - n + 1), rng.integers(len(data) - n + 1)
    data[dst : dst + n] = payload[src : src + n]
    return assemble(json.dumps(header).encode(), bytes(data))


def _mutate_raw_header(header: dict, payload: bytes, rng) -> bytes:
    """The header text itself: a byte changed, cut or doubled (not always valid JSON)."""
    text = bytearray(json.dumps(header).encode())
    i = int(rng.integers(len(text)))
    choice = rng.integers(3)
    if choice == 0:
        text[i] = int(rng.integers(256))
    elif choice == 1:
        del text[i:]
    else:
        text[i:i] = text[i : i + 8]
    return assemble(bytes(text), payload)


_MUTATORS = (_mutate_header, _mutate_header, _mutate_element, _mutate_element, _mutate_element,
             _mutate_bytes, _mutate_splice, _mutate_raw_header)


def mutate(data: bytes, rng) -> bytes:
    """One mutation of a valid file (sometimes two), with a valid checksum."""
    header, payload = split(data)
    out = _MUTATORS[rng.integers(len(_MUTATORS))](header, payload, rng)
    if rng.integers(8) == 0:
        try:  # the first mutation may have left a header the mutators cannot walk
            header, payload = split(out)
            out = _MUTATORS[rng.integers(len(_MUTATORS))](header, payload, rng)
        except Exception:  # noqa: BLE001 - a fault of the harness, not of ragcore
            pass
    return out


# ---- the oracle ----------------------------------------------------------------

class ContractBroken(AssertionError):
    """A file loaded into an index that breaks a contract (or raised something else)."""


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise ContractBroken(what)


def _check_hits(hits, index_ids: np.ndarray, k: int, n) -> None:
    """n: the results a row has at most (an int, or one per row: a BM25 query's matches)."""
    ids, scores = hits.ids, hits.scores
    real = ids != -1
    _require(bool(np.isin(ids[real], index_ids).all()), "a result id is not in the index")
    _require(bool(np.isfinite(scores[real]).all()), "a result has a NaN or infinite score")
    _require(bool((real.sum(axis=1) == np.minimum(k, n)).all()),
             "results vanished (padding with k <= n)")
    _require(bool((scores[~real] == -np.inf).all()), "padding without score -inf")
    for row_ids in ids:
        got = row_ids[row_ids != -1]
        _require(len(np.unique(got)) == len(got), "an id appears twice in one result")


def _check_scores(path: str, kind: str, queries: np.ndarray, hits) -> None:
    """Each returned score is the metric's score of the query and the stored row of that
    id, as the file holds it (a wrong sq_norm or a non-unit cosine row changes it)."""
    params, arrays = fileformat.read_index(path, FILE_KINDS[kind])
    dtype = "float32" if params["dtype"] == "int8" else params["dtype"]
    rows = to_float32(np.asarray(arrays["vectors"]), dtype).astype(np.float64)
    row_of = {int(i): r for r, i in enumerate(arrays["ids"]) if i >= 0}
    q = queries.astype(np.float64)
    if params["metric"] == "cosine":
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
    for qi, (row_ids, scores) in enumerate(zip(hits.ids, hits.scores)):
        for i, got in zip(row_ids[row_ids != -1], scores[row_ids != -1]):
            x = rows[row_of[int(i)]]
            want = -np.sum((q[qi] - x) ** 2) if params["metric"] == "l2" else q[qi] @ x
            scale = (np.linalg.norm(q[qi]) + np.linalg.norm(x)) ** 2
            _require(abs(float(got) - want) <= 1e-4 * scale + 1e-6,
                     f"id {int(i)} scored {float(got)!r}, its row gives {want!r}")


def check_index(index, kind: str, directory: str) -> None:
    """The contracts a loaded index keeps: valid, finite, unpadded results; new ids
    that are new; a save that loads again."""
    rng = np.random.default_rng(0)
    n = len(index)
    ids = index.ids
    if kind == "bm25":
        words = index.vocabulary[:6] + ["quick", "dog"]
        queries = [" ".join(words[: i + 1]) for i in range(len(words))] * 2
        # A BM25 row holds the documents with a query word: as many as k = n + 2 finds.
        matches = (index.search(queries, n + 2, algorithm="exhaustive").ids != -1).sum(axis=1)
        _require(bool((matches <= n).all()), "more BM25 results than documents")
        for k in (1, max(n, 1), n + 2):
            results = [index.search(queries, k, algorithm=a) for a in
                       ("exhaustive", "maxscore", "bmw", "bmp")]
            for hits in results:
                _check_hits(hits, ids, k, matches)
            for hits in results[1:]:
                _require(bool(np.array_equal(hits.ids, results[0].ids)), "algorithms disagree")
        index.add(["a new quick document"])
    else:
        if kind == "ivf" and not index.is_trained:
            return
        queries = rng.standard_normal((9, index.dim)).astype(np.float32)
        for k in (1, max(n, 1), n + 2):
            search = (lambda q, k: index.search(q, k, nprobe=index.nlist)) if kind == "ivf" \
                else index.search
            _check_hits(search(queries, k), ids, k, n)
            _check_hits(search(queries[:1], k), ids, k, n)
        if kind in ("flat", "hnsw"):
            _check_scores(os.path.join(directory, "current.rc"), kind, queries,
                          index.search(queries, max(n, 1)))
        new = index.add(rng.standard_normal((2, index.dim)).astype(np.float32))
        _require(not np.isin(new, ids).any() and (new >= 0).all(), "add() gave an existing id")
    path = os.path.join(directory, "resaved.rc")
    index.save(path)
    again = LOADERS[kind](path)
    _require(len(again) == len(index), "a saved index reloads with another size")


def run_one(kind: str, data: bytes, directory: str) -> bool:
    """Loads one (mutated) file; True if it loaded (and kept the contracts), False if it
    was refused with IndexFileError. Anything else raises ContractBroken."""
    path = os.path.join(directory, "current.rc")
    with open(path, "wb") as f:
        f.write(data)
    try:
        index = LOADERS[kind](path)
    except IndexFileError:
        return False
    except Exception as err:  # noqa: BLE001 - any other exception is the finding
        raise ContractBroken(f"load raised {type(err).__name__}: {err}") from err
    try:
        check_index(index, kind, directory)
    except ContractBroken:
        raise
    except Exception as err:  # noqa: BLE001
        raise ContractBroken(f"the loaded index raised {type(err).__name__}: {err}") from err
    return True


def describe(data: bytes) -> str:
    """A one-line summary of a file's header (for reports of a finding)."""
    try:
        header, _ = split(data)
    except (ValueError, UnicodeDecodeError) as err:
        return f"unparsable header ({err})"
    return json.dumps(header.get("params"))[:300]
