// pybind11 module ragcore._core: array checks, GIL release, error translation.
// Argument meaning and user-facing validation live in the Python layer; the
// checks here only guarantee that no input can crash the process.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "array_checks.h"
#include "ragcore/dense/flat.h"
#include "ragcore/simd/simd.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

void register_ivf(py::module_& m);  // ivf_bindings.cpp

void register_bm25(py::module_& m);  // bm25_bindings.cpp

namespace {

py::tuple flat_search_py(const py::array& corpus, int storage, const std::optional<py::array>& ids,
                         const std::optional<py::array>& sq_norms, int metric,
                         const py::array& queries, size_t k, int n_threads, int path,
                         int simd_level, size_t tile_rows, size_t tile_depth,
                         const std::optional<py::array>& allow, bool allow_by_row) {
  if (storage < 0 || storage >= kNumStorage) fail("storage", "unknown storage code");
  const Storage st = static_cast<Storage>(storage);
  // fp16 / bf16 rows travel as 2-byte elements (numpy float16 or uint16 bits).
  const bool corpus_ok = st == Storage::F32 ? py::isinstance<py::array_t<float>>(corpus)
                                            : corpus.itemsize() == 2;
  if (!corpus_ok) fail("corpus", "dtype does not match the storage code");
  if (!py::isinstance<py::array_t<float>>(queries)) fail("queries", "expected float32");
  if (metric != 0 && metric != 1) fail("metric", "unknown metric code");
  if (path < 0 || path > 2) fail("path", "unknown path code");
  if (k == 0) fail("k", "must be >= 1");

  FlatSearchArgs a;
  a.corpus = corpus.data();
  a.storage = st;
  a.corpus_stride = row_stride_elements(corpus, "corpus");
  a.n = static_cast<size_t>(corpus.shape(0));
  a.d = static_cast<size_t>(corpus.shape(1));
  a.ids = vector_data<int64_t>(ids, a.n, "ids");
  a.sq_norms = vector_data<float>(sq_norms, a.n, "sq_norms");
  a.metric = static_cast<Metric>(metric);
  a.query_stride = row_stride_elements(queries, "queries");
  if (static_cast<size_t>(queries.shape(1)) != a.d)
    fail("queries", "expected " + std::to_string(a.d) + " columns");
  a.queries = static_cast<const float*>(queries.data());
  a.nq = static_cast<size_t>(queries.shape(0));
  a.k = k;
  a.n_threads = n_threads;
  a.path = static_cast<DensePath>(path);
  a.simd_level = simd_level;
  a.tile_rows = tile_rows;
  a.tile_depth = tile_depth;
  a.allow = allow_filter(allow, allow_by_row);

  py::array_t<float> scores({a.nq, k});
  py::array_t<int64_t> out_ids({a.nq, k});
  a.out_scores = scores.mutable_data();
  a.out_ids = out_ids.mutable_data();
  {
    py::gil_scoped_release release;
    flat_search(a);
  }
  return py::make_tuple(scores, out_ids);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "ragcore native kernels (private; use the ragcore package)";
  register_bm25(m);

  m.def("flat_search", &flat_search_py, py::arg("corpus"), py::arg("storage"), py::arg("ids"),
        py::arg("sq_norms"), py::arg("metric"), py::arg("queries"), py::arg("k"),
        py::arg("n_threads") = 0, py::arg("path") = 0, py::arg("simd_level") = -1,
        py::arg("tile_rows") = 0, py::arg("tile_depth") = 0, py::arg("allow") = py::none(),
        py::arg("allow_by_row") = false,
        "Exact top-k of queries against a flat corpus; returns (scores, ids).");

  register_ivf(m);

  m.def("simd_level_available",
        [](int level) { return simd_level_available(static_cast<SimdLevel>(level)); },
        py::arg("level"));
  m.def("best_simd_level", [] { return static_cast<int>(best_simd_level()); });
  m.def("simd_level_name",
        [](int level) { return std::string(dense_kernels(static_cast<SimdLevel>(level)).name); },
        py::arg("level"));
  m.def("blocked_path_min_batch",
        [](int level, int storage) {
          if (storage < 0 || storage >= kNumStorage) fail("storage", "unknown storage code");
          return blocked_path_min_batch(static_cast<SimdLevel>(level),
                                        static_cast<Storage>(storage));
        },
        py::arg("level"), py::arg("storage") = 0);
}
