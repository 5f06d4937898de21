"""``ragcore index`` and ``ragcore search``: a Collection from the command line.

    ragcore index DIR_OR_JSONL --collection PATH     text files of a folder, or JSONL lines
                                                     {"id": ..., "text": ..., "metadata": {...}}
    ragcore search PATH "query" [--filter JSON] [--mode hybrid|dense|sparse] [--k 10] [--json]

Indexing upserts: running it again on changed files replaces those documents (and encodes
only chunk texts not seen before).
"""

from __future__ import annotations

import json
import os
import sys

TEXT_SUFFIXES = (".txt", ".md", ".rst", ".text", ".markdown")
_BATCH = 64


def add_arguments(sub) -> None:
    index = sub.add_parser("index", help="add text files or JSONL documents to a collection "
                                         "(created if missing)")
    index.add_argument("source", help=f"a folder (its {', '.join(TEXT_SUFFIXES)} files, "
                                      "recursively) or a .jsonl file")
    index.add_argument("--collection", required=True, help="the collection directory")
    index.add_argument("--dense", choices=("flat", "ivf"), default="flat",
                       help="dense index of a new collection (default flat: exact)")
    index.add_argument("--chunk-size", type=int, default=200, help="tokens per chunk (default 200)")
    index.add_argument("--overlap", type=int, default=40, help="tokens of overlap (default 40)")
    index.add_argument("--no-progress", action="store_true", help="no progress bar")
    search = sub.add_parser("search", help="search a collection")
    search.add_argument("collection", help="the collection directory")
    search.add_argument("query")
    search.add_argument("--filter", help='a metadata filter as JSON, e.g. \'{"year": {"$gte": 2020}}\'')
    search.add_argument("--mode", choices=("hybrid", "dense", "sparse"), default="hybrid")
    search.add_argument("--k", type=int, default=10, help="results (default 10)")
    search.add_argument("--by", choices=("chunk", "document"), default="chunk")
    search.add_argument("--json", action="store_true", help="print the results as JSON")


def run(args) -> int:
    try:
        return _index(args) if args.command == "index" else _search(args)
    except (ValueError, TypeError, KeyError, OSError) as err:
        print(f"ragcore {args.command}: {err}", file=sys.stderr)
        return 2


def read_documents(source: str):
    """(id, text, metadata) of every document of a folder or a JSONL file."""
    if os.path.isdir(source):
        for root, dirs, files in os.walk(source):
            dirs.sort()
            for name in sorted(files):
                if not name.lower().endswith(TEXT_SUFFIXES):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, source)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                if text.strip():
                    yield rel, text, {"path": rel, "suffix": os.path.splitext(name)[1].lower()}
        return
    if not os.path.isfile(source):
        raise FileNotFoundError(f"{source}: no such file or folder")
    with open(source, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{source}:{number}: not JSON ({err})") from None
            if not isinstance(record, dict) or "text" not in record:
                raise ValueError(f"{source}:{number}: expected an object with 'text' (and 'id', "
                                 "'metadata')")
            yield record.get("id", f"{os.path.basename(source)}:{number}"), record["text"], \
                record.get("metadata") or {}


def _index(args) -> int:
    from .._util.progress import Progress
    from ..rag.chunking import Chunker
    from ..rag.collection import Collection

    docs = list(read_documents(args.source))
    if not docs:
        raise ValueError(f"{args.source}: no documents found")
    path = args.collection
    if os.path.isfile(os.path.join(path, "collection.sqlite")):
        col = Collection.open(path)
    else:
        col = Collection.create(path, chunker=Chunker(None, args.chunk_size, args.overlap),
                                dense=args.dense)
    progress = Progress(len(docs), "indexing", enabled=False if args.no_progress else None)
    with col:
        for start in range(0, len(docs), _BATCH):
            batch = docs[start:start + _BATCH]
            col.upsert([d[1] for d in batch], [d[0] for d in batch], [d[2] for d in batch])
            progress.update(start + len(batch))
        progress.close()
        print(f"{len(docs)} documents indexed; the collection holds {len(col)}")
    return 0


def _search(args) -> int:
    from ..rag.collection import Collection

    flt = None
    if args.filter:
        try:
            flt = json.loads(args.filter)
        except ValueError as err:
            raise ValueError(f"--filter is not JSON ({err})") from None
    with Collection.open(args.collection, readonly=True) as col:
        results = col.search(args.query, k=args.k, mode=args.mode, filter=flt, by=args.by)
    if args.json:
        print(json.dumps({"results": [m.__dict__ for m in results],
                          "timings": results.timings}, indent=2))
        return 0
    for rank, m in enumerate(results, 1):
        snippet = " ".join(m.text.split())[:160]
        print(f"{rank:3d}. {m.score:.4f}  {m.id} [{m.start}:{m.end}]  {snippet}")
    total = sum(results.timings.values()) * 1000
    print(f"({len(results)} results, {total:.1f} ms)")
    return 0
