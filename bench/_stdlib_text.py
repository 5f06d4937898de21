"""The standard-library text corpus of bench/tasks/bm25.py and bench/calibrate/bm25_algorithms.py:
the paragraphs (blank-line separated, whitespace collapsed, >= 40 characters) of this Python's
standard-library .py files, and query material drawn from them."""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

# Runs of ASCII letters and digits, 2-40 characters: the words on which ragcore's analyzer
# (no one-letter tokens), tantivy's default tokenizer (alphanumeric runs, none over 40 bytes),
# PISA's and bm25s's all agree.
_WORD = re.compile(r"[a-z0-9]{2,40}")


def stdlib_paragraphs() -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        texts += [p for p in (" ".join(part.split()) for part in source.split("\n\n"))
                  if len(p) >= 40]
    return texts


def paragraph_tokens(texts: list[str], rng) -> list[str]:
    """The distinct non-stopword tokens of a random paragraph, in order."""
    import ragcore

    stop = set(ragcore.sparse.tokenizer.STOPWORDS_EN)
    words = ragcore.tokenize(texts[rng.integers(len(texts))])
    return list(dict.fromkeys(t for t in words if t not in stop))


def stdlib_corpus(n_queries: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """(documents, queries) for comparing BM25 libraries: each paragraph as its words
    (lowercase ASCII letter-and-digit runs of 2-40 characters, split at anything else) joined
    by spaces, so that every library's tokenizer sees the same words; each query 2-5 distinct
    non-stopword words of a random document."""
    import numpy as np

    texts = []
    for paragraph in stdlib_paragraphs():
        words = [w for w in re.split(r"[^a-z0-9]+", paragraph.lower()) if _WORD.fullmatch(w)]
        if words:
            texts.append(" ".join(words))
    rng = np.random.default_rng(seed)
    queries = []
    while len(queries) < n_queries:
        tokens = paragraph_tokens(texts, rng)
        if len(tokens) >= 2:
            size = int(rng.integers(2, min(5, len(tokens)) + 1))
            queries.append(" ".join(rng.choice(tokens, size=size, replace=False)))
    return texts, queries
