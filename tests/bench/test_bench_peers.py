"""bench/peers/: one copy of each adapter. The approximate-search ones are those of
`ragcore bench ann` (ragcore.cli.bench.peers), listed under their library's module."""

from __future__ import annotations

import numpy as np
import pytest

import _bench_path  # noqa: F401  (bench/ on sys.path)
from peers import modules

pytest.importorskip("ragcore._core")
from ragcore.cli.bench import peers as cli_peers  # noqa: E402


def test_every_ann_adapter_is_one_of_ragcore_bench_anns():
    listed = [cls for module in modules() for cls in module.TASKS.get("ann", [])]
    assert listed and all(issubclass(cls, cli_peers.System) for cls in listed)
    assert all(cls in cli_peers.SYSTEMS.values() for cls in listed)
    assert all(cls.sweep in ("ef", "nprobe") for cls in listed)


def test_the_ragcore_adapters_answer_through_the_suite_interface():
    x = np.random.default_rng(0).standard_normal((300, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    exact = np.argsort(-(x[:5] @ x.T), axis=1, kind="stable")[:, :5]
    for cls in (cli_peers.RagcoreIVF, cli_peers.RagcoreHNSW):
        system = cls(1, {"nlist": 4, "M": 8, "ef_construction": 40})
        system.build(x)
        value = 4 if cls.sweep == "nprobe" else 300  # every list / a wide walk: exact
        np.testing.assert_array_equal(system.search(x[:5], 5, value), exact)
        assert system.memory_bytes() > x.nbytes
