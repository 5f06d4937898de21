"""The standard-library text corpus of bm25_algorithms.py: the paragraphs (blank-line
separated, whitespace collapsed, >= 40 characters) of this Python's standard-library .py files,
and query material drawn from them."""

from __future__ import annotations

import sysconfig
from pathlib import Path


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
