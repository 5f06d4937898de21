"""A brief fuzz run of every loader and of the tokenizer (bench/fuzz.py is the long run).

Each loader gets RAGCORE_FUZZ_RUNS (default 1500) mutated, re-checksummed files: each
must be refused with IndexFileError or load into an index that keeps the contracts
(mutator.check_index). The files under crashers/ are the inputs that crashed or broke
a contract before the loaders checked every field: they are loaded here every time.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import mutator  # noqa: E402

import ragcore  # noqa: E402

RUNS = int(os.environ.get("RAGCORE_FUZZ_RUNS", "1500"))
CRASHERS = pathlib.Path(__file__).parent / "crashers"


@pytest.mark.parametrize("kind", mutator.KINDS)
def test_mutated_files_are_refused_or_sound(kind, tmp_path):
    seeds = mutator.seed_files(kind, tmp_path)
    rng = np.random.default_rng(mutator.KINDS.index(kind))
    loaded = 0
    for i in range(RUNS):
        data = mutator.mutate(seeds[i % len(seeds)], rng)
        try:
            loaded += mutator.run_one(kind, data, str(tmp_path))
        except mutator.ContractBroken as err:
            raise AssertionError(f"{kind} mutation {i}: {err}\n{mutator.describe(data)}") from err
    # The mutations must not all be refused (then the harness would test nothing) ...
    assert loaded > RUNS // 50
    # ... nor all accepted (then they would change nothing that is checked).
    assert loaded < RUNS


@pytest.mark.parametrize("path", sorted(CRASHERS.glob("*.rc")), ids=lambda p: p.name)
def test_kept_crashers(path, tmp_path):
    kind = path.name.split("-")[0]
    mutator.run_one(kind, path.read_bytes(), str(tmp_path))


def test_seed_files_load_and_keep_the_contracts(tmp_path):
    for kind in mutator.KINDS:
        for data in mutator.seed_files(kind, tmp_path):
            assert mutator.run_one(kind, data, str(tmp_path))


_WORD = re.compile(r"(?u)\b\w\w+\b")
_ALPHABET = ("ab Z9_-'.\u00e9\u00df\u0130\u03a3\u0660\u0663\u4e2d\u0301\u200d\U0001f600"
             "\u2028\t\n\x00\ufeff\u00a0\u1e9e\u2126")


def test_tokenizer_fuzz():
    """Random texts from an awkward alphabet tokenize as the default rule does; random
    bytes either decode (and then tokenize as their text does) or are refused."""
    rng = np.random.default_rng(7)
    texts, blobs = [], []
    for _ in range(RUNS):
        length = int(rng.integers(0, 40))
        texts.append("".join(rng.choice(list(_ALPHABET), size=length)))
        blobs.append(bytes(rng.integers(0, 256, size=int(rng.integers(0, 24)), dtype=np.uint8)))
    got = ragcore._core.tokenize_texts(texts, n_threads=1)
    assert got == [_WORD.findall(t.lower()) for t in texts]
    for blob in blobs:
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError:
            with pytest.raises(ValueError, match="UTF-8"):
                ragcore._core.tokenize_texts([blob], n_threads=1)
            continue
        assert ragcore._core.tokenize_texts([blob], n_threads=1) == [_WORD.findall(text.lower())]
