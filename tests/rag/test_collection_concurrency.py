"""One writer, many readers: threads search while another thread writes; a second process
opens the collection read-only and searches (and sees later commits); a second writer
process is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

from _collection_data import HashEncoder, corpus
from ragcore.rag.collection import Collection

HERE = os.path.dirname(os.path.abspath(__file__))


def test_threads_search_while_one_writes(tmp_path):
    texts, metadata = corpus(400, seed=4)
    texts = ["alpha " + t for t in texts]  # every document a BM25 match of the queries
    col = Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none")
    col.add(texts[:50], ids=list(range(50)), metadata=metadata[:50])
    errors, seen = [], []
    done = threading.Event()
    # Every state the collection passes through (a state is listed before the write that
    # makes it starts). k covers every document, so each search returns the whole snapshot.
    states = [frozenset(range(50))]

    def reader():
        try:
            while not done.is_set():
                for mode in ("dense", "sparse", "hybrid"):
                    got = col.search("alpha beta", k=1000, mode=mode, filter={"year": {"$gte": 1990}})
                    ids = [m.id for m in got]
                    assert len(ids) == len(set(ids)) and frozenset(ids) in states, mode
                    seen.append(len(ids))
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for start in range(50, 400, 25):
        ids = list(range(start, start + 25))
        states.append(states[-1] | set(ids))
        col.add(texts[start:start + 25], ids=ids, metadata=metadata[start:start + 25])
        states.append(states[-1] - {i for i in ids if i % 7 == 0})
        col.delete([i for i in ids if i % 7 == 0])
        # Searchable as soon as add returns.
        got = {m.id for m in col.search("alpha", k=1000, mode="sparse")}
        assert {i for i in ids if i % 7} <= got
    done.set()
    for t in threads:
        t.join()
    col.close()
    assert not errors, errors[0]
    assert seen and max(seen) > min(seen)


READER = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {here!r})
    from _collection_data import HashEncoder
    from ragcore.rag.collection import Collection, CollectionLockedError
    try:
        Collection.open({path!r})
        print(json.dumps({{"second_writer": "opened"}}), flush=True)
    except CollectionLockedError as err:
        print(json.dumps({{"second_writer": str(err)}}), flush=True)
    col = Collection.open({path!r}, readonly=True, encoder=HashEncoder())
    for line in sys.stdin:
        q = line.strip()
        out = {{mode: [m.id for m in col.search(q, k=1000, mode=mode)]
               for mode in ("dense", "sparse", "hybrid")}}
        print(json.dumps(out), flush=True)
    col.close()
""")


def test_a_second_process_reads_while_this_one_writes(tmp_path):
    texts, metadata = corpus(100, seed=6)
    texts = ["alpha " + t for t in texts]  # every document a BM25 match of "alpha"
    path = str(tmp_path / "c")
    col = Collection.create(path, encoder=HashEncoder(), chunker="none")
    col.add(texts[:60], ids=list(range(60)), metadata=metadata[:60])
    proc = subprocess.Popen([sys.executable, "-c", READER.format(here=HERE, path=path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())
        assert "another writer" in first["second_writer"]

        def ask(q):
            proc.stdin.write(q + "\n")
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        got = ask("alpha")
        assert all(sorted(ids) == list(range(60)) for ids in got.values())
        col.add(texts[60:], ids=list(range(60, 100)), metadata=metadata[60:])
        col.delete([0, 1, 2])
        got = ask("alpha")  # the reader catches up with what was committed
        assert all(sorted(ids) == list(range(3, 100)) for ids in got.values())
        mine = [m.id for m in col.search("alpha", k=1000, mode="sparse")]
        assert got["sparse"] == mine
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
        col.close()
    assert proc.returncode == 0
