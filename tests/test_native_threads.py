"""The native calls that release the GIL read nothing another Python thread can free or change
meanwhile: token views hold references to their str objects, the vocabulary takes a lock,
and query batches are copied before they are checked. Each test races a second thread
against one call; before these guards the first read freed memory (foreign words in the
vocabulary), the second crashed the process and the third wrote out of bounds."""

from __future__ import annotations

import sys
import threading

import numpy as np

from ragcore import _core


def test_add_tokens_keeps_the_tokens_it_reads_alive():
    docs = [[f"tok{d:04d}{t:04d}" for t in range(1000)] for d in range(2000)]
    originals = {w.encode() for doc in docs for w in doc}  # copies: no reference to the strs
    started, junk = threading.Event(), []

    def free_the_tokens():
        started.wait()
        for doc in reversed(docs):  # runs once add_tokens has released the GIL
            doc.clear()  # the last reference: the strs are freed
        junk.extend([f"ZZZ{d:04d}{t:04d}" for t in range(1000)] for d in range(2000))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000)  # this thread keeps the GIL until the native call releases it
    try:
        vocab = _core.Vocabulary()
        other = threading.Thread(target=free_the_tokens)
        other.start()
        started.set()
        vocab.add_tokens(docs)
        other.join()
    finally:
        sys.setswitchinterval(interval)
    words = vocab.words()
    assert len(words) == len(originals) and all(w.encode() in originals for w in words)


def test_one_vocabulary_shared_by_two_threads():
    vocab = _core.Vocabulary()
    batches = {name: [[f"{name}{d}_{t}" for t in range(500)] for d in range(400)]
               for name in ("a", "b")}
    ids = {}

    def add(name):
        ids[name] = vocab.add_tokens(batches[name])[0]

    threads = [threading.Thread(target=add, args=(name,)) for name in batches]
    for t in threads:
        t.start()
    lengths = [len(vocab) for _ in range(50)]  # read while the others write
    for t in threads:
        t.join()
    words = vocab.words()
    assert len(words) == len(set(words)) == 400_000 and lengths == sorted(lengths)
    for name, docs in batches.items():
        flat = [w for doc in docs for w in doc]
        assert [words[i] for i in ids[name]] == flat


def test_weigh_queries_reads_the_offsets_it_checked():
    index = _core.Bm25Index(k1=1.2, b=0.75, delta=0.0, variant=_core.Variant.Lucene,
                            lucene_norms=False)
    index.add(np.zeros(1, np.uint32), np.array([0, 1], np.int64), np.zeros(1, np.int64),
              np.array([0], np.int64))
    n = 200_000
    terms, weights = np.zeros(n, np.int64), np.ones(n)
    offsets = np.arange(n + 1, dtype=np.int64)
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            offsets[n] = 1 << 40  # out of range, while the native loop may be reading
            offsets[n] = n

    other = threading.Thread(target=flip)
    other.start()
    try:
        outcomes = set()
        for _ in range(60):
            try:
                out_terms, _, _ = index.weigh_queries(terms, weights, offsets)
                outcomes.add(len(out_terms))
            except ValueError:
                outcomes.add("refused")
    finally:
        stop.set()
        other.join()
    assert outcomes <= {n, "refused"}
