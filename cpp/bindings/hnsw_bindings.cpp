// Bindings of the HNSW graph index: conversion, checks and GIL release only.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "array_checks.h"
#include "search_results.h"
#include "ragcore/dense/hnsw.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

// A C-contiguous 2-D array of `cols` elements of `itemsize` bytes per row.
const void* rows_of(const py::array& a, size_t cols, size_t itemsize, const std::string& name) {
  if (a.ndim() != 2 || static_cast<size_t>(a.shape(1)) != cols ||
      static_cast<size_t>(a.itemsize()) != itemsize || !(a.flags() & py::array::c_style))
    fail(name, "expected a C-contiguous 2-D array of " + std::to_string(cols) +
                   " columns of " + std::to_string(itemsize) + "-byte elements");
  return a.data();
}

// RAGCORE_NO_HUGE_PAGES, read with the GIL held (see large_pages.h), before each call
// that may allocate the graph's arrays.
void read_huge_page_setting() {
  huge_page_advice().store(std::getenv("RAGCORE_NO_HUGE_PAGES") == nullptr,
                           std::memory_order_relaxed);
}

HnswIndex* make_graph(size_t d, Metric metric, Storage storage, size_t M, size_t ef_construction,
                      uint64_t seed, const std::optional<SimdLevel>& simd_level, bool int8_walk) {
  HnswParams p;
  p.d = d;
  p.metric = metric;
  p.storage = storage;
  p.M = M;
  p.ef_construction = ef_construction;
  p.seed = seed;
  p.simd_level = simd_level_code(simd_level);
  p.int8_walk = int8_walk;
  read_huge_page_setting();
  return new HnswIndex(p);
}

void add_py(HnswIndex& g, const py::array& rows, const py::array& ids,
            const std::optional<py::array>& sq_norms, int n_threads) {
  const HnswParams& p = g.params();
  const void* data = rows_of(rows, p.d, storage_bytes(p.storage), "rows");
  const size_t n = static_cast<size_t>(rows.shape(0));
  const int64_t* id = vector_data<int64_t>(ids, n, "ids");
  const float* norms = vector_data<float>(sq_norms, n, "sq_norms");
  read_huge_page_setting();
  py::gil_scoped_release release;
  g.add(data, n, p.d, id, norms, n_threads);
}

size_t remove_py(HnswIndex& g, const py::array& ids, int n_threads) {
  const size_t n = static_cast<size_t>(ids.size());
  const int64_t* id = vector_data<int64_t>(ids, n, "ids");
  read_huge_page_setting();
  py::gil_scoped_release release;
  return g.remove(id, n, n_threads);
}

// Hits; filter_out (int64 [2]), when given, receives whether the allowed set was scored
// exactly and the allowed count.
py::object search_py(const HnswIndex& g, const py::array& queries, size_t k, size_t ef,
                     const std::optional<py::array>& allow,
                     const std::optional<py::array>& allow_ids, size_t exact_below,
                     int n_threads, std::optional<py::array> filter_out) {
  if (k == 0) fail("k", "must be >= 1");
  if (ef == 0) fail("ef", "must be >= 1");
  int64_t* filter = nullptr;
  if (filter_out) {
    if (!py::isinstance<py::array_t<int64_t>>(*filter_out) || filter_out->ndim() != 1 ||
        filter_out->shape(0) != 2 || !filter_out->writeable() ||
        !(filter_out->flags() & py::array::c_style))
      fail("filter_out", "expected a writeable contiguous int64 array of 2");
    filter = static_cast<int64_t*>(filter_out->mutable_data());
  }
  HnswSearchArgs a;
  const QueryRows q = query_rows(queries, g.params().d);
  a.queries = q.data;
  a.query_stride = q.stride;
  a.nq = q.nq;
  a.k = k;
  a.ef = ef;
  a.allow = allow_filter(allow, false);
  // A copy: the ids are followed without the GIL, when the caller's array could change.
  std::vector<int64_t> id_list;
  if (allow_ids) {
    const int64_t* p = vector_data<int64_t>(allow_ids, static_cast<size_t>(allow_ids->size()), "allow_ids");
    id_list.assign(p, p + allow_ids->size());
    a.allow_ids = id_list.data();
    a.n_allow_ids = id_list.size();
    static const int64_t none = -1;
    if (id_list.empty()) a.allow_ids = &none;
  }
  a.exact_below = exact_below;
  a.n_threads = n_threads;
  ResultArrays found{result_array<float>(a.nq, k), result_array<int64_t>(a.nq, k)};
  a.out_scores = found.scores.mutable_data();
  a.out_ids = found.ids.mutable_data();
  HnswSearchStats stats;
  {
    py::gil_scoped_release release;
    stats = g.search(a);
  }
  if (filter) {
    filter[0] = stats.exact ? 1 : 0;
    filter[1] = static_cast<int64_t>(stats.allowed);
  }
  return make_hits(std::move(found));
}

py::dict snapshot_py(const HnswIndex& g) {
  HnswIndex::Snapshot s;
  {
    py::gil_scoped_release release;
    s = g.snapshot();
  }
  const HnswParams& p = g.params();
  const size_t row_bytes = p.d * storage_bytes(p.storage);
  py::dict out;
  out["vectors"] = to_numpy(s.vectors).attr("reshape")(s.ids.size(), row_bytes);
  out["sq_norms"] = to_numpy(s.sq_norms);
  out["ids"] = to_numpy(s.ids);
  out["levels"] = to_numpy(s.levels);
  out["links0"] = to_numpy(s.links0).attr("reshape")(s.ids.size(), 1 + 2 * p.M);
  out["upper"] = to_numpy(s.upper);
  out["upper_offsets"] = to_numpy(s.upper_offsets);
  out["entry"] = s.entry;
  out["rng_state"] = s.rng_state;
  return out;
}

void restore_py(HnswIndex& g, const py::array& vectors, const std::optional<py::array>& sq_norms,
                const py::array& ids, const py::array& levels, const py::array& links0,
                const py::array& upper, const py::array& upper_offsets, int64_t entry,
                uint64_t rng_state, bool borrow_vectors) {
  const HnswParams& p = g.params();
  HnswArrays a;
  a.slots = static_cast<size_t>(ids.size());
  a.vectors = rows_of(vectors, p.d, storage_bytes(p.storage), "vectors");
  if (static_cast<size_t>(vectors.shape(0)) != a.slots) fail("vectors", "one row per slot");
  a.sq_norms = vector_data<float>(sq_norms, a.slots, "sq_norms");
  a.ids = vector_data<int64_t>(ids, a.slots, "ids");
  a.levels = vector_data<int32_t>(levels, a.slots, "levels");
  a.links0 = static_cast<const uint32_t*>(rows_of(links0, 1 + 2 * p.M, 4, "links0"));
  if (static_cast<size_t>(links0.shape(0)) != a.slots || !py::isinstance<py::array_t<uint32_t>>(links0))
    fail("links0", "expected uint32, one row per slot");
  a.upper_len = static_cast<size_t>(upper.size());
  a.upper = vector_data<uint32_t>(upper, a.upper_len, "upper");
  a.upper_offsets = vector_data<int64_t>(upper_offsets, a.slots + 1, "upper_offsets");
  a.entry = entry;
  a.rng_state = rng_state;
  read_huge_page_setting();
  py::gil_scoped_release release;
  g.restore(a, borrow_vectors);
}

}  // namespace

// Test hooks of the int8 kernels (int8_dot.h), checked against the numpy reference.
py::tuple quantize_int8_py(const py::array_t<float, py::array::c_style | py::array::forcecast>& x) {
  if (x.ndim() != 2) fail("x", "expected a 2-D float32 array");
  const size_t n = static_cast<size_t>(x.shape(0)), d = static_cast<size_t>(x.shape(1));
  py::array_t<int8_t> codes({n, d});
  py::array_t<float> scales(n);
  for (size_t i = 0; i < n; ++i)
    scales.mutable_data()[i] = quantize_int8(x.data() + i * d, d, codes.mutable_data() + i * d);
  return py::make_tuple(codes, scales);
}

const Int8Kernel& int8_kernel_at(const std::optional<SimdLevel>& simd_level) {
  return int8_kernel(simd_level ? checked_simd_level(*simd_level) : best_simd_level());
}

py::array_t<int32_t> int8_dots_py(const py::array_t<int8_t, py::array::c_style>& q,
                                  const py::array_t<int8_t, py::array::c_style>& rows,
                                  const std::optional<SimdLevel>& simd_level, int repeats) {
  if (repeats < 1) fail("repeats", "expected >= 1");
  if (q.ndim() != 1 || rows.ndim() != 2 || rows.shape(1) != q.shape(0))
    fail("rows", "expected a 2-D int8 array with len(q) columns");
  const size_t n = static_cast<size_t>(rows.shape(0)), d = static_cast<size_t>(q.shape(0));
  // The kernels' contract (int8_dot.h): the AVX2 one would saturate on -128.
  auto has_min = [](const int8_t* p, size_t len) { return std::find(p, p + len, -128) != p + len; };
  if (has_min(q.data(), d)) fail("q", "codes must lie in [-127, 127]");
  if (has_min(rows.data(), n * d)) fail("rows", "codes must lie in [-127, 127]");
  const Int8Kernel& kernel = int8_kernel_at(simd_level);
  std::vector<const int8_t*> ptrs(n);
  for (size_t j = 0; j < n; ++j) ptrs[j] = rows.data() + j * d;
  py::array_t<int32_t> out(n);
  int32_t* dst = out.mutable_data();
  const int8_t* qd = q.data();
  py::gil_scoped_release release;
  for (int r = 0; r < repeats; ++r) kernel.dot_gather(qd, ptrs.data(), n, d, dst);
  return out;
}

void register_hnsw(py::module_& m) {
  m.def("quantize_int8", &quantize_int8_py, py::arg("x"),
        "(codes int8 [n, d], scales float32 [n]): HNSWIndex's int8 codes of each row.");
  m.def("int8_dots", &int8_dots_py, py::arg("q"), py::arg("rows"), py::kw_only(),
        py::arg("simd_level") = py::none(), py::arg("repeats") = 1,
        "int32 dot products of int8 codes (in [-127, 127]) by the kernel of a SIMD level "
        "(None: the best available); repeats > 1 runs the kernel again (for benchmarks).");
  m.def("int8_kernel_name",
        [](const std::optional<SimdLevel>& level) { return std::string(int8_kernel_at(level).name); },
        py::arg("simd_level") = py::none(), "The name of the int8 kernel a SIMD level runs.");
  py::class_<HnswIndex>(m, "HnswIndex", "HNSW graph over stored rows (ragcore.HNSWIndex's core).")
      .def(py::init(&make_graph), py::arg("d"), py::kw_only(), py::arg("metric"),
           py::arg("storage"), py::arg("M"), py::arg("ef_construction"), py::arg("seed") = 0,
           py::arg("simd_level") = py::none(), py::arg("int8_walk") = false)
      .def("add", &add_py, py::arg("rows"), py::arg("ids"), py::kw_only(),
           py::arg("sq_norms") = py::none(), py::arg("n_threads") = 0)
      .def("remove", &remove_py, py::arg("ids"), py::kw_only(), py::arg("n_threads") = 0)
      .def("search", &search_py, py::arg("queries"), py::arg("k"), py::arg("ef"),
           py::arg("allow") = py::none(), py::arg("allow_ids") = py::none(),
           py::arg("exact_below") = 0, py::arg("n_threads") = 0,
           py::arg("filter_out") = py::none(),
           "Top-k of queries (one row or a batch) as ragcore.Hits; filter_out (int64 [2]), "
           "when given, receives whether the allowed set was scored exactly and its count.")
      .def("size", &HnswIndex::size)
      .def("slots", &HnswIndex::slots)
      .def("memory_bytes", &HnswIndex::memory_bytes)
      .def("slot_ids", [](const HnswIndex& g) { return to_numpy(g.slot_ids()); })
      .def("snapshot", &snapshot_py, "The state as arrays (copies), for save.")
      .def("restore", &restore_py, py::arg("vectors"), py::arg("sq_norms"), py::arg("ids"),
           py::arg("levels"), py::arg("links0"), py::arg("upper"), py::arg("upper_offsets"),
           py::arg("entry"), py::arg("rng_state"), py::arg("borrow_vectors"),
           // The graph reads borrowed vectors in place: they live as long as it does.
           py::keep_alive<1, 2>(),
           "Replaces the state with checked arrays from a file (ValueError on any inconsistency).");
}
