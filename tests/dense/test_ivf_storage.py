"""The registry of IVF storages: every dtype IVFIndex takes is one entry, options belong to
their storage, and a storage's own features say which dtypes have them."""

import numpy as np
import pytest

import ragcore
from ragcore import _core
from ragcore.dense import ivf, ivf_storage


def test_the_registry_is_what_ivfindex_and_its_files_accept():
    assert ivf.DTYPES == tuple(ivf_storage.STORAGES)
    assert set(ivf_storage.STORAGES) == {"float32", "float16", "bfloat16", "sq8", "pq4", "rabitq"}
    with pytest.raises(ValueError, match="'rabitq'"):  # the choices name every storage
        ragcore.IVFIndex(8, 2, dtype="int4")


@pytest.mark.parametrize("dtype, option, takers", [
    ("float32", {"bits": 2}, "dtype='rabitq' only, not dtype='float32'"),
    ("pq4", {"m": 4, "epsilon": 1.0}, "dtype='rabitq' only, not dtype='pq4'"),
    ("rabitq", {"m": 4}, "dtype='pq4' only, not dtype='rabitq'"),
])
def test_an_option_of_another_storage_names_the_dtypes_that_take_it(dtype, option, takers):
    with pytest.raises(ValueError, match=takers):
        ragcore.IVFIndex(16, 2, dtype=dtype, **option)


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        ragcore.IVFIndex(16, 2, bogus=1)


def test_a_storage_feature_on_another_storage_is_an_attribute_error():
    index = ragcore.IVFIndex(16, 2, dtype="sq8")
    assert (index.m, index.bits, index.epsilon, index.last_search_counts) == (None, None, None, {})
    for name in ("rotation", "fast_scan"):
        with pytest.raises(AttributeError, match=f"IVFIndex.{name} applies to dtype='rabitq' only"):
            getattr(index, name)
        assert not hasattr(index, name)
    with pytest.raises(AttributeError, match="estimates applies to dtype='rabitq' only"):
        index.estimates(np.ones(16, np.float32), 0)


@pytest.mark.parametrize("dtype, options", [(d, {"m": 4} if d == "pq4" else {})
                                            for d in ivf_storage.STORAGES])
def test_encode_gives_the_rows_add_stores(dtype, options):
    x = np.random.default_rng(1).standard_normal((200, 16)).astype(np.float32)
    index = ragcore.IVFIndex(16, 4, "l2", dtype, **options)
    index.train(x)
    labels, _ = _core.assign_nearest(x, index.centroids)
    rows = index.encode(x, labels)
    index.add(x)
    order = np.argsort(index.ids)  # the ids are 0..199 in the order of x
    np.testing.assert_array_equal(index._lists.rows[order], rows)  # noqa: SLF001
