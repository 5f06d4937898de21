"""The GPU layer's host-side logic, which runs without a GPU: device parsing,
__cuda_array_interface__ reading, copies between indexes, and clear errors when
there is no device or no CUDA build."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import ragcore
from ragcore._util import device_arrays as da
from ragcore._util.cuda import parse_device
from ragcore.dense.gpu import DeviceHits

from _hits_check import assert_hits_equal


class FakeDeviceArray:
    """Stands in for a cupy array: only the interface is read, never the memory."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=4096, stream=None):
        self.__cuda_array_interface__ = dict(
            shape=shape, typestr=typestr, strides=strides, data=(ptr, False), version=3,
            stream=stream)


def test_contiguous_float32_is_read_in_place():
    m = da.as_device_matrix(FakeDeviceArray((5, 8)), "queries", 8)
    assert (m.ptr, m.rows, m.cols, m.row_stride, m.stream) == (4096, 5, 8, 8, None)


def test_one_vector_and_strided_rows():
    assert da.as_device_matrix(FakeDeviceArray((8,)), "queries", 8).rows == 1
    m = da.as_device_matrix(FakeDeviceArray((5, 8), strides=(80, 4), stream=7), "queries", 8)
    assert m.row_stride == 20 and m.stream == 7


def test_shape_and_dtype_errors_name_the_argument():
    with pytest.raises(ValueError, match="queries has 9 dimensions per vector, expected dim=8"):
        da.as_device_matrix(FakeDeviceArray((2, 9)), "queries", 8)
    with pytest.raises(ValueError, match="queries must be 1-D .* got 3-D"):
        da.as_device_matrix(FakeDeviceArray((2, 2, 8)), "queries", 8)
    with pytest.raises(TypeError, match="queries must hold floating-point"):
        da.as_device_matrix(FakeDeviceArray((2, 8), typestr="<i4"), "queries", 8)


def test_conversion_of_an_unknown_library_is_refused_with_a_warning_first():
    with pytest.warns(ragcore.CopyWarning), pytest.raises(TypeError, match="cannot convert"):
        da.as_device_matrix(FakeDeviceArray((2, 8), typestr="<f2"), "queries", 8)
    with pytest.warns(ragcore.CopyWarning), pytest.raises(TypeError, match="cannot convert"):
        da.as_device_matrix(FakeDeviceArray((2, 8), strides=(4, 8)), "queries", 8)


@pytest.mark.parametrize("bad", ["cpu", "cuda:x", "gpu", 1.5, None])
def test_bad_device_names(bad):
    with pytest.raises(ValueError, match="device must be"):
        parse_device(bad)


@pytest.mark.skipif(ragcore.cuda_device_count() > 0, reason="a CUDA device is present")
def test_without_a_device_the_gpu_index_explains_why():
    with pytest.raises(RuntimeError, match="device|CUDA"):
        ragcore.GpuFlatIndex(8)
    with pytest.raises(RuntimeError, match="device|CUDA"):
        ragcore.FlatIndex(8).to("cuda")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc: the CUDA module is not built")
def test_the_cuda_module_is_built_where_nvcc_exists():
    from ragcore import _cuda
    # The public answer comes from the built module, not from the no-CUDA fallback.
    assert ragcore.cuda_device_count() == _cuda.device_count()
    assert hasattr(_cuda, "DeviceCorpus")


def test_flat_index_copy_is_independent_and_to_cpu_is_itself():
    rng = np.random.default_rng(0)
    index = ragcore.FlatIndex(6, metric="l2", dtype="float16")
    index.add(rng.standard_normal((40, 6)).astype(np.float32), ids=np.arange(40) * 3)
    copy = index.copy()
    queries = rng.standard_normal((3, 6)).astype(np.float32)
    assert_hits_equal(copy.search(queries, 5), index.search(queries, 5))
    copy.remove([0, 3])
    copy.add(np.ones((1, 6), np.float32))
    assert len(index) == 40 and len(copy) == 39
    assert index.to("cpu") is index


def test_device_hits_to_hits_with_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hits = DeviceHits(torch.zeros((2, 3)), torch.arange(6).reshape(2, 3)).to_hits()
    assert hits.scores.dtype == np.float32 and hits.ids.dtype == np.int64
    np.testing.assert_array_equal(hits.ids, [[0, 1, 2], [3, 4, 5]])
