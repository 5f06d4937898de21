// Bindings of the compressed-code kernels (PQ with 4-bit fast-scan codes):
// conversion, checks and GIL release only.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "array_checks.h"
#include "ragcore/dense/pq4.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

template <class T>
const T* c_array(const py::array& a, size_t size, const std::string& name) {
  if (!py::isinstance<py::array_t<T>>(a) || !(a.flags() & py::array::c_style) ||
      static_cast<size_t>(a.size()) != size)
    fail(name, "expected a C-contiguous array of " + std::to_string(size) + " elements of the right dtype");
  return static_cast<const T*>(a.data());
}

py::array_t<uint8_t> pack_py(const py::array& codes, size_t m) {
  if (codes.ndim() != 2 || static_cast<size_t>(codes.shape(1)) != m) fail("codes", "expected n x m");
  const size_t n = static_cast<size_t>(codes.shape(0));
  const uint8_t* c = c_array<uint8_t>(codes, n * m, "codes");
  py::array_t<uint8_t> packed(pq4_packed_bytes(n, m));
  uint8_t* out = packed.mutable_data();
  py::gil_scoped_release release;
  pq4_pack(c, n, m, out);
  return packed;
}

py::array_t<uint16_t> scan_py(const py::array& packed, size_t n, size_t m, const py::array& luts,
                              SimdLevel level) {
  const uint8_t* p = c_array<uint8_t>(packed, pq4_packed_bytes(n, m), "packed");
  const uint8_t* l = c_array<uint8_t>(luts, pq4_pairs(m) * 32, "luts");
  py::array_t<uint16_t> losses(pq4_blocks(n) * kPq4Block);
  uint16_t* out = losses.mutable_data();
  const SimdLevel lv = checked_simd_level(level);
  {
    py::gil_scoped_release release;
    pq4_scan(p, n, m, l, out, lv);
  }
  return losses[py::slice(0, n, 1)].cast<py::array_t<uint16_t>>();
}

py::tuple quantize_py(const py::array& tables) {
  if (tables.ndim() != 2 || tables.shape(1) != 16) fail("tables", "expected m x 16");
  const size_t m = static_cast<size_t>(tables.shape(0));
  if (m == 0 || m > 256) fail("tables", "m must be between 1 and 256");
  const float* t = c_array<float>(tables, m * 16, "tables");
  py::array_t<uint8_t> luts({pq4_pairs(m) * 2, size_t{16}});
  const float scale = pq4_quantize_tables(t, m, luts.mutable_data());
  return py::make_tuple(luts, scale);
}

py::tuple search_py(const py::array& packed, size_t m, const py::array& centroids,
                    const py::array& exact, const std::optional<py::array>& sq_norms,
                    const py::array& ids, Metric metric, const py::array& queries, size_t k,
                    size_t rescore, int n_threads, const std::optional<SimdLevel>& simd_level) {
  if (metric != Metric::InnerProduct && metric != Metric::L2) fail("metric", "unknown value");
  if (exact.ndim() != 2 || queries.ndim() != 2) fail("exact", "expected 2-D arrays");
  Pq4SearchArgs a;
  a.n = static_cast<size_t>(exact.shape(0));
  a.d = static_cast<size_t>(exact.shape(1));
  a.m = m;
  if (m == 0 || a.d % m) fail("m", "must divide the dimension");
  a.packed = c_array<uint8_t>(packed, pq4_packed_bytes(a.n, m), "packed");
  a.centroids = c_array<float>(centroids, a.d * 16, "centroids");
  a.exact = c_array<float>(exact, a.n * a.d, "exact");
  a.sq_norms = vector_data<float>(sq_norms, a.n, "sq_norms");
  a.ids = vector_data<int64_t>(ids, a.n, "ids");
  a.metric = metric;
  if (static_cast<size_t>(queries.shape(1)) != a.d) fail("queries", "wrong dimension");
  a.nq = static_cast<size_t>(queries.shape(0));
  a.queries = c_array<float>(queries, a.nq * a.d, "queries");
  a.k = k;
  a.rescore = rescore;
  a.n_threads = n_threads;
  a.simd_level = simd_level_code(simd_level);
  if (k == 0) fail("k", "must be >= 1");
  py::array_t<float> scores({a.nq, k});
  py::array_t<int64_t> out_ids({a.nq, k});
  a.out_scores = scores.mutable_data();
  a.out_ids = out_ids.mutable_data();
  {
    py::gil_scoped_release release;
    pq4_search(a);
  }
  return py::make_tuple(scores, out_ids);
}

}  // namespace

void register_codes(py::module_& m) {
  m.def("pq4_pack", &pack_py, py::arg("codes"), py::arg("m"),
        "4-bit codes (n x m, each < 16) in the fast-scan block layout.");
  m.def("pq4_scan", &scan_py, py::arg("packed"), py::arg("n"), py::arg("m"), py::arg("luts"),
        py::arg("simd_level"), "16-bit losses of n packed vectors for byte tables luts.");
  m.def("pq4_quantize_tables", &quantize_py, py::arg("tables"),
        "Byte tables (losses scaled to 0..255) of float tables m x 16; returns (luts, scale).");
  m.def("pq4_search", &search_py, py::arg("packed"), py::arg("m"), py::arg("centroids"),
        py::arg("exact"), py::arg("sq_norms"), py::arg("ids"), py::arg("metric"),
        py::arg("queries"), py::arg("k"), py::kw_only(), py::arg("rescore") = 4,
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(),
        "Fast-scan candidates re-scored exactly; returns (scores, ids).");
}
