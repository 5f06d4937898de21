// Bindings of the bf16 dot-product levels (registered from module.cpp): the level enum,
// what this CPU offers, and the raw kernel for the tests that compare the levels.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "array_checks.h"
#include "ragcore/simd/bf16_dot.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

Bf16Level checked_bf16_level(Bf16Level level) {
  const int v = static_cast<int>(level);
  if (v < 0 || v > static_cast<int>(Bf16Level::Amx)) fail("bf16_level", "unknown value");
  return level;
}

// scores[i, j] = <queries[i] rounded to bf16, rows[j]> by one level's kernel.
py::array_t<float> bf16_dot(const py::array& queries, const py::array& rows, Bf16Level level) {
  if (!py::isinstance<py::array_t<float>>(queries)) fail("queries", "expected float32");
  if (!py::isinstance<py::array_t<uint16_t>>(rows)) fail("rows", "expected uint16 (bfloat16 bits)");
  const size_t ldq = row_stride_elements(queries, "queries");
  const size_t ldx = row_stride_elements(rows, "rows");
  const size_t nq = static_cast<size_t>(queries.shape(0)), n = static_cast<size_t>(rows.shape(0));
  const size_t d = static_cast<size_t>(rows.shape(1));
  if (static_cast<size_t>(queries.shape(1)) != d) fail("queries", "expected " + std::to_string(d) + " columns");
  const Bf16Kernels& kern = bf16_kernels(checked_bf16_level(level));
  py::array_t<float> out({nq, n});
  float* o = out.mutable_data();
  const float* q = static_cast<const float*>(queries.data());
  const uint16_t* x = static_cast<const uint16_t*>(rows.data());
  {
    py::gil_scoped_release release;
    const Bf16Queries prepared = prepare_bf16_queries(kern.level, q, ldq, nq, d);
    if (nq && n) {  // the kernel writes [row][query]; transpose into [query][row]
      std::vector<float> by_row(n * nq);
      kern.dot_rows_batch(prepared, 0, nq, x, ldx, n, d, by_row.data(), nq);
      for (size_t j = 0; j < n; ++j)
        for (size_t i = 0; i < nq; ++i) o[i * n + j] = by_row[j * nq + i];
    }
  }
  return out;
}

}  // namespace

void register_bf16(py::module_& m) {
  py::enum_<Bf16Level>(m, "Bf16Level", "A bf16 dot-product kernel level.")
      .value("Scalar", Bf16Level::Scalar)
      .value("Avx512Bf16", Bf16Level::Avx512Bf16)
      .value("Amx", Bf16Level::Amx);
  m.def("bf16_level_available",
        [](Bf16Level level) { return bf16_level_available(checked_bf16_level(level)); },
        py::arg("level"));
  m.def("best_bf16_level", &best_bf16_level,
        "The level FlatIndex and IVFIndex use: the fastest available; AMX only if it passes "
        "bf16_level_self_check.");
  m.def("bf16_level_self_check",
        [](Bf16Level level, bool corrupt_one_score) {
          return bf16_level_self_check(checked_bf16_level(level), corrupt_one_score);
        },
        py::arg("level"), py::arg("corrupt_one_score") = false,
        "Whether the level's kernel scores a fixed problem within float32's summation bound "
        "of the exact sums (corrupt_one_score: one score moved first, to test the check).");
  m.def("bf16_dot", &bf16_dot, py::arg("queries"), py::arg("rows"), py::arg("level"),
        "Inner products of float32 queries rounded to bf16 with bf16 rows, [nq, n], by one level.");
}
