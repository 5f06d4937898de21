"""A brief fuzz run of Collection (bench/fuzz.py --kinds collection is the long run).

RAGCORE_FUZZ_COLLECTION_RUNS (default 120) mutated copies of the seed collections: each
must be refused with a ragcore error naming it, or keep every contract
(collection_oracle.check_collection). The collections under crashers/collection-* broke a
contract in a long run before a fix (mutation.txt says how each was changed).
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import collection_mutator  # noqa: E402
import collection_oracle  # noqa: E402

RUNS = int(os.environ.get("RAGCORE_FUZZ_COLLECTION_RUNS", "120"))
CRASHERS = pathlib.Path(__file__).parent / "crashers"


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return collection_mutator.seed_collections(str(tmp_path_factory.mktemp("seeds")))


def test_seed_collections_keep_the_contracts(seeds, tmp_path):
    for seed in seeds:
        collection_mutator.copy_seed(seed, str(tmp_path / "c"))
        assert collection_oracle.run_one(str(tmp_path / "c")) == "kept"


def test_mutated_collections_are_refused_or_sound(seeds, tmp_path):
    rng = np.random.default_rng(11)
    outcomes = collections.Counter()
    for i in range(RUNS):
        path = str(tmp_path / "c")
        collection_mutator.copy_seed(seeds[i % len(seeds)], path)
        mutation = collection_mutator.mutate(path, rng)
        try:
            outcomes[collection_oracle.run_one(path, mutation.answers_checked)] += 1
        except collection_oracle.ContractBroken as err:
            raise AssertionError(f"mutation {i} ({mutation.what}): {err}") from err
    # Both outcomes occur: the mutations reach the checks, and not every one is refused.
    assert outcomes["kept"] > RUNS // 10
    assert outcomes["CollectionCorruptError"] > RUNS // 10


@pytest.mark.parametrize("kept", sorted(CRASHERS.glob("collection-*")), ids=lambda p: p.name)
def test_kept_collections(kept, tmp_path):
    collection_mutator.copy_seed(str(kept), str(tmp_path / "c"))
    assert collection_oracle.run_one(str(tmp_path / "c")) in ("kept", "CollectionCorruptError")


def test_the_oracle_checks_a_chunk_it_met_before_when_its_row_differs():
    from ragcore.rag.collection.collection import Document, Match

    docs = {1: Document(1, "Alpha beta. Gamma.", {"year": 2001})}
    good = Match(1, 7, 0, 0, 11, "Alpha beta.", 0.5, {"year": 2001})
    verified = set()
    collection_oracle._check_matches([good], docs, 5, None, "chunk", "here", verified)
    for bad in (good.__class__(**{**good.__dict__, "text": "Alpha beta!"}),
                good.__class__(**{**good.__dict__, "end": 99}),
                good.__class__(**{**good.__dict__, "score": float("nan")}),
                good.__class__(**{**good.__dict__, "metadata": {"year": 1999}})):
        with pytest.raises(collection_oracle.WrongAnswer):
            collection_oracle._check_matches([bad], docs, 5, None, "chunk", "here", verified)
    with pytest.raises(collection_oracle.WrongAnswer, match="fails the filter"):
        collection_oracle._check_matches([good.__class__(**{**good.__dict__, "metadata": {}})],
                                         {1: Document(1, docs[1].text, {})}, 5,
                                         collection_oracle.FILTER, "chunk", "here", verified)


def test_an_index_file_mutated_twice_does_not_stop_the_mutators(seeds, tmp_path):
    import mutator

    path = str(tmp_path / "c")
    collection_mutator.copy_seed(seeds[0], path)
    name = next(f for f in os.listdir(path) if f.startswith("dense-"))
    with open(os.path.join(path, name), "rb") as f:
        header, payload = mutator.split(f.read())
    for spec in header["arrays"]:
        spec["nbytes"] = str(spec["nbytes"])  # what a first mutation may leave
    twice = mutator.assemble(json.dumps(header).encode(), payload)
    for seed in range(60):
        mutator.mutate(twice, np.random.default_rng(seed))
    for seed in range(30):  # a file the mutators cannot read at all
        collection_mutator.copy_seed(seeds[0], path)
        for f in os.listdir(path):
            if f.endswith(".rci"):
                with open(os.path.join(path, f), "wb") as out:
                    out.write(b"not an index file")
        collection_mutator._index_files(path, np.random.default_rng(seed))
