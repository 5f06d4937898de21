"""Evaluation data that needs no download.

- ``stdlib_docs``: a real corpus built from the running Python's standard
  library sources (parsed with ``ast``, never imported). Each public module,
  class, function and method is a document: its qualified name, signature and
  docstring minus the first line. The first line, the summary its author
  wrote, is the question (kept when it has at least four words and is unique
  in the corpus); the evidence is the document's docstring body. Deterministic
  for a given Python version.
- ``debian_packages``: the package descriptions of a Debian-based machine
  (dpkg's status file and apt's lists, see ``cli.debian_packages``): the
  package name and long description are the document, the short description
  the question, the package its one relevant document.
- ``man_pages``: the manual pages of the machine (``/usr/share/man``, see
  ``cli.man_pages``): the page name and its text (troff stripped, NAME section
  left out) are the document, the NAME line's description the question, the
  page its one relevant document.
- ``load_beir``: a BEIR-format folder (corpus.jsonl, queries.jsonl,
  qrels/<split>.tsv), so the same evaluation runs on a user's data.
- ``BUILTIN`` / ``load``: the built-in corpora by name (``ragcore eval NAME``).
"""

from __future__ import annotations

import ast
import csv
import json
import functools
import sysconfig
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

_SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__", "lib2to3", "ensurepip",
              "turtledemo", "pydoc_data"}


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str
    metadata: dict = field(default_factory=dict)


@dataclass
class Dataset:
    """documents; questions[i] with its qid, its evidence spans (groups of
    alternative (doc_id, start, end) spans, or None) and doc-level qrels."""

    name: str
    documents: list
    questions: list
    qids: list
    evidence: list | None
    qrels: dict                # {qid: {doc_id: grade}}

    def texts(self) -> list:
        return [d.text for d in self.documents]


def _public(name: str) -> bool:
    return not name.startswith("_")


def _module_names(root: Path):
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if any(p in _SKIP_DIRS for p in parts) or not all(_public(p) or p == "__init__" for p in parts):
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            yield ".".join(parts), path


def _signature(node) -> str:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"({ast.unparse(node.args)})"
    if isinstance(node, ast.ClassDef) and node.bases:
        return f"({', '.join(ast.unparse(b) for b in node.bases)})"
    return ""


def _documented(tree: ast.Module, module: str):
    """(qualified name, node) of the module and its public classes, functions, methods."""
    yield module, tree
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _public(node.name):
            yield f"{module}.{node.name}", node
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(item.name):
                        yield f"{module}.{node.name}.{item.name}", item


@functools.lru_cache(maxsize=4)
def _entries(root: Path) -> tuple:
    """(qualname, signature, summary line, body) of every documented public object
    (parsing the standard library takes seconds: kept per root)."""
    return tuple(_parse_entries(root))


def _parse_entries(root: Path):
    for module, path in _module_names(root):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for qualname, node in _documented(tree, module):
            doc = ast.get_docstring(node)
            if not doc:
                continue
            summary, _, body = doc.strip().partition("\n")
            body = body.strip()
            if body:
                yield qualname, _signature(node), summary.strip(), body


def stdlib_docs(max_docs: int | None = None, seed: int = 0, root=None) -> Dataset:
    """The standard-library documentation corpus (see the module docstring).

    max_docs: a seeded random sample of that many documents (questions follow
    their documents). root: another directory of Python sources to use instead.
    """
    root = Path(root or sysconfig.get_paths()["stdlib"])
    entries = _sample(list(_entries(root)), max_docs, seed)
    summaries = Counter(e[2] for e in entries)
    documents, questions, qids, evidence, qrels = [], [], [], [], {}
    for qualname, signature, summary, body in entries:
        head = f"{qualname}{signature}\n\n"
        documents.append(Document(qualname, head + body,
                                  {"source": qualname.split(".")[0], "section": qualname}))
        if len(summary.split()) >= 4 and summaries[summary] == 1:
            qid = f"q{len(questions)}"
            questions.append(summary)
            qids.append(qid)
            evidence.append([[(qualname, len(head), len(head) + len(body))]])
            qrels[qid] = {qualname: 1}
    return Dataset("stdlib_docs", documents, questions, qids, evidence, qrels)


def _sample(entries: list, max_docs: int | None, seed: int) -> list:
    if max_docs is None:
        return entries
    if isinstance(max_docs, bool) or not isinstance(max_docs, int) or max_docs < 1:
        raise ValueError(f"max_docs must be an integer >= 1 or None, got {max_docs!r}")
    pick = np.random.default_rng(seed).choice(len(entries), min(max_docs, len(entries)), replace=False)
    return [entries[i] for i in sorted(pick)]


def debian_packages(max_docs: int | None = None, seed: int = 0, status=None, lists=None) -> Dataset:
    """The Debian package-description corpus (see the module docstring).

    status / lists: dpkg's status file and apt's lists folder (defaults: /var/lib/dpkg/status
    and /var/lib/apt/lists; pass False to leave one out). max_docs: a seeded sample of that
    many packages. Raises FileNotFoundError when the machine has neither.
    """
    from . import debian_packages as source

    status = str(source.STATUS if status is None else status) if status is not False else None
    lists = str(source.LISTS if lists is None else lists) if lists is not False else None
    return _one_line_questions("debian_packages",
                               _sample(list(source.packages(status, lists)), max_docs, seed))


def man_pages(max_docs: int | None = None, seed: int = 0, root=None, exclude=()) -> Dataset:
    """The manual-page corpus (see the module docstring).

    root: the man folder (default /usr/share/man). exclude: glob patterns of page file names
    left out (e.g. ``("gcloud*",)``). max_docs: a seeded sample of that many pages. Raises
    FileNotFoundError when root has no man<section> folder.
    """
    from . import man_pages as source

    pages = source.pages(str(root or source.ROOT), tuple(exclude))
    return _one_line_questions("man_pages", _sample(list(pages), max_docs, seed))


def _one_line_questions(name: str, entries) -> Dataset:
    """A Dataset of (title, one-line description, body) entries: each title and body a
    document, each description of four words or more that no other entry shares its
    question, with the entry its one relevant document."""
    counts = Counter(description for _, description, _ in entries)
    documents, questions, qids, qrels = [], [], [], {}
    for title, description, body in entries:
        documents.append(Document(title, f"{title}\n\n{body}", {"source": title, "section": title}))
        if len(description.split()) >= 4 and counts[description] == 1:
            qid = f"q{len(questions)}"
            questions.append(description)
            qids.append(qid)
            qrels[qid] = {title: 1}
    return Dataset(name, documents, questions, qids, None, qrels)


BUILTIN = {"stdlib_docs": stdlib_docs, "debian_packages": debian_packages, "man_pages": man_pages}


def load(name_or_path, split: str = "test", max_docs: int | None = None, seed: int = 0) -> Dataset:
    """A BEIR folder if the path exists, else a built-in corpus by name (BUILTIN)."""
    if Path(name_or_path).exists() or str(name_or_path) not in BUILTIN:
        if not Path(name_or_path).exists() and "/" not in str(name_or_path):
            raise FileNotFoundError(f"{name_or_path!r} is neither a BEIR folder nor a built-in "
                                    f"corpus ({', '.join(BUILTIN)})")
        return load_beir(name_or_path, split)
    return BUILTIN[str(name_or_path)](max_docs=max_docs, seed=seed)


def load_beir(path, split: str = "test") -> Dataset:
    """A BEIR folder: corpus.jsonl (_id, title, text), queries.jsonl (_id, text),
    qrels/<split>.tsv (query-id, corpus-id, score; a header line). Questions are
    the queries that have judgements; evidence is None (labels are documents)."""
    path = Path(path)
    files = {"corpus": path / "corpus.jsonl", "queries": path / "queries.jsonl",
             "qrels": path / "qrels" / f"{split}.tsv"}
    for what, file in files.items():
        if not file.is_file():
            raise FileNotFoundError(f"path: {file} is missing (a BEIR folder has corpus.jsonl, "
                                    "queries.jsonl and qrels/<split>.tsv)")
    documents = []
    for line_no, record in _jsonl(files["corpus"]):
        title, text = record.get("title") or "", record.get("text") or ""
        documents.append(Document(str(record["_id"]), f"{title}\n\n{text}" if title else text,
                                  {"source": str(record["_id"]), "section": title}))
    queries = {str(r["_id"]): r["text"] for _, r in _jsonl(files["queries"])}
    qrels: dict = {}
    with open(files["qrels"], newline="", encoding="utf-8") as f:
        for row_no, row in enumerate(csv.reader(f, delimiter="\t")):
            if row_no == 0 and not row[-1].lstrip("-").isdigit():
                continue  # the header
            if len(row) != 3:
                raise ValueError(f"{files['qrels']} line {row_no + 1}: expected 3 tab-separated columns")
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise ValueError(f"{files['qrels']}: query {missing[0]!r} is not in queries.jsonl")
    qids = sorted(qrels)
    return Dataset(path.name, documents, [queries[q] for q in qids], qids, None, qrels)


def _jsonl(file: Path):
    with open(file, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{file} line {line_no}: not JSON ({err})") from None
            if "_id" not in record:
                raise ValueError(f"{file} line {line_no}: no _id field")
            yield line_no, record
