// Bindings of the 1-bit RaBitQ fast scan (rabitq_fastscan.h): the packing the index
// keeps, and (for tests) the tables and the integer sums of one SIMD level.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "array_checks.h"
#include "ragcore/dense/rabitq.h"
#include "ragcore/dense/rabitq_fastscan.h"

namespace py = pybind11;
using namespace ragcore;
using namespace ragcore_bindings;

namespace {

size_t checked_dp(size_t dim) {
  const size_t dp = rabitq_padded_dim(dim);
  if (dim == 0 || dp > kRabitqFastMaxDim)
    fail("dim", "the fast scan takes 1 to " + std::to_string(kRabitqFastMaxDim) + " dimensions");
  return dp;
}

template <class T>
const T* contiguous(const py::array& a, const std::string& name, size_t ndim) {
  if (!py::isinstance<py::array_t<T>>(a) || static_cast<size_t>(a.ndim()) != ndim ||
      !(a.flags() & py::array::c_style))
    fail(name, "expected a C-contiguous " + std::to_string(ndim) + "-D array of the right dtype");
  return static_cast<const T*>(a.data());
}

py::array_t<uint8_t> pack_py(const py::array& rows, const py::array& list_offsets, size_t dim) {
  const size_t dp = checked_dp(dim), row_bytes = rabitq_row_bytes(dp, 1);
  const uint8_t* r = contiguous<uint8_t>(rows, "rows", 2);
  if (static_cast<size_t>(rows.shape(1)) != row_bytes)
    fail("rows", "expected 1-bit rows of " + std::to_string(row_bytes) + " bytes");
  const size_t n = static_cast<size_t>(rows.shape(0));
  const int64_t* off = contiguous<int64_t>(list_offsets, "list_offsets", 1);
  if (list_offsets.shape(0) < 1) fail("list_offsets", "expected nlist + 1 >= 1 entries");
  const size_t nlist = static_cast<size_t>(list_offsets.shape(0)) - 1;
  // A copy: checked, then followed without the GIL while the caller's array could change.
  std::vector<int64_t> offsets(off, off + nlist + 1);
  if (offsets[0] != 0 || static_cast<size_t>(offsets[nlist]) != n)
    fail("list_offsets", "must run from 0 to the number of rows");
  for (size_t l = 0; l < nlist; ++l)
    if (offsets[l + 1] < offsets[l]) fail("list_offsets", "must be non-decreasing");
  std::vector<int64_t> starts;
  const size_t blocks = rabitq_fast_block_starts(offsets.data(), nlist, starts);
  py::array_t<uint8_t> out(blocks * rabitq_fast_block_bytes(dp));
  uint8_t* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    rabitq_fast_pack(r, row_bytes, offsets.data(), nlist, dp, o);
  }
  return out;
}

py::tuple tables_py(const py::array& rotated) {
  const float* v = contiguous<float>(rotated, "rotated", 1);
  const size_t dp = static_cast<size_t>(rotated.shape(0));
  if (dp == 0 || dp % 8 || dp > kRabitqFastMaxDim)
    fail("rotated", "expected a multiple of 8, at most 1024, of values");
  for (size_t i = 0; i < dp; ++i)
    if (!std::isfinite(v[i])) fail("rotated", "expected finite values");
  RabitqFastTables t;
  rabitq_fast_tables(v, dp, t);
  py::array_t<uint8_t> luts({dp / 4, size_t{16}});
  std::copy(t.luts.begin(), t.luts.end(), luts.mutable_data());
  return py::make_tuple(luts, t.bias, t.delta, t.max_error);
}

py::array_t<uint16_t> sums_py(const py::array& blocks, size_t dim, const py::array& luts,
                              const std::optional<SimdLevel>& simd_level) {
  const size_t dp = checked_dp(dim), block_bytes = rabitq_fast_block_bytes(dp);
  const uint8_t* b = contiguous<uint8_t>(blocks, "blocks", 1);
  if (static_cast<size_t>(blocks.shape(0)) % block_bytes)
    fail("blocks", "expected whole blocks of " + std::to_string(block_bytes) + " bytes");
  const uint8_t* t = contiguous<uint8_t>(luts, "luts", 2);
  if (static_cast<size_t>(luts.shape(0)) != dp / 4 || luts.shape(1) != 16)
    fail("luts", "expected [padded dim / 4, 16]");
  const int level = simd_level_code(simd_level);
  if (level >= 0 && !simd_level_available(static_cast<SimdLevel>(level)))
    fail("simd_level", "not available on this CPU");
  const RabitqFastScanKernel& k = rabitq_fast_kernel(level < 0 ? best_simd_level() : static_cast<SimdLevel>(level));
  const size_t nblocks = static_cast<size_t>(blocks.shape(0)) / block_bytes;
  std::vector<uint8_t> laid;
  k.layout(t, dp, laid);
  py::array_t<uint16_t> out(nblocks * kRabitqFastBlock);
  uint16_t* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    k.sums(b, nblocks, dp, laid.data(), o);
  }
  return out;
}

}  // namespace

void register_rabitq_fastscan(py::module_& m) {
  m.def("rabitq_fast_pack", &pack_py, py::arg("rows"), py::arg("list_offsets"), py::kw_only(),
        py::arg("dim"),
        "1-bit RaBitQ rows [n, row bytes] in list order packed into fast-scan blocks of 32 "
        "(codes, then the factors); uint8 1-D.");
  m.def("rabitq_fast_tables", &tables_py, py::arg("rotated"),
        "The fast scan's quantised tables of one rotated query [padded dim]: (luts uint8 "
        "[padded dim / 4, 16], bias, delta, max_error).");
  m.def("rabitq_fast_sums", &sums_py, py::arg("blocks"), py::kw_only(), py::arg("dim"),
        py::arg("luts"), py::arg("simd_level") = py::none(),
        "uint16 [blocks * 32]: the quantised sums of every row of fast-scan blocks under luts, by "
        "one SIMD level's kernel (None: the best).");
}
