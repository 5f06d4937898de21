// Bindings of the compressed-code kernels (PQ with 4-bit fast-scan codes):
// conversion, checks and GIL release only.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "array_checks.h"
#include "search_results.h"
#include "ragcore/dense/ivf_pq4.h"
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

py::array_t<uint8_t> encode_py(const py::array& x, const py::array& by_dim, size_t m,
                               int n_threads) {
  if (x.ndim() != 2) fail("x", "expected n x d");
  const size_t n = static_cast<size_t>(x.shape(0)), d = static_cast<size_t>(x.shape(1));
  if (m == 0 || m > 256 || d == 0 || d % m) fail("m", "must divide the dimension and be 1..256");
  const float* rows = c_array<float>(x, n * d, "x");
  const float* books = c_array<float>(by_dim, d * 16, "by_dim");
  py::array_t<uint8_t> codes({n, m});
  uint8_t* out = codes.mutable_data();
  {
    py::gil_scoped_release release;
    pq4_encode(rows, n, d, books, m, out, n_threads);
  }
  return codes;
}

py::array_t<float> train_py(const py::array& x, size_t m, uint64_t seed, int n_threads) {
  if (x.ndim() != 2) fail("x", "expected n x d");
  const size_t n = static_cast<size_t>(x.shape(0)), d = static_cast<size_t>(x.shape(1));
  if (m == 0 || m > 256 || d == 0 || d % m) fail("m", "must divide the dimension and be 1..256");
  if (n < 16) fail("x", "needs at least 16 rows (one per code)");
  const float* rows = c_array<float>(x, n * d, "x");
  py::array_t<float> books({m, size_t{16}, d / m});
  float* out = books.mutable_data();
  {
    py::gil_scoped_release release;
    pq4_train(rows, n, d, m, seed, n_threads, out);
  }
  return books;
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

// The index arrays of a PQIndex as search arguments (checked for shape and dtype here).
Pq4SearchArgs pq_index_args(const py::array& packed, size_t m, const py::array& centroids,
                            const py::array& exact, const std::optional<py::array>& sq_norms,
                            const py::array& ids, Metric metric) {
  if (metric != Metric::InnerProduct && metric != Metric::L2) fail("metric", "unknown value");
  if (exact.ndim() != 2) fail("exact", "expected a 2-D array");
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
  return a;
}

py::object search_py(const py::array& packed, size_t m, const py::array& centroids,
                    const py::array& exact, const std::optional<py::array>& sq_norms,
                    const py::array& ids, Metric metric, const py::array& queries, size_t k,
                    size_t rescore, int n_threads, const std::optional<SimdLevel>& simd_level,
                    const std::optional<py::array>& allow, bool allow_by_row) {
  Pq4SearchArgs a = pq_index_args(packed, m, centroids, exact, sq_norms, ids, metric);
  a.queries = contiguous_query_rows(queries, a.d, a.nq);
  a.k = k;
  a.rescore = rescore;
  a.n_threads = n_threads;
  a.simd_level = simd_level_code(simd_level);
  a.allow = allow_filter(allow, allow_by_row);
  return make_hits(run_search(a, k, pq4_search));
}

// (losses, rows) of the candidates, best first.
py::tuple candidates_tuple(Pq4Candidates& candidates) {
  const std::vector<uint64_t>& keys = candidates.sorted();
  py::array_t<int64_t> losses(keys.size()), rows(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    losses.mutable_data()[i] = static_cast<int64_t>(keys[i] >> 32);
    rows.mutable_data()[i] = static_cast<int64_t>(keys[i] & 0xFFFFFFFFu);
  }
  return py::make_tuple(losses, rows);
}

// The candidates of one scan (what the re-scoring sees): (losses, rows), best first.
py::tuple select_py(const py::array& packed, size_t n, size_t m, const py::array& luts,
                    size_t want, SimdLevel level, const std::optional<py::array>& allow,
                    const std::optional<py::array>& ids, bool allow_by_row) {
  if (m == 0 || m > 256) fail("m", "must be between 1 and 256");
  const uint8_t* p = c_array<uint8_t>(packed, pq4_packed_bytes(n, m), "packed");
  const uint8_t* l = c_array<uint8_t>(luts, pq4_pairs(m) * 32, "luts");
  const AllowFilter f = allow_filter(allow, allow_by_row);
  const int64_t* id = vector_data<int64_t>(ids, n, "ids");
  if (f.active() && !id) fail("ids", "needed with allow");
  const SimdLevel lv = checked_simd_level(level);
  Pq4Candidates candidates(std::min(want, n));  // no more candidates than rows
  {
    py::gil_scoped_release release;
    pq4_scan_select(p, n, m, l, 0, f, id, candidates, lv);
  }
  return candidates_tuple(candidates);
}

// The candidates of one scan shared by several queries (pq4_scan_select_many): luts
// nq x (pairs * 2) x 16; a list of (losses, rows) per query, best first.
py::list select_many_py(const py::array& packed, size_t n, size_t m, const py::array& luts,
                        size_t want, SimdLevel level, const std::optional<py::array>& allow,
                        const std::optional<py::array>& ids, bool allow_by_row) {
  if (m == 0 || m > 256) fail("m", "must be between 1 and 256");
  if (luts.ndim() != 3) fail("luts", "expected a 3-D array (queries, tables, 16)");
  const size_t nq = static_cast<size_t>(luts.shape(0)), lut_bytes = pq4_pairs(m) * 32;
  const uint8_t* p = c_array<uint8_t>(packed, pq4_packed_bytes(n, m), "packed");
  const uint8_t* l = c_array<uint8_t>(luts, nq * lut_bytes, "luts");
  const AllowFilter f = allow_filter(allow, allow_by_row);
  const int64_t* id = vector_data<int64_t>(ids, n, "ids");
  if (f.active() && !id) fail("ids", "needed with allow");
  const SimdLevel lv = checked_simd_level(level);
  std::vector<Pq4Candidates> candidates(nq, Pq4Candidates(std::min(want, n)));
  std::vector<const uint8_t*> lut_of(nq);
  std::vector<Pq4Candidates*> out_of(nq);
  for (size_t i = 0; i < nq; ++i) {
    lut_of[i] = l + i * lut_bytes;
    out_of[i] = &candidates[i];
  }
  {
    py::gil_scoped_release release;
    pq4_scan_select_many(p, n, m, lut_of.data(), nq, 0, f, id, out_of.data(), lv);
  }
  py::list out;
  for (Pq4Candidates& c : candidates) out.append(candidates_tuple(c));
  return out;
}

// The index arrays of an IVFIndex dtype="pq4" as search arguments (checked for shape
// and dtype here, for consistency by the kernel).
IvfPq4SearchArgs ivf_index_args(const py::array& centroids, const py::array& centroid_sq_norms,
                                const py::array& list_offsets, const py::array& block_offsets,
                                const py::array& packed, size_t m, const py::array& codebooks,
                                const py::array& exact, const std::optional<py::array>& sq_norms,
                                const py::array& ids, Metric metric) {
  if (metric != Metric::InnerProduct && metric != Metric::L2) fail("metric", "unknown value");
  if (centroids.ndim() != 2 || exact.ndim() != 2) fail("centroids, exact", "expected 2-D arrays");
  IvfPq4SearchArgs a;
  a.nlist = static_cast<size_t>(centroids.shape(0));
  a.d = static_cast<size_t>(centroids.shape(1));
  a.m = m;
  if (m == 0 || m > 256 || a.d % m) fail("m", "must be 1..256 and divide the dimension");
  if (static_cast<size_t>(exact.shape(1)) != a.d) fail("exact", "wrong dimension");
  a.n = static_cast<size_t>(exact.shape(0));
  a.centroids = c_array<float>(centroids, a.nlist * a.d, "centroids");
  a.centroid_sq_norms = vector_data<float>(centroid_sq_norms, a.nlist, "centroid_sq_norms");
  a.list_offsets = vector_data<int64_t>(list_offsets, a.nlist + 1, "list_offsets");
  a.block_offsets = vector_data<int64_t>(block_offsets, a.nlist + 1, "block_offsets");
  const size_t pair_bytes = pq4_pairs(m) * kPq4Block;
  if (packed.ndim() != 1 || packed.size() % pair_bytes) fail("packed", "expected whole blocks");
  a.n_blocks = static_cast<size_t>(packed.size()) / pair_bytes;
  a.packed = c_array<uint8_t>(packed, a.n_blocks * pair_bytes, "packed");
  a.codebooks = c_array<float>(codebooks, a.d * 16, "codebooks");
  a.exact = c_array<float>(exact, a.n * a.d, "exact");
  a.sq_norms = vector_data<float>(sq_norms, a.n, "sq_norms");
  a.ids = vector_data<int64_t>(ids, a.n, "ids");
  a.metric = metric;
  return a;
}

py::tuple ivf_search_py(const py::array& centroids, const py::array& centroid_sq_norms,
                        const py::array& list_offsets, const py::array& block_offsets,
                        const py::array& packed, size_t m, const py::array& codebooks,
                        const py::array& exact, const std::optional<py::array>& sq_norms,
                        const py::array& ids, Metric metric, const py::array& queries, size_t k,
                        size_t nprobe, size_t rescore, const std::optional<py::array>& allow,
                        bool allow_by_row, int n_threads, const std::optional<SimdLevel>& simd_level) {
  IvfPq4SearchArgs a = ivf_index_args(centroids, centroid_sq_norms, list_offsets, block_offsets,
                                      packed, m, codebooks, exact, sq_norms, ids, metric);
  a.allow = allow_filter(allow, allow_by_row);
  a.queries = contiguous_query_rows(queries, a.d, a.nq);
  a.k = k;
  a.nprobe = nprobe;
  a.rescore = rescore;
  a.n_threads = n_threads;
  a.simd_level = simd_level_code(simd_level);
  const ResultArrays found = run_search(a, k, ivf_pq4_search);
  return py::make_tuple(found.scores, found.ids);
}

}  // namespace

void register_codes(py::module_& m) {
  m.def("pq4_pack", &pack_py, py::arg("codes"), py::arg("m"),
        "4-bit codes (n x m, each < 16) in the fast-scan block layout.");
  m.def("pq4_encode", &encode_py, py::arg("x"), py::arg("by_dim"), py::arg("m"),
        py::arg("n_threads") = 0,
        "uint8 codes (n x m): per part of each row, the nearest of 16 centroids (squared L2, "
        "ties to the lower code); by_dim: the codebooks by dimension, m x (d / m) x 16.");
  m.def("pq4_train", &train_py, py::arg("x"), py::arg("m"), py::kw_only(), py::arg("seed") = 0,
        py::arg("n_threads") = 0,
        "float32 codebooks (m x 16 x d / m): kmeans(part j of x, 16, seed=seed + j) per part, "
        "the parts in parallel.");
  m.def("pq4_scan", &scan_py, py::arg("packed"), py::arg("n"), py::arg("m"), py::arg("luts"),
        py::arg("simd_level"), "16-bit losses of n packed vectors for byte tables luts.");
  m.def("pq4_quantize_tables", &quantize_py, py::arg("tables"),
        "Byte tables (losses scaled to 0..255) of float tables m x 16; returns (luts, scale).");
  m.def("pq4_search", &search_py, py::arg("packed"), py::arg("m"), py::arg("centroids"),
        py::arg("exact"), py::arg("sq_norms"), py::arg("ids"), py::arg("metric"),
        py::arg("queries"), py::arg("k"), py::arg("rescore") = 4,
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(),
        py::arg("allow") = py::none(), py::arg("allow_by_row") = false,
        "Fast-scan candidates re-scored exactly, for queries (one row or a batch); returns "
        "(scores, ids). Positional arguments: the per-call path.");
  m.def("pq4_select", &select_py, py::arg("packed"), py::arg("n"), py::arg("m"), py::arg("luts"),
        py::arg("want"), py::arg("simd_level"), py::kw_only(), py::arg("allow") = py::none(),
        py::arg("ids") = py::none(), py::arg("allow_by_row") = false,
        "The want smallest (loss, row) of a fast scan with the running threshold; "
        "returns (losses, rows) best first.");
  m.def("pq4_select_many", &select_many_py, py::arg("packed"), py::arg("n"), py::arg("m"),
        py::arg("luts"), py::arg("want"), py::arg("simd_level"), py::kw_only(),
        py::arg("allow") = py::none(), py::arg("ids") = py::none(), py::arg("allow_by_row") = false,
        "pq4_select for several queries sharing one scan (luts: queries x tables x 16); "
        "a list of (losses, rows) per query, best first.");
  m.def("ivf_pq4_search", &ivf_search_py, py::arg("centroids"), py::arg("centroid_sq_norms"),
        py::arg("list_offsets"), py::arg("block_offsets"), py::arg("packed"), py::arg("m"),
        py::arg("codebooks"), py::arg("exact"), py::arg("sq_norms"), py::arg("ids"),
        py::arg("metric"), py::arg("queries"), py::arg("k"), py::arg("nprobe"),
        py::arg("rescore") = 4, py::arg("allow") = py::none(), py::arg("allow_by_row") = false,
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(),
        "IVF over 4-bit PQ lists: candidates re-scored exactly, for queries (one row or a "
        "batch); returns (scores, ids). Positional arguments: the per-call path.");
}
