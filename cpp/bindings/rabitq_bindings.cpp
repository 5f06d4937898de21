// Bindings of the RaBitQ IVF storage: encoding, search and (for tests) the
// estimates of one list. Conversion, checks and GIL release only.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "array_checks.h"
#include "search_results.h"
#include "ragcore/dense/rabitq.h"
#include "ragcore/dense/rabitq_rotation.h"
#include "ragcore/util/result_bound.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

// A C-contiguous 2-D array of T with `cols` columns (0: any); its rows.
template <class T>
const T* matrix(const py::array& a, const std::string& name, size_t cols = 0) {
  if (!py::isinstance<py::array_t<T>>(a) || a.ndim() != 2)
    fail(name, "expected a 2-D array of the right dtype");
  if (!(a.flags() & py::array::c_style)) fail(name, "must be C-contiguous");
  if (cols && static_cast<size_t>(a.shape(1)) != cols)
    fail(name, "expected " + std::to_string(cols) + " columns");
  return static_cast<const T*>(a.data());
}

size_t rows_of(const py::array& a) { return static_cast<size_t>(a.shape(0)); }

py::tuple encode_py(const py::array& rot_residuals, const py::array& rot_centroids,
                    const py::array& labels, size_t bits, int n_threads) {
  const float* res = matrix<float>(rot_residuals, "rot_residuals");
  const size_t n = rows_of(rot_residuals), dp = static_cast<size_t>(rot_residuals.shape(1));
  const float* cent = matrix<float>(rot_centroids, "rot_centroids", dp);
  const int64_t* lab = vector_data<int64_t>(labels, n, "labels");
  if (bits < 1 || bits > 8) fail("bits", "must be in [1, 8]");
  if (dp == 0 || dp % 8) fail("rot_residuals", "columns must be a positive multiple of 8");
  py::array_t<uint8_t> rows({n, rabitq_row_bytes(dp, bits)});
  py::array_t<float> cosines(n);
  uint8_t* out = rows.mutable_data();
  float* cos = cosines.mutable_data();
  const size_t nlist = rows_of(rot_centroids);
  {
    py::gil_scoped_release release;
    rabitq_encode(res, cent, lab, n, nlist, dp, bits, n_threads, out, cos);
  }
  return py::make_tuple(rows, cosines);
}

// The rotation: uint8 [rounds, dp / 8] FHT-Kac sign bits, or a float32 [dp, d] matrix
// (indexes saved before the structured rotation).
void set_rotation(RabitqSearchArgs& a, const py::array& rotation) {
  if (py::isinstance<py::array_t<uint8_t>>(rotation)) {
    a.rotation_signs = matrix<uint8_t>(rotation, "rotation", a.dp / 8);
    a.rotation_rounds = rows_of(rotation);
    if (a.rotation_rounds == 0) fail("rotation", "expected at least one round of sign bits");
    return;
  }
  a.rotation = matrix<float>(rotation, "rotation", a.d);
  if (rows_of(rotation) != a.dp) fail("rotation", "expected dp rows");
}

py::array_t<float> fht_rotate_py(const py::array& x, const py::array& signs, int n_threads,
                                 const std::optional<SimdLevel>& simd_level) {
  const float* in = matrix<float>(x, "x");
  const size_t n = rows_of(x), d = static_cast<size_t>(x.shape(1));
  if (d == 0) fail("x", "expected at least one column");
  const size_t dp = rabitq_padded_dim(d);
  const uint8_t* bits = matrix<uint8_t>(signs, "signs", dp / 8);
  const size_t rounds = rows_of(signs);
  if (rounds == 0) fail("signs", "expected at least one round");
  const int level = simd_level_code(simd_level);
  const SimdLevel lv = level < 0 ? best_simd_level() : static_cast<SimdLevel>(level);
  py::array_t<float> out({n, dp});
  float* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    rabitq_fht_rotate(bits, rounds, d, dp, in, n, o, n_threads, lv);
  }
  return out;
}

// The index arrays as search arguments (checked for shape and dtype here, for
// consistency by the kernel).
RabitqSearchArgs index_args(const py::array& rows, const py::array& centroids,
                            const py::array& centroid_sq_norms, const py::array& rotation,
                            size_t bits, const py::array& list_offsets,
                            std::vector<int64_t>& offsets_copy, const py::array& ids,
                            const py::array& exact_rows, const std::optional<py::array>& sq_norms,
                            Metric metric, const std::optional<py::array>& fast_blocks) {
  if (metric != Metric::InnerProduct && metric != Metric::L2) fail("metric", "unknown value");
  RabitqSearchArgs a;
  a.centroids = matrix<float>(centroids, "centroids");
  a.nlist = rows_of(centroids);
  a.d = static_cast<size_t>(centroids.shape(1));
  a.dp = rabitq_padded_dim(a.d);
  a.bits = bits;
  if (bits < 1 || bits > 8) fail("bits", "must be in [1, 8]");
  a.centroid_sq_norms = vector_data<float>(centroid_sq_norms, a.nlist, "centroid_sq_norms");
  set_rotation(a, rotation);
  // A copy: checked, then followed without the GIL while the caller's array could change.
  const int64_t* offsets = vector_data<int64_t>(list_offsets, a.nlist + 1, "list_offsets");
  offsets_copy.assign(offsets, offsets + a.nlist + 1);
  a.list_offsets = offsets_copy.data();
  a.rows = matrix<uint8_t>(rows, "rows", rabitq_row_bytes(a.dp, bits));
  a.n = rows_of(rows);
  a.ids = vector_data<int64_t>(ids, a.n, "ids");
  a.exact_rows = matrix<float>(exact_rows, "exact_rows", a.d);
  if (rows_of(exact_rows) != a.n) fail("exact_rows", "expected one row per code row");
  a.sq_norms = vector_data<float>(sq_norms, a.n, "sq_norms");
  a.metric = metric;
  if (fast_blocks) {  // its size is checked against the lists by the kernel
    if (!py::isinstance<py::array_t<uint8_t>>(*fast_blocks) || fast_blocks->ndim() != 1 ||
        !(fast_blocks->flags() & py::array::c_style))
      fail("fast_blocks", "expected a contiguous 1-D uint8 array (rabitq_fast_pack)");
    a.fast_blocks = static_cast<const uint8_t*>(fast_blocks->data());
    a.fast_bytes = static_cast<size_t>(fast_blocks->shape(0));
  }
  return a;
}

void set_queries(RabitqSearchArgs& a, const py::array& queries) {
  const QueryRows q = query_rows(queries, a.d);
  a.queries = q.data;
  a.query_stride = q.stride;
  a.nq = q.nq;
}

// Result arrays, then the search without the GIL; returns Hits, the counts kept for
// ivf_last_report(owner).
py::object search_and_report(RabitqSearchArgs& a, size_t k, size_t nprobe, RabitqRescore rescore,
                      size_t rescore_count, float epsilon, int n_threads, uint64_t owner) {
  if (rescore < RabitqRescore::Bound || rescore > RabitqRescore::All) fail("rescore", "unknown value");
  a.k = k;
  a.nprobe = nprobe;
  a.rescore = rescore;
  a.rescore_count = rescore_count;
  a.epsilon = epsilon;
  a.n_threads = n_threads;
  RabitqSearchStats stats;
  a.stats = &stats;
  ResultArrays found = run_search(a, k, rabitq_ivf_search);
  if (IvfReport* r = begin_ivf_report(owner)) {
    r->has_counts = true;
    r->scanned = stats.scanned;
    r->rescored = stats.rescored;
  }
  return make_hits(std::move(found));
}

py::object search_py(const py::array& rows, const py::array& queries, size_t k,
                    const py::array& centroids, const py::array& centroid_sq_norms,
                    const py::array& rotation, size_t bits, const py::array& list_offsets,
                    const py::array& ids, const py::array& exact_rows,
                    const std::optional<py::array>& sq_norms, Metric metric, size_t nprobe,
                    RabitqRescore rescore, size_t rescore_count, float epsilon,
                    const std::optional<py::array>& allow, bool allow_by_row, int n_threads,
                    const std::optional<SimdLevel>& simd_level,
                    const std::optional<py::array>& fast_blocks, uint64_t owner) {
  std::vector<int64_t> offsets;
  RabitqSearchArgs a = index_args(rows, centroids, centroid_sq_norms, rotation, bits, list_offsets,
                                  offsets, ids, exact_rows, sq_norms, metric, fast_blocks);
  set_queries(a, queries);
  a.allow = allow_filter(allow, allow_by_row);
  a.simd_level = simd_level_code(simd_level);
  return search_and_report(a, k, nprobe, rescore, rescore_count, epsilon, n_threads, owner);
}

py::tuple estimates_py(const py::array& rows, const py::array& query, size_t list,
                       const py::array& centroids, const py::array& centroid_sq_norms,
                       const py::array& rotation, size_t bits, const py::array& list_offsets,
                       const py::array& ids, const py::array& exact_rows,
                       const std::optional<py::array>& sq_norms, Metric metric,
                       const std::optional<SimdLevel>& simd_level,
                       const std::optional<py::array>& fast_blocks) {
  std::vector<int64_t> offsets;
  RabitqSearchArgs a = index_args(rows, centroids, centroid_sq_norms, rotation, bits, list_offsets,
                                  offsets, ids, exact_rows, sq_norms, metric, fast_blocks);
  set_queries(a, query);
  if (a.nq != 1) fail("query", "expected one row");
  if (list >= a.nlist) fail("list", "outside [0, nlist)");
  a.k = 1;
  a.nprobe = 1;
  a.simd_level = simd_level_code(simd_level);
  const size_t count = static_cast<size_t>(offsets[list + 1] - offsets[list]);
  py::array_t<float> est(count), err(count);
  float* e = est.mutable_data();
  float* b = err.mutable_data();
  {
    py::gil_scoped_release release;
    rabitq_estimates(a, a.queries, list, e, b);
  }
  return py::make_tuple(est, err);
}

}  // namespace

void register_rabitq_fastscan(py::module_& m);  // rabitq_fastscan_bindings.cpp

void register_rabitq(py::module_& m) {
  py::enum_<RabitqRescore>(m, "RabitqRescore", "Which RaBitQ candidates are re-scored exactly.")
      .value("Bound", RabitqRescore::Bound, "those whose upper bound reaches the k-th exact score")
      .value("Count", RabitqRescore::Count, "the best rescore_count * k by estimate")
      .value("All", RabitqRescore::All, "every scanned row");
  m.def("rabitq_encode", &encode_py, py::arg("rot_residuals"), py::arg("rot_centroids"),
        py::arg("labels"), py::kw_only(), py::arg("bits"), py::arg("n_threads") = 0,
        "RaBitQ rows (bit planes + 3 float32 factors) of rotated residuals; returns (rows, cosines).");
  m.def("rabitq_fht_rotate", &fht_rotate_py, py::arg("x"), py::arg("signs"), py::kw_only(),
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(),
        "FHT-Kac rotation of float32 rows [n, d] into [n, rabitq padded d] (signs: uint8 "
        "[rounds, padded d / 8] sign bits).");
  m.def("rabitq_ivf_search", &search_py, py::arg("rows"), py::arg("queries"), py::arg("k"),
        py::arg("centroids"), py::arg("centroid_sq_norms"), py::arg("rotation"),
        py::arg("bits"), py::arg("list_offsets"), py::arg("ids"), py::arg("exact_rows"),
        py::arg("sq_norms"), py::arg("metric"), py::arg("nprobe"),
        py::arg("rescore") = RabitqRescore::Bound, py::arg("rescore_count") = 4,
        py::arg("epsilon") = 1.9f, py::arg("allow") = py::none(), py::arg("allow_by_row") = false,
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(),
        py::arg("fast_blocks") = py::none(), py::arg("owner") = 0,
        "IVF top-k over RaBitQ codes, re-scored exactly, for queries (one row or a batch); "
        "returns ragcore.Hits. owner != 0: the counts are kept for ivf_last_report(owner). "
        "fast_blocks: rabitq_fast_pack of 1-bit rows, scanned by the fast-scan kernel.");
  m.def("rabitq_estimates", &estimates_py, py::arg("rows"), py::arg("query"), py::arg("list"),
        py::kw_only(), py::arg("centroids"), py::arg("centroid_sq_norms"), py::arg("rotation"),
        py::arg("bits"), py::arg("list_offsets"), py::arg("ids"), py::arg("exact_rows"),
        py::arg("sq_norms"), py::arg("metric"), py::arg("simd_level") = py::none(),
        py::arg("fast_blocks") = py::none(),
        "Estimates and error bounds (1 standard deviation, plus the fast scan's worst "
        "quantisation error when fast_blocks are given) of one list's rows for one query.");
  register_rabitq_fastscan(m);
}
