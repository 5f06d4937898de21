"""Real embeddings for ``ragcore bench ann --data stdlib``: the bundled encoder's vectors of
paragraphs of the running Python's standard-library docstrings.

Every docstring of the stdlib sources (modules, classes, functions, private ones
included; parsed with ``ast``, never imported) is split at blank lines, and every block of
consecutive comment lines is one paragraph too; paragraphs of 40 to 1,000 characters,
deduplicated, in a seeded order, are the texts. The stdlib holds about 19k of them; a
larger ``n`` continues with the docstring paragraphs of the installed packages
(site-packages, found the same way, listed once per set of installed distributions and
cached), so that the issue's ~100k real vectors exist. The vectors are
computed once and kept in the embedding cache (``ragcore.cli.embedding_cache``), so a
later run costs a lookup. Queries are held-out paragraphs, never corpus rows.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import sysconfig
from pathlib import Path

import numpy as np

_SKIPPED = {"test", "tests", "idle_test", "site-packages", "__pycache__", "lib2to3", "ensurepip",
            "turtledemo", "pydoc_data"}
_MIN_CHARS, _MAX_CHARS = 40, 1000
_ENCODE_SLICE = 2000  # texts per cache write, so an interrupted run keeps what it encoded


def stdlib_paragraphs(root=None) -> list[str]:
    """The unique docstring paragraphs of the stdlib sources under root, sorted."""
    root = Path(root or sysconfig.get_paths()["stdlib"])
    return sorted(_source_paragraphs(root))


def site_paragraphs() -> list[str]:
    """The unique docstring paragraphs of the installed packages (site-packages), sorted.

    Listed once per site-packages directory and kept under the ragcore cache: a package
    installed later does not change the benchmark's data (it would reshuffle the seeded
    selection); delete the file to list again. Callers print its digest (texts_digest)."""
    from ...encoders.models import cache_dir

    root = Path(sysconfig.get_paths()["purelib"])
    key = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    path = cache_dir() / "derived" / f"site_paragraphs_{key}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    texts = sorted(_source_paragraphs(root))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(texts), encoding="utf-8")
    tmp.replace(path)
    return texts


def texts_digest(texts) -> str:
    """A short digest of a text list: two runs used the same data when it matches."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8") + b"\0")
    return h.hexdigest()[:12]


def _source_paragraphs(root: Path) -> set[str]:
    found = set()
    for path in sorted(root.rglob("*.py")):
        if _SKIPPED & set(path.relative_to(root).parts):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for block in _comment_blocks(source):
            if _MIN_CHARS <= len(block) <= _MAX_CHARS:
                found.add(block)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            for paragraph in re.split(r"\n\s*\n", doc or ""):
                text = " ".join(paragraph.split())
                if _MIN_CHARS <= len(text) <= _MAX_CHARS:
                    found.add(text)
    return found


def _comment_blocks(source: str):
    """Runs of lines that hold only a comment, joined ("#!" and coding lines excluded)."""
    block = []
    for line in source.splitlines() + [""]:
        stripped = line.strip()
        if stripped.startswith("#") and not stripped.startswith(("#!", "# -*-")):
            block.append(stripped.lstrip("#").strip())
        elif block:
            yield " ".join(" ".join(block).split())
            block = []


def stdlib_embeddings(n: int, n_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(corpus [n, d], queries [n_queries, d]) unit vectors of distinct paragraphs."""
    from ...encoders import default_encoder
    from ..embedding_cache import EmbeddingCache

    texts = stdlib_paragraphs()
    if n + n_queries > len(texts):
        known = set(texts)
        extra = [t for t in site_paragraphs() if t not in known]
        print(f"  stdlib embeddings: the stdlib has {len(texts)} paragraphs; adding the "
              f"{len(extra)} of the installed packages' docstrings (list digest "
              f"{texts_digest(extra)})", file=sys.stderr)
        texts += extra
    if n + n_queries > len(texts):
        raise SystemExit(f"--data stdlib: {len(texts)} paragraphs here, asked for {n} + "
                         f"{n_queries} queries; lower --n")
    order = np.random.default_rng(seed).permutation(len(texts))[: n + n_queries]
    chosen = [texts[i] for i in order]
    # fp32, not the default precision: the benchmark data must not depend on the CPU's
    # int8 support (the default "auto" picks int8 where it has VNNI or AMX)
    cache = EmbeddingCache(default_encoder("fp32"), show_progress=False)
    parts = []
    for start in range(0, len(chosen), _ENCODE_SLICE):
        parts.append(cache.encode(chosen[start : start + _ENCODE_SLICE]))
        if cache.misses:
            print(f"  stdlib embeddings: {start + len(parts[-1])}/{len(chosen)} "
                  f"({cache.misses} computed so far, cached under {cache.directory})",
                  file=sys.stderr, flush=True)
    x = np.concatenate(parts).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x[:n]), np.ascontiguousarray(x[n:])
