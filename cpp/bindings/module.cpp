// pybind11 module ragcore._core: conversion, checks, GIL release, error
// translation. Argument meaning and user-facing validation live in the Python
// layer; the checks here only guarantee that no input can crash the process.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "array_checks.h"
#include "search_results.h"
#include "ragcore/dense/flat.h"
#include "ragcore/dense/types.h"
#include "ragcore/simd/simd.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

void register_ivf(py::module_& m);   // ivf_bindings.cpp
void register_bm25(py::module_& m);  // sparse_bindings.cpp
void register_query_encoder(py::module_& m);  // query_bindings.cpp
void register_hnsw(py::module_& m);  // hnsw_bindings.cpp
void register_codes(py::module_& m);  // codes_bindings.cpp
void register_rabitq(py::module_& m);  // rabitq_bindings.cpp
void register_fp_state(py::module_& m);  // fp_state_bindings.cpp
void register_bf16(py::module_& m);  // bf16_bindings.cpp

namespace {

// Python can build an enum value from any integer (Storage(9)); refuse those.
Storage float_storage(Storage storage) {
  if (static_cast<int>(storage) < 0 || static_cast<int>(storage) >= kNumStorage)
    fail("storage", "expected F32, F16 or BF16");
  return storage;
}

void register_enums(py::module_& m) {
  py::enum_<Metric>(m, "Metric", "Score of a stored row for a query (higher is better).")
      .value("InnerProduct", Metric::InnerProduct)
      .value("L2", Metric::L2, "minus the squared L2 distance");
  py::enum_<Storage>(m, "Storage", "Element type of stored rows.")
      .value("F32", Storage::F32)
      .value("F16", Storage::F16)
      .value("BF16", Storage::BF16, "bfloat16, as uint16 bits")
      .value("SQ8", Storage::SQ8, "per-dimension 8-bit scalar-quantised codes (IVF only)");
  py::enum_<DensePath>(m, "DensePath", "flat_search's algorithm (Auto: by batch size).")
      .value("Auto", DensePath::Auto)
      .value("Scan", DensePath::Scan)
      .value("Blocked", DensePath::Blocked);
  py::enum_<SimdLevel>(m, "SimdLevel", "A kernel table; None where accepted: the best here.")
      .value("Scalar", SimdLevel::Scalar)
      .value("Avx2", SimdLevel::Avx2)
      .value("Avx512", SimdLevel::Avx512);
}

// The one search entry of FlatIndex, for one query and for a batch: the first n rows of
// corpus (a grown buffer, not sliced in Python), queries one row (1-D) or one per row.
// Positional arguments: keyword parsing costs more than a small search.
py::object flat_search_py(const py::array& corpus, size_t n, const py::array& queries, size_t k,
                         Storage storage, Metric metric, const std::optional<py::array>& ids,
                         const std::optional<py::array>& sq_norms, int n_threads,
                         const std::optional<py::array>& allow, bool allow_by_row,
                         bool bf16_compute, DensePath path,
                         const std::optional<SimdLevel>& simd_level, size_t tile_rows,
                         size_t tile_depth, const std::optional<Bf16Level>& bf16_level) {
  const Storage st = float_storage(storage);
  // fp16 / bf16 rows travel as 2-byte elements (numpy float16 or uint16 bits).
  const bool corpus_ok = st == Storage::F32 ? py::isinstance<py::array_t<float>>(corpus)
                                            : corpus.itemsize() == 2;
  if (!corpus_ok) fail("corpus", "dtype does not match the storage");
  if (metric != Metric::InnerProduct && metric != Metric::L2) fail("metric", "unknown value");
  if (path < DensePath::Auto || path > DensePath::Blocked) fail("path", "unknown value");
  if (bf16_compute && st != Storage::BF16) fail("bf16_compute", "needs BF16 storage");

  FlatSearchArgs a;
  a.corpus = corpus.data();
  a.storage = st;
  a.corpus_stride = row_stride_elements(corpus, "corpus");
  if (n > static_cast<size_t>(corpus.shape(0))) fail("n", "exceeds the corpus rows");
  a.n = n;
  a.d = static_cast<size_t>(corpus.shape(1));
  a.ids = prefix_data<int64_t>(ids, n, "ids");
  a.sq_norms = prefix_data<float>(sq_norms, n, "sq_norms");
  a.metric = metric;
  const QueryRows q = query_rows(queries, a.d);
  a.queries = q.data;
  a.query_stride = q.stride;
  a.nq = q.nq;
  a.k = k;
  a.n_threads = n_threads;
  a.path = path;
  a.simd_level = simd_level_code(simd_level);
  a.tile_rows = tile_rows;
  a.tile_depth = tile_depth;
  a.allow = allow_filter(allow, allow_by_row);
  a.bf16_compute = bf16_compute;
  a.bf16_level = bf16_level ? static_cast<int>(*bf16_level) : -1;
  return make_hits(run_search(a, a.k, flat_search));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "ragcore native kernels (private; use the ragcore package)";
  register_enums(m);  // first: the functions below take them as arguments and defaults
  register_bf16(m);
  register_bm25(m);
  register_query_encoder(m);

  m.def("flat_search", &flat_search_py, py::arg("corpus"), py::arg("n"), py::arg("queries"),
        py::arg("k"), py::arg("storage"), py::arg("metric"), py::arg("ids") = py::none(),
        py::arg("sq_norms") = py::none(), py::arg("n_threads") = 0,
        py::arg("allow") = py::none(), py::arg("allow_by_row") = false,
        py::arg("bf16_compute") = false, py::arg("path") = DensePath::Auto,
        py::arg("simd_level") = py::none(), py::arg("tile_rows") = 0, py::arg("tile_depth") = 0,
        py::arg("bf16_level") = py::none(),
        "Exact top-k of queries (one row or a batch) against corpus[:n]; returns Hits.");

  register_ivf(m);
  register_hnsw(m);
  register_codes(m);
  register_rabitq(m);
  register_fp_state(m);

  m.def("simd_level_available",
        [](SimdLevel level) { return simd_level_available(checked_simd_level(level)); },
        py::arg("level"));
  m.def("best_simd_level", &best_simd_level);
  m.def("simd_level_name",
        [](SimdLevel level) { return std::string(dense_kernels(checked_simd_level(level)).name); },
        py::arg("level"));
  m.def("blocked_path_min_batch",
        [](SimdLevel level, Storage storage) {
          return blocked_path_min_batch(checked_simd_level(level), float_storage(storage));
        },
        py::arg("level"), py::arg("storage") = Storage::F32);
}
