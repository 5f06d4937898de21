"""What a mutated Collection must do: refuse with a ragcore error that names it, or answer
as its database says (collection_mutator makes the mutations).

``run_one`` opens the collection read-only and for writing, reads every document, searches
(dense, sparse, hybrid; with a filter; by chunk and by document; k 1, 5 and 50 over the
four states it checks), adds, deletes and upserts a document, compacts, closes, opens it
again, verifies and rebuilds it. Each answer is checked against the documents the
collection itself returned: a match's id is a document's, its text is document[start:end],
its metadata the document's, its score finite, a filtered match passes the filter, a
document appears once by document; ids are of one type and distinct; a dense search
returns k matches when the database holds k chunks; an acknowledged add is found after
reopening and a deleted document is not. Any exception other than a RagcoreError whose
message names the collection's path, or a hang, breaks the contract; a FilterError (the
oracle's filter refused because the fields table, which records the types of the metadata
values, was changed; checking it would read every document) is its own outcome.
"""

from __future__ import annotations

import itertools
import math
import os
import signal
import sqlite3

from collection_mutator import DB, WORDS, WordEncoder
from ragcore import Collection, FilterError, RagcoreError

TIMEOUT_S = 60
ENCODER = WordEncoder()  # one for every collection: it keeps the vectors of the texts it saw
QUERIES = ["alpha beta", "omega", "gamma delta epsilon", "zzzz"]
FILTER = {"year": {"$gte": 2000}}


class ContractBroken(AssertionError):
    """The collection answered wrongly, raised something else, or hung."""


class WrongAnswer(ContractBroken):
    """An answer that is not what the database says."""


class _Hang(BaseException):
    pass


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise WrongAnswer(what)


def _raw_chunk_count(path: str):
    """The chunks the database holds, read with plain sqlite3 (None if it cannot say)."""
    try:
        conn = sqlite3.connect(f"file:{os.path.join(path, DB)}?mode=ro", uri=True)
        try:
            n = conn.execute("SELECT COUNT(*) FROM chunks c JOIN documents d ON "
                             "d.rowid = c.doc_rowid").fetchone()[0]
            total = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            return n if n == total else None
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def _documents(col) -> dict:
    ids = col.ids()
    _require(len(ids) == col.count(), f"ids() gave {len(ids)} ids, count() {col.count()}")
    _require(len(set(map(repr, ids))) == len(ids), "ids() repeats an id")
    kinds = {type(i) for i in ids}
    _require(kinds <= {int} or kinds <= {str}, f"ids of types {sorted(map(str, kinds))}")
    docs = col.get(ids)
    _require([d.id for d in docs] == ids, "get(ids()) does not return every document")
    for d in docs:
        _require(isinstance(d.text, str) and isinstance(d.metadata, dict),
                 f"document {d.id!r}: text {type(d.text).__name__}, metadata "
                 f"{type(d.metadata).__name__}")
    return {d.id: d for d in docs}


def _passes(meta: dict) -> bool:
    year = meta.get("year")
    return isinstance(year, (int, float)) and not isinstance(year, bool) and year >= 2000


KS = (1, 5, 50)  # 50 is past the chunks of the smaller seeds: padding and the k cap


def _check_results(col, docs: dict, n_chunks, state: int) -> None:
    """Searches every mode, filter and by once, each at one k of KS: the k moves on with
    state (the collection's state in check_collection: 0..3), so that each combination
    meets every k over one execution's states, at a third of the searches."""
    vector_query = col._settings.get("dim") is not None
    combination, verified = 0, set()
    for mode in ("dense", "sparse", "hybrid"):
        if mode != "sparse" and not vector_query:
            continue
        for flt in (None, FILTER):
            if flt is not None and "year" not in col._fields_now(col._conn):
                continue
            for by in ("chunk", "document"):
                k = KS[(combination + state) % len(KS)]
                combination += 1
                for q, matches in zip(QUERIES, col.search(QUERIES, k=k, mode=mode, filter=flt,
                                                          by=by)):
                    _check_matches(matches, docs, k, flt, by, f"{mode} {q!r} k={k} {by}", verified)
                    if mode == "dense" and flt is None and by == "chunk" and \
                            n_chunks is not None and col._settings["dense"]["kind"] == "flat":
                        _require(len(matches) == min(k, n_chunks),
                                 f"dense k={k}: {len(matches)} matches of {n_chunks} chunks")


def _check_matches(matches, docs, k, flt, by, where, verified: set) -> None:
    """verified: the (id, chunk id, offsets, text) of matches already checked against docs
    (a chunk is met in many searches; what its row says is checked once)."""
    if len(matches) > k:
        raise WrongAnswer(f"{where}: more than k matches")
    seen = set()
    for m in matches:
        if m.id not in docs:
            raise WrongAnswer(f"{where}: match id {m.id!r} is no document's")
        doc = docs[m.id]
        row = (m.id, m.chunk_id, type(m.start), m.start, type(m.end), m.end, m.text)
        if row not in verified:
            if not (isinstance(m.start, int) and isinstance(m.end, int) and
                    0 <= m.start <= m.end <= len(doc.text)):
                raise WrongAnswer(f"{where}: offsets {m.start!r}..{m.end!r} of a document of "
                                  f"{len(doc.text)} characters")
            if m.text != doc.text[m.start : m.end]:
                raise WrongAnswer(f"{where}: the match's text is not "
                                  f"document[{m.start}:{m.end}]")
            verified.add(row)
        if m.metadata != doc.metadata:
            raise WrongAnswer(f"{where}: the match's metadata is not the document's")
        if not math.isfinite(m.score):
            raise WrongAnswer(f"{where}: score {m.score!r}")
        if flt is not None and not _passes(doc.metadata):
            raise WrongAnswer(f"{where}: a match fails the filter")
        if by == "document" and m.id in seen:
            raise WrongAnswer(f"{where}: a document appears twice by document")
        seen.add(m.id)


def _new_id(docs: dict):
    """An id of the collection's type that no document has."""
    ids = list(docs)
    if ids and isinstance(ids[0], str):
        return next(f"fuzz-new-{i}" for i in itertools.count() if f"fuzz-new-{i}" not in docs)
    return next(i for i in itertools.count(10**6) if i not in docs)


def _write(col, docs: dict):
    """Adds a document and deletes one; returns (the new id, the deleted id or None)."""
    new = _new_id(docs)
    text = "Fuzzword " + " ".join(WORDS[:4]) + "."
    col.add([text], ids=[new], metadata=[{"year": 2020}])
    found = col.search("fuzzword", k=3, mode="sparse")
    _require(any(m.id == new for m in found), "a document just added is not found")
    gone = next(iter(docs), None)
    if gone is not None:
        col.delete([gone])
        _require(gone not in col.ids(), "a deleted document is still listed")
        _require(all(m.id != gone for matches in col.search(QUERIES, k=50, mode="sparse")
                     for m in matches),
                 "a deleted document is still found")
    col.upsert([text + " Upserted."], ids=[new], metadata=[{"year": 2021}])
    col.compact()
    _require([d.text for d in col.get([new])] == [text + " Upserted."], "an upsert was lost")
    return new, gone


def _session(path: str, readonly: bool, write: bool, state: int):
    with Collection.open(path, readonly=readonly, encoder=ENCODER) as col:
        docs = _documents(col)
        _check_results(col, docs, _raw_chunk_count(path), state)
        return _write(col, docs) if write else None


def check_collection(path: str) -> None:
    """Opens, reads, searches, writes, reopens; raises on a broken contract."""
    _session(path, readonly=True, write=False, state=0)
    new, gone = _session(path, readonly=False, write=True, state=1)
    with Collection.open(path, encoder=ENCODER) as col:
        ids = col.ids()
        _require(new in ids, "an acknowledged add was lost after reopening")
        _require(gone is None or gone not in ids, "an acknowledged delete was undone")
        _check_results(col, _documents(col), _raw_chunk_count(path), state=2)
        col.verify()
        col.rebuild()
        _check_results(col, _documents(col), _raw_chunk_count(path), state=3)


def run_one(path: str, answers_checked: bool = True) -> str:
    """"kept" if the collection kept every contract, the error's class name if it was
    refused with a ragcore error naming it; raises ContractBroken otherwise.

    answers_checked=False (a page of the database overwritten): a wrong answer is the
    outcome "unchecked", not a broken contract. SQLite keeps no page checksums: bytes that
    parse as a page are read as data, which only verify() (integrity_check) finds."""

    def hang(signum, frame):
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(TIMEOUT_S)
    try:
        check_collection(path)
        return "kept"
    except WrongAnswer:
        if not answers_checked:
            return "unchecked"
        raise
    except ContractBroken:
        raise
    except FilterError:
        return "FilterError"
    except RagcoreError as err:
        _require(path in str(err), f"{type(err).__name__} without the collection's path: {err}")
        return type(err).__name__
    except _Hang:
        raise ContractBroken(f"no answer in {TIMEOUT_S} s") from None
    except Exception as err:  # noqa: BLE001 - any other exception is the finding
        raise ContractBroken(f"raised {type(err).__name__}: {err}") from err
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

