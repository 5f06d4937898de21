// Bindings of the IVF index kernels: k-means, nearest-centroid assignment and
// the inverted-list search. Conversion, checks and GIL release only.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "array_checks.h"
#include "search_results.h"
#include "ragcore/dense/ivf.h"
#include "ragcore/dense/kmeans.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

// A C-contiguous 2-D float32 array with d columns (d = 0: any).
const float* float_rows(const py::array& a, const std::string& name, size_t d = 0) {
  if (!py::isinstance<py::array_t<float>>(a) || a.ndim() != 2)
    fail(name, "expected a 2-D float32 array");
  if (!(a.flags() & py::array::c_style)) fail(name, "must be C-contiguous");
  if (d && static_cast<size_t>(a.shape(1)) != d) fail(name, "expected " + std::to_string(d) + " columns");
  return static_cast<const float*>(a.data());
}

py::tuple kmeans_py(const py::array& x, size_t k, int max_iter, double tol, uint64_t seed,
                    KMeansInit init, int n_threads, const std::optional<SimdLevel>& simd_level,
                    bool spherical) {
  const float* data = float_rows(x, "x");
  if (init != KMeansInit::KMeansPlusPlus && init != KMeansInit::Random)
    fail("init", "unknown value");
  const size_t n = static_cast<size_t>(x.shape(0)), d = static_cast<size_t>(x.shape(1));
  KMeansParams p;
  p.k = k;
  p.max_iter = max_iter;
  p.tol = tol;
  p.seed = seed;
  p.init = init;
  p.n_threads = n_threads;
  p.simd_level = simd_level_code(simd_level);
  p.spherical = spherical;
  py::array_t<float> centroids({k, d});
  float* out = centroids.mutable_data();
  KMeansResult r;
  {
    py::gil_scoped_release release;
    r = kmeans_train(data, n, d, p, out);
  }
  return py::make_tuple(centroids, r.objective, r.iterations, r.reseeded);
}

py::tuple assign_py(const py::array& x, const py::array& centroids, int n_threads,
                    const std::optional<SimdLevel>& simd_level) {
  const float* c = float_rows(centroids, "centroids");
  const size_t k = static_cast<size_t>(centroids.shape(0)), d = static_cast<size_t>(centroids.shape(1));
  const float* data = float_rows(x, "x", d);
  const size_t n = static_cast<size_t>(x.shape(0));
  if (k == 0) fail("centroids", "no centroids");
  py::array_t<int64_t> labels(n);
  py::array_t<float> dist(n);
  int64_t* lab = labels.mutable_data();
  float* dst = dist.mutable_data();
  {
    py::gil_scoped_release release;
    std::vector<float> norms(k);
    row_sq_norms(c, k, d, norms.data());
    assign_nearest(data, n, d, c, norms.data(), k, n_threads, simd_level_code(simd_level), lab,
                   dst);
  }
  return py::make_tuple(labels, dist);
}

// The index side of an ivf_search call; owns a copy of the list offsets, because the
// search checks them and then follows them without the GIL, when another thread could
// change the caller's array in between.
struct IvfIndexArgs {
  IvfSearchArgs a;
  std::vector<int64_t> offsets;
};

void set_index_args(IvfIndexArgs& out, const py::array& rows, const py::array& centroids,
                    const py::array& centroid_sq_norms, const py::array& list_offsets,
                    Storage storage, const py::array& ids, const std::optional<py::array>& sq_norms,
                    Metric metric, const std::optional<py::array>& code_min,
                    const std::optional<py::array>& code_scale,
                    const std::optional<py::array>& exact_rows) {
  if (storage < Storage::F32 || storage > Storage::SQ8) fail("storage", "unknown value");
  if (metric != Metric::InnerProduct && metric != Metric::L2) fail("metric", "unknown value");
  IvfSearchArgs& a = out.a;
  a.centroids = float_rows(centroids, "centroids");
  a.nlist = static_cast<size_t>(centroids.shape(0));
  a.d = static_cast<size_t>(centroids.shape(1));
  a.centroid_sq_norms = vector_data<float>(centroid_sq_norms, a.nlist, "centroid_sq_norms");
  const int64_t* offsets = vector_data<int64_t>(list_offsets, a.nlist + 1, "list_offsets");
  if (offsets) out.offsets.assign(offsets, offsets + a.nlist + 1);
  a.list_offsets = offsets ? out.offsets.data() : nullptr;
  a.storage = storage;
  if (rows.ndim() != 2 || static_cast<size_t>(rows.shape(1)) != a.d ||
      static_cast<size_t>(rows.itemsize()) != storage_bytes(a.storage) ||
      !(rows.flags() & py::array::c_style))
    fail("rows", "expected a C-contiguous 2-D array of d columns matching the storage");
  a.rows = rows.data();
  a.n = static_cast<size_t>(rows.shape(0));
  a.ids = vector_data<int64_t>(ids, a.n, "ids");
  a.sq_norms = vector_data<float>(sq_norms, a.n, "sq_norms");
  a.metric = metric;
  a.code_min = vector_data<float>(code_min, a.d, "code_min");
  a.code_scale = vector_data<float>(code_scale, a.d, "code_scale");
  if (exact_rows) {
    if (static_cast<size_t>(exact_rows->shape(0)) != a.n) fail("exact_rows", "expected n rows");
    a.exact_rows = float_rows(*exact_rows, "exact_rows", a.d);
  }
}

py::object ivf_search_py(const py::array& rows, const py::array& queries, size_t k,
                         const py::array& centroids, const py::array& centroid_sq_norms,
                         const py::array& list_offsets, Storage storage, const py::array& ids,
                         const std::optional<py::array>& sq_norms, Metric metric, size_t nprobe,
                         const std::optional<py::array>& code_min,
                         const std::optional<py::array>& code_scale,
                         const std::optional<py::array>& exact_rows, size_t rescore,
                         const std::optional<py::array>& allow, bool allow_by_row, int n_threads,
                         const std::optional<SimdLevel>& simd_level, uint64_t owner,
                         bool bf16_compute, const std::optional<Bf16Level>& bf16_level) {
  IvfIndexArgs index;
  set_index_args(index, rows, centroids, centroid_sq_norms, list_offsets, storage, ids, sq_norms,
                 metric, code_min, code_scale, exact_rows);
  IvfSearchArgs& a = index.a;
  a.rescore = rescore;
  const QueryRows q = query_rows(queries, a.d);
  a.queries = q.data;
  a.query_stride = q.stride;
  a.nq = q.nq;
  a.k = k;
  a.nprobe = nprobe;
  a.allow = allow_filter(allow, allow_by_row);
  a.n_threads = n_threads;
  a.simd_level = simd_level_code(simd_level);
  if (bf16_compute && storage != Storage::BF16) fail("bf16_compute", "needs BF16 storage");
  a.bf16_compute = bf16_compute;
  a.bf16_level = bf16_level ? static_cast<int>(*bf16_level) : -1;
  IvfStageTimes times;
  a.stages = &times;
  ResultArrays found = run_search(a, k, ivf_search);
  if (IvfReport* r = begin_ivf_report(owner)) {
    r->has_stages = true;
    r->coarse = times.coarse;
    r->scan = times.scan;
    r->rescore = times.rescore;
  }
  return make_hits(std::move(found));
}

// (seconds per stage, counts) of this thread's last search by owner; empty dicts for
// what that search did not report, or when this thread's last search was another's.
py::tuple ivf_last_report_py(uint64_t owner) {
  const IvfReport& r = ivf_report();
  py::dict stages, counts;
  if (owner != 0 && r.owner == owner) {
    if (r.has_stages) {
      stages["coarse"] = r.coarse;
      stages["scan"] = r.scan;
      stages["rescore"] = r.rescore;
    }
    if (r.has_counts) {
      counts["scanned"] = r.scanned;
      counts["rescored"] = r.rescored;
    }
  }
  return py::make_tuple(stages, counts);
}

}  // namespace

namespace ragcore_bindings {
IvfReport& ivf_report() {
  thread_local IvfReport report;
  return report;
}
}  // namespace ragcore_bindings

void register_ivf(py::module_& m) {
  py::enum_<KMeansInit>(m, "KMeansInit", "How k-means picks its first centres.")
      .value("KMeansPlusPlus", KMeansInit::KMeansPlusPlus)
      .value("Random", KMeansInit::Random);

  m.def("kmeans", &kmeans_py, py::arg("x"), py::arg("k"), py::kw_only(), py::arg("max_iter") = 25,
        py::arg("tol") = 1e-4, py::arg("seed") = 0, py::arg("init") = KMeansInit::KMeansPlusPlus,
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(), py::arg("spherical") = false,
        "k-means (squared L2; spherical: unit-norm centroids); returns (centroids, objective per "
        "assignment, iterations, reseeded).");
  m.def("assign_nearest", &assign_py, py::arg("x"), py::arg("centroids"), py::kw_only(),
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(),
        "Nearest centroid of each row; returns (labels int64, squared distances float32).");
  m.def("ivf_search", &ivf_search_py, py::arg("rows"), py::arg("queries"), py::arg("k"),
        py::arg("centroids"), py::arg("centroid_sq_norms"),
        py::arg("list_offsets"), py::arg("storage"), py::arg("ids"), py::arg("sq_norms"),
        py::arg("metric"), py::arg("nprobe"), py::arg("code_min") = py::none(),
        py::arg("code_scale") = py::none(), py::arg("exact_rows") = py::none(),
        py::arg("rescore") = 4, py::arg("allow") = py::none(), py::arg("allow_by_row") = false,
        py::arg("n_threads") = 0, py::arg("simd_level") = py::none(), py::arg("owner") = 0,
        py::arg("bf16_compute") = false, py::arg("bf16_level") = py::none(),
        "Approximate top-k over inverted lists of queries (one row or a batch); returns "
        "ragcore.Hits. owner != 0: the seconds per stage are kept for ivf_last_report(owner). "
        "bf16_compute (BF16 storage only): queries rounded to bf16, products by the bf16 "
        "kernels (bf16_level: one level, for tests).");
  m.def("ivf_last_report", &ivf_last_report_py, py::arg("owner"),
        "(seconds per stage, counts) of this thread's last IVF search given this owner; "
        "empty dicts for what it did not report or when the thread's last search was another's.");
}
