"""Kills a Collection writer with SIGKILL at random points of add / upsert / delete /
compact, then reopens the collection and checks it (used by test_collection_kill.py and,
for hundreds of kills, tests/rag/run_kills.py).

The writer (a forked child) journals each operation before it starts ("intent", fsynced)
and after it returns ("ack", fsynced). After each kill the parent replays the acknowledged
operations and checks that the reopened collection holds exactly them, plus, at most, the
one operation that was under way (whole, never in part); that every document's chunks are
complete; and that searches equal those of a collection freshly built from the same
documents. Index files are rewritten after every few changes so that kills land in
file writes too.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time

from _collection_data import HashEncoder, WORDS
from ragcore.rag.collection import collection as collection_module
from ragcore.rag.collection import Collection

OPERATIONS = ("add", "upsert", "delete", "compact")


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))


def _plan(rng: random.Random, docs: dict, next_id: int) -> dict:
    op = rng.choices(OPERATIONS, weights=(5, 3, 3, 1))[0]
    if op in ("delete", "upsert") and not docs:
        op = "add"
    if op == "add":
        n = rng.randint(1, 8)
        ids = list(range(next_id, next_id + n))
    elif op == "upsert":
        ids = rng.sample(sorted(docs), min(len(docs), rng.randint(1, 4))) + [next_id]
    elif op == "delete":
        ids = rng.sample(sorted(docs), min(len(docs), rng.randint(1, 5)))
    else:
        ids = []
    texts = [_text(rng) for _ in ids] if op in ("add", "upsert") else []
    metadata = [{"n": rng.randint(0, 9), "tag": rng.choice("abc")} for _ in texts]
    return {"op": op, "ids": ids, "texts": texts, "metadata": metadata}


def _apply(docs: dict, step: dict) -> dict:
    out = dict(docs)
    if step["op"] == "delete":
        for i in step["ids"]:
            out.pop(i, None)
    elif step["op"] in ("add", "upsert"):
        for i, t, m in zip(step["ids"], step["texts"], step["metadata"]):
            out[i] = (t, m)
    return out


def _journal(f, record: dict) -> None:
    f.write(json.dumps(record) + "\n")
    f.flush()
    os.fsync(f.fileno())


def _writer(path: str, journal: str, docs: dict, next_id: int, seed: int) -> None:
    """The child: runs operations until it is killed."""
    collection_module._AUTOSAVE_MIN = 15  # index files rewritten often: kills land in them
    collection_module._AUTOSAVE_FRACTION = 0.0
    rng = random.Random(seed)
    col = Collection.open(path, encoder=HashEncoder())
    with open(journal, "a") as f:
        _journal(f, {"ready": True})
        while True:
            step = _plan(rng, docs, next_id)
            _journal(f, {"intent": step})
            if step["op"] == "add":
                col.add(step["texts"], ids=step["ids"], metadata=step["metadata"])
            elif step["op"] == "upsert":
                col.upsert(step["texts"], ids=step["ids"], metadata=step["metadata"])
            elif step["op"] == "delete":
                col.delete(step["ids"])
            else:
                col.compact()
            _journal(f, {"ack": step["op"]})
            docs = _apply(docs, step)
            next_id = max([next_id] + [i + 1 for i in step["ids"]])


def _read_journal(journal: str):
    """(acknowledged steps, the step under way or None, whether the writer was ready)."""
    acked, pending, ready = [], None, False
    with open(journal) as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:  # a line cut by the kill
                break
            if "ready" in record:
                ready = True
            elif "intent" in record:
                pending = record["intent"]
            elif "ack" in record and pending is not None:
                acked.append(pending)
                pending = None
    return acked, pending, ready


def _snapshot(col: Collection) -> dict:
    return {d.id: (d.text, d.metadata) for d in col.get(col.ids())}


def _all_results(col: Collection, queries) -> list:
    """Every document's score per query and mode (k covers them all)."""
    k = len(col) + 1
    return [{m.id: m.score for m in col.search(q, k=k, mode=mode)}
            for q in queries for mode in ("dense", "sparse")]


def _same_results(a: list, b: list) -> bool:
    """The same documents with the same scores (to float32 rounding of the dense kernel,
    whose summation order may differ between two indexes)."""
    return all(x.keys() == y.keys() and all(abs(x[i] - y[i]) <= 1e-5 for i in x)
               for x, y in zip(a, b))


def check(path: str, docs: dict, queries, dense="flat") -> None:
    """The reopened collection holds exactly docs, whole, and searches as a fresh one."""
    with Collection.open(path, encoder=HashEncoder()) as col:
        got = _snapshot(col)
        assert got == docs, (f"documents differ: missing {sorted(set(docs) - set(got))[:5]}, "
                             f"extra {sorted(set(got) - set(docs))[:5]}")
        n_chunks = col._conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        assert n_chunks == len(docs), "a document without exactly its one chunk"
        recovered = _all_results(col, queries)
    fresh_path = path + ".fresh"
    shutil.rmtree(fresh_path, ignore_errors=True)
    with Collection.create(fresh_path, encoder=HashEncoder(), chunker="none", dense=dense) as fresh:
        if docs:
            ids = sorted(docs)
            fresh.add([docs[i][0] for i in ids], ids=ids, metadata=[docs[i][1] for i in ids])
        assert _same_results(_all_results(fresh, queries), recovered), \
            "searches differ from a fresh build"
    shutil.rmtree(fresh_path)


def run(directory: str, kills: int, seed: int = 0, max_delay: float = 0.25, log=None,
        dense="flat") -> dict:
    """Kills the writer `kills` times; returns counts (kills per operation under way, and
    how many of the operations under way were found applied). dense: the collection's
    dense setting (an approximate one must find every document when k covers them all)."""
    rng = random.Random(seed)
    path = os.path.join(directory, "col")
    with Collection.create(path, encoder=HashEncoder(), chunker="none", dense=dense):
        pass
    docs, next_id = {}, 0
    queries = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) for _ in range(4)]
    counts = {f"killed during {op}": 0 for op in OPERATIONS}
    counts.update({"killed between operations": 0, "under way and found applied": 0,
                   "under way and found not applied": 0, "under way, nothing visible to apply": 0,
                   "kills": 0, "acknowledged operations": 0})
    for round_no in range(kills):
        journal = os.path.join(directory, f"journal-{round_no}.jsonl")
        open(journal, "w").close()
        pid = os.fork()
        if pid == 0:  # the writer: never returns
            try:
                _writer(path, journal, docs, next_id, seed * 100_003 + round_no)
            finally:
                os._exit(1)
        deadline = time.monotonic() + 30
        while not _read_journal(journal)[2]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                raise RuntimeError("the writer did not start")
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, max_delay))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        acked, pending, _ = _read_journal(journal)
        for step in acked:
            docs = _apply(docs, step)
            next_id = max([next_id] + [i + 1 for i in step["ids"]])
        counts["kills"] += 1
        counts["acknowledged operations"] += len(acked)
        if pending is None:
            counts["killed between operations"] += 1
            check(path, docs, queries, dense)
        else:
            counts[f"killed during {pending['op']}"] += 1
            with Collection.open(path, encoder=HashEncoder()) as col:
                found = _snapshot(col)
            after = _apply(docs, pending)
            assert found in (docs, after), "an operation under way was applied in part"
            if after == docs:  # compact (or a delete of nothing): no visible effect
                counts["under way, nothing visible to apply"] += 1
            elif found == after:
                docs = after
                counts["under way and found applied"] += 1
            else:
                counts["under way and found not applied"] += 1
            next_id = max([next_id] + [i + 1 for i in pending["ids"]])
            check(path, docs, queries, dense)
        os.unlink(journal)
        if log is not None and (round_no + 1) % 25 == 0:
            log(f"{round_no + 1} kills: {len(docs)} documents")
    return counts
