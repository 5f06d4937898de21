// pybind11 module ragcore._cuda: conversion, checks, GIL release, error
// translation. Device arrays arrive as raw pointers read by the Python layer
// from __cuda_array_interface__; their dtype and layout are checked there.
// Metric and Storage are ragcore._core's enum types (imported at module init).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "gpu_bm25.h"
#include "gpu_flat.h"

namespace py = pybind11;
using ragcore::Metric;
using ragcore::Storage;
using ragcore::gpu::Bm25SearchArgs;
using ragcore::gpu::DeviceBm25;
using ragcore::gpu::DeviceCorpus;
using ragcore::gpu::GpuPath;
using ragcore::gpu::GpuSearchArgs;

namespace {

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw std::invalid_argument(name + ": " + what);
}

template <class T>
const T* contiguous(const py::array& a, size_t n, const char* name) {
  if (!(a.flags() & py::array::c_style)) fail(name, "must be C-contiguous");
  if (static_cast<size_t>(a.size()) != n) fail(name, "expected " + std::to_string(n) + " elements");
  if (static_cast<size_t>(a.itemsize()) != sizeof(T)) fail(name, "wrong element size");
  return static_cast<const T*>(a.data());
}

void append(DeviceCorpus& c, const py::array& rows, const std::optional<py::array>& sq_norms,
            const py::array& rank_of_row, const py::array& sorted_ids) {
  if (rows.ndim() != 2) fail("rows", "expected a 2-D array");
  const size_t n = static_cast<size_t>(rows.shape(0));
  const size_t total = static_cast<size_t>(sorted_ids.size());
  if (!(rows.flags() & py::array::c_style)) fail("rows", "must be C-contiguous");
  if (!py::isinstance<py::array_t<int32_t>>(rank_of_row)) fail("rank_of_row", "expected int32");
  if (!py::isinstance<py::array_t<int64_t>>(sorted_ids)) fail("sorted_ids", "expected int64");
  const float* norms = sq_norms ? contiguous<float>(*sq_norms, n, "sq_norms") : nullptr;
  const int32_t* ranks = contiguous<int32_t>(rank_of_row, total, "rank_of_row");
  const int64_t* ids = contiguous<int64_t>(sorted_ids, total, "sorted_ids");
  py::gil_scoped_release release;
  c.append(rows.data(), norms, n, ranks, ids, total);
}

void set_knobs(GpuSearchArgs& a, GpuPath path, size_t first_chunk_rows, size_t max_chunk_rows,
               size_t max_group) {
  if (path < GpuPath::Auto || path > GpuPath::TensorCores) fail("path", "unknown value");
  a.path = path;
  a.first_chunk_rows = first_chunk_rows;
  a.max_chunk_rows = max_chunk_rows;
  a.max_group = max_group;
}

py::tuple search_host(const DeviceCorpus& c, const py::array_t<float>& queries, size_t k,
                      bool normalize, GpuPath path, size_t first_chunk_rows,
                      size_t max_chunk_rows, size_t max_group) {
  if (queries.ndim() != 2) fail("queries", "expected a 2-D float32 array");
  if (!(queries.flags() & py::array::c_style)) fail("queries", "must be C-contiguous");
  GpuSearchArgs a;
  a.queries = queries.data();
  a.nq = static_cast<size_t>(queries.shape(0));
  a.query_stride = static_cast<size_t>(queries.shape(1));
  a.k = k;
  a.normalize_queries = normalize;
  set_knobs(a, path, first_chunk_rows, max_chunk_rows, max_group);
  py::array_t<float> scores({a.nq, k});
  py::array_t<int64_t> ids({a.nq, k});
  a.out_scores = scores.mutable_data();
  a.out_ids = ids.mutable_data();
  {
    py::gil_scoped_release release;
    c.search(a);
  }
  return py::make_tuple(scores, ids);
}

void search_device(const DeviceCorpus& c, uintptr_t queries, size_t nq, size_t stride, size_t k,
                   bool normalize, uintptr_t out_scores, uintptr_t out_ids, GpuPath path,
                   size_t first_chunk_rows, size_t max_chunk_rows, size_t max_group) {
  GpuSearchArgs a;
  a.queries = reinterpret_cast<const float*>(queries);
  a.queries_on_device = true;
  a.nq = nq;
  a.query_stride = stride;
  a.k = k;
  a.normalize_queries = normalize;
  a.out_scores = reinterpret_cast<float*>(out_scores);
  a.out_ids = reinterpret_cast<int64_t*>(out_ids);
  a.out_on_device = true;
  set_knobs(a, path, first_chunk_rows, max_chunk_rows, max_group);
  py::gil_scoped_release release;
  c.search(a);
}

std::unique_ptr<DeviceBm25> make_bm25(int device, const py::array& offsets, const py::array& docs,
                                      const py::array& values, const py::array& rank_of_slot,
                                      const py::array& sorted_ids, size_t dense_min_df) {
  if (offsets.ndim() != 1 || offsets.size() < 1) fail("offsets", "expected a 1-D array, n_terms + 1");
  const size_t n_terms = static_cast<size_t>(offsets.size()) - 1;
  const int64_t* o = contiguous<int64_t>(offsets, n_terms + 1, "offsets");
  const size_t n_postings = static_cast<size_t>(docs.size());
  if (n_terms && static_cast<size_t>(o[n_terms]) != n_postings) fail("docs", "offsets[-1] postings expected");
  const uint32_t* d = contiguous<uint32_t>(docs, n_postings, "docs");
  const float* v = contiguous<float>(values, n_postings, "values");
  const size_t n_slots = static_cast<size_t>(rank_of_slot.size());
  const int32_t* r = contiguous<int32_t>(rank_of_slot, n_slots, "rank_of_slot");
  const size_t n_live = static_cast<size_t>(sorted_ids.size());
  const int64_t* ids = contiguous<int64_t>(sorted_ids, n_live, "sorted_ids");
  py::gil_scoped_release release;
  return std::make_unique<DeviceBm25>(device, o, n_terms, d, v, r, n_slots, ids, n_live,
                                      dense_min_df);
}

py::tuple bm25_search(const DeviceBm25& index, const py::array& terms, const py::array& weights,
                      const py::array& offsets, const py::array& base, size_t k, bool exhaustive,
                      size_t first_chunk_rows, size_t max_chunk_rows, size_t max_group) {
  if (offsets.ndim() != 1 || offsets.size() < 1) fail("offsets", "expected a 1-D array, nq + 1");
  Bm25SearchArgs a;
  a.nq = static_cast<size_t>(offsets.size()) - 1;
  a.offsets = contiguous<int64_t>(offsets, a.nq + 1, "offsets");
  const size_t n = static_cast<size_t>(terms.size());
  if (a.offsets[a.nq] < 0 || static_cast<size_t>(a.offsets[a.nq]) != n)
    fail("offsets", "offsets[-1] must equal the number of terms");
  a.terms = contiguous<int64_t>(terms, n, "terms");
  a.weights = contiguous<double>(weights, n, "weights");
  a.base = contiguous<double>(base, a.nq, "base");
  a.k = k;
  a.first_chunk_rows = first_chunk_rows;
  a.max_chunk_rows = max_chunk_rows;
  a.max_group = max_group;
  a.exhaustive = exhaustive;
  py::array_t<float> scores({a.nq, k});
  py::array_t<int64_t> ids({a.nq, k});
  py::array_t<bool> scored_exhaustively(static_cast<py::ssize_t>(a.nq));
  a.out_scores = scores.mutable_data();
  a.out_ids = ids.mutable_data();
  a.out_exhaustive = reinterpret_cast<uint8_t*>(scored_exhaustively.mutable_data());
  {
    py::gil_scoped_release release;
    index.search(a);
  }
  return py::make_tuple(scores, ids, scored_exhaustively);
}

}  // namespace

PYBIND11_MODULE(_cuda, m) {
  m.doc() = "ragcore CUDA kernels (private; use ragcore.GpuFlatIndex)";
  // One definition of each enum: _core registers Metric and Storage, this module takes them.
  const py::module_ core = py::module_::import("ragcore._core");
  m.attr("Metric") = core.attr("Metric");
  m.attr("Storage") = core.attr("Storage");
  py::enum_<GpuPath>(m, "GpuPath", "Which kernel scores a search (Auto: by batch and storage).")
      .value("Auto", GpuPath::Auto)
      .value("Scan", GpuPath::Scan)
      .value("Tiled", GpuPath::Tiled)
      .value("TensorCores", GpuPath::TensorCores, "fp16 / bf16 storage only");

  m.def("device_count", &ragcore::gpu::device_count);
  m.def("device_name", &ragcore::gpu::device_name, py::arg("device"));
  m.def("device_memory", [](int device) {
    size_t free_bytes = 0, total_bytes = 0;
    ragcore::gpu::device_memory(device, &free_bytes, &total_bytes);
    return py::make_tuple(free_bytes, total_bytes);
  }, py::arg("device"));

  m.def("synchronize_stream", [](uintptr_t stream) {
    py::gil_scoped_release release;
    ragcore::gpu::synchronize_stream(stream);
  }, py::arg("stream"));

  py::class_<DeviceCorpus>(m, "DeviceCorpus")
      .def(py::init<int, size_t, Storage, Metric>(), py::arg("device"), py::arg("dim"),
           py::kw_only(), py::arg("storage"), py::arg("metric"))
      .def("append", &append, py::arg("rows"), py::arg("sq_norms"), py::arg("rank_of_row"),
           py::arg("sorted_ids"))
      .def("clear", &DeviceCorpus::clear)
      .def("__len__", &DeviceCorpus::size)
      .def_property_readonly("device_bytes", &DeviceCorpus::device_bytes)
      .def("search_host", &search_host, py::arg("queries"), py::arg("k"), py::kw_only(),
           py::arg("normalize"), py::arg("path") = GpuPath::Auto, py::arg("first_chunk_rows") = 0,
           py::arg("max_chunk_rows") = 0, py::arg("max_group") = 0)
      .def("search_device", &search_device, py::arg("queries"), py::arg("nq"), py::arg("stride"),
           py::arg("k"), py::kw_only(), py::arg("normalize"), py::arg("out_scores"),
           py::arg("out_ids"), py::arg("path") = GpuPath::Auto, py::arg("first_chunk_rows") = 0,
           py::arg("max_chunk_rows") = 0, py::arg("max_group") = 0);

  py::class_<DeviceBm25>(m, "DeviceBm25")
      .def(py::init(&make_bm25), py::arg("device"), py::kw_only(), py::arg("offsets"),
           py::arg("docs"), py::arg("values"), py::arg("rank_of_slot"), py::arg("sorted_ids"),
           py::arg("dense_min_df") = 0)
      .def_property_readonly("device_bytes", &DeviceBm25::device_bytes)
      .def_property_readonly("num_terms", &DeviceBm25::num_terms)
      .def_property_readonly("dense_min_df", &DeviceBm25::dense_min_df)
      .def("search", &bm25_search, py::arg("terms"), py::arg("weights"), py::arg("offsets"),
           py::arg("base"), py::arg("k"), py::kw_only(), py::arg("exhaustive") = false,
           py::arg("first_chunk_rows") = 0, py::arg("max_chunk_rows") = 0,
           py::arg("max_group") = 0);
}
