"""``ragcore index`` and ``ragcore search``: a Collection from the command line.

    ragcore index DIR_OR_JSONL --collection PATH     text files of a folder, or JSONL lines
                                                     {"id": ..., "text": ..., "metadata": {...}}
    ragcore search PATH "query" [--filter JSON] [--mode hybrid|dense|sparse] [--k 10] [--json]

Indexing upserts: running it again on changed files replaces those documents (and encodes
only chunk texts not seen before). Progress goes to stderr: a bar on a terminal, otherwise a
line every few seconds (documents, chunks/s, ETA). Files left out (empty, only whitespace,
unreadable, another suffix) and files that are not valid UTF-8 (indexed with the bad bytes
replaced) are named on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time

TEXT_SUFFIXES = (".txt", ".md", ".rst", ".text", ".markdown")
_BATCH = 64
PROGRESS_EVERY = 5.0  # seconds between two progress lines when stderr is not a terminal
_SKIPS_NAMED = 10     # files named per kind of skip; the rest are counted
SKIP_MESSAGES = {
    "empty": "skipped {n} empty file{s}",
    "blank": "skipped {n} file{s} holding only whitespace",
    "unreadable": "skipped {n} file{s} that could not be read",
    "other": "skipped {n} file{s} without a text suffix (" + ", ".join(TEXT_SUFFIXES) + ")",
    "empty_text": "skipped {n} JSONL line{s} whose text is empty",
    "replaced": "{n} file{s} not valid UTF-8, indexed with each undecodable byte replaced by "
                "U+FFFD (convert to UTF-8 to keep those characters)",
}


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
    index.add_argument("--no-progress", action="store_true",
                       help="no progress on stderr (a bar on a terminal, otherwise a line "
                            "every few seconds: documents, chunks/s, ETA)")
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


def read_documents(source: str, skipped: list | None = None):
    """(id, text, metadata) of every document of a folder or a JSONL file.

    skipped, when a list, receives (kind, name) for each file or line left out and each file
    whose text was altered on reading; SKIP_MESSAGES says what each kind means.
    """
    note = skipped.append if skipped is not None else (lambda item: None)
    if os.path.isdir(source):
        yield from _read_folder(source, note)
        return
    if not os.path.isfile(source):
        raise FileNotFoundError(f"{source}: no such file or folder")
    yield from _read_jsonl(source, note)


def _read_folder(source: str, note):
    for root, dirs, files in os.walk(source):
        dirs.sort()
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), source)
            if not name.lower().endswith(TEXT_SUFFIXES):
                note(("other", rel))
                continue
            text = _read_text(os.path.join(root, name), rel, note)
            if text is not None:
                yield rel, text, {"path": rel, "suffix": os.path.splitext(name)[1].lower()}


def _read_text(path: str, rel: str, note) -> str | None:
    """The file's text, or None (noted) when there is none to index."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        note(("unreadable", f"{rel} ({err.strerror or err})"))
        return None
    if not data:
        note(("empty", rel))
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        # Indexed anyway: one stray byte should not hide a whole document, but the user
        # is told, since the replaced characters cannot be found by a search.
        text = data.decode("utf-8", errors="replace")
        note(("replaced", f"{rel} (first bad byte at offset {err.start})"))
    if not text.strip():
        note(("blank", rel))
        return None
    return text


def _read_jsonl(source: str, note):
    with open(source, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{source}:{number}: not JSON ({err})") from None
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise ValueError(f"{source}:{number}: expected an object with 'text' (a string; "
                                 "and 'id', 'metadata')")
            if not record["text"].strip():
                note(("empty_text", f"line {number}"))
                continue
            yield record.get("id", f"{os.path.basename(source)}:{number}"), record["text"], \
                record.get("metadata") or {}


def report_skipped(skipped: list, stream=None) -> None:
    """One line per kind of skip, naming the first few files."""
    stream = stream or sys.stderr
    by_kind: dict = {}
    for kind, name in skipped:
        by_kind.setdefault(kind, []).append(name)
    for kind, names in by_kind.items():
        shown = ", ".join(names[:_SKIPS_NAMED])
        more = f" and {len(names) - _SKIPS_NAMED} more" if len(names) > _SKIPS_NAMED else ""
        message = SKIP_MESSAGES[kind].format(n=len(names), s="" if len(names) == 1 else "s")
        print(f"ragcore index: {message}: {shown}{more}", file=stream)


class _ChunkCounter:
    """Counts the chunks the collection cuts while it indexes.

    upsert returns only document ids, so the count is taken where the collection chunks
    each text: its _chunk method, wrapped for this command's lifetime.
    """

    def __init__(self, col):
        self.chunks = 0
        chunk = col._chunk

        def counted(text):
            out = chunk(text)
            self.chunks += len(out)
            return out

        col._chunk = counted


def _open_or_create(args):
    from ..rag.chunking import Chunker
    from ..rag.collection import Collection

    if os.path.isfile(os.path.join(args.collection, "collection.sqlite")):
        return Collection.open(args.collection)
    return Collection.create(args.collection, dense=args.dense,
                             chunker=Chunker(None, args.chunk_size, args.overlap))


def _index(args) -> int:
    from .._util.progress import Progress

    skipped = []
    docs = list(read_documents(args.source, skipped))
    report_skipped(skipped)
    if not docs:
        raise ValueError(f"{args.source}: no documents found")
    show = not args.no_progress
    with _open_or_create(args) as col:
        counter = _ChunkCounter(col)
        if show:
            print(f"indexing {len(docs)} documents into {args.collection} (the first batch also "
                  "loads the model)", file=sys.stderr, flush=True)
        # On a terminal a bar redrawn in place; otherwise (a log, a pipe) a line every
        # PROGRESS_EVERY seconds, so a long run is visibly alive without flooding the log.
        progress = Progress(len(docs), "indexing", enabled=None if show else False,
                            log_lines=show, log_every=PROGRESS_EVERY)
        t0 = time.perf_counter()
        for start in range(0, len(docs), _BATCH):
            batch = docs[start:start + _BATCH]
            col.upsert([d[1] for d in batch], [d[0] for d in batch], [d[2] for d in batch])
            progress.update(start + len(batch),
                            _rate_note(counter.chunks, time.perf_counter() - t0))
        progress.close()
        seconds = time.perf_counter() - t0
        print(f"{len(docs)} documents indexed ({counter.chunks} chunks in {seconds:.1f} s); "
              f"the collection holds {len(col)}")
    return 0


def _rate_note(chunks: int, seconds: float) -> str:
    rate = chunks / seconds if seconds > 0 else 0.0
    return f"documents, {chunks} chunks, {rate:.1f} chunks/s"


def _search(args) -> int:
    from ..rag.collection import Collection

    flt = None
    if args.filter:
        try:
            flt = json.loads(args.filter)
        except ValueError as err:
            raise ValueError(f"--filter is not JSON ({err})") from None
    t0 = time.perf_counter()
    with Collection.open(args.collection, readonly=True) as col:
        load = {"collection": time.perf_counter() - t0,
                "model": None if args.mode == "sparse" else _load_model(col)}
        results = col.search(args.query, k=args.k, mode=args.mode, filter=flt, by=args.by)
    if args.json:
        print(json.dumps({"results": [m.__dict__ for m in results],
                          "timings": results.timings, "load_seconds": load}, indent=2))
        return 0
    for rank, m in enumerate(results, 1):
        snippet = " ".join(m.text.split())[:160]
        print(f"{rank:3d}. {m.score:.4f}  {m.id} [{m.start}:{m.end}]  {snippet}")
    print(_timing_line(len(results), sum(results.timings.values()), load))
    return 0


def _load_model(col) -> float:
    """Seconds to load the collection's encoder. The collection loads it lazily, inside its
    first dense search; loading it here keeps that one-off cost out of the search time."""
    t0 = time.perf_counter()
    col._get_encoder()
    return time.perf_counter() - t0


def _timing_line(n_results: int, search_s: float, load: dict) -> str:
    model = "no model (sparse search)" if load["model"] is None else \
        f"model loaded in {load['model']:.2f} s"
    return (f"({n_results} results; search {search_s * 1000:.1f} ms; {model}; "
            f"collection opened in {load['collection']:.2f} s)")
