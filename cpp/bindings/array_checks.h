// Checks and conversions shared by the binding sources: they guarantee that no
// input can crash the process; what the arguments mean is checked in the Python layer.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ragcore/simd/simd.h"
#include "ragcore/util/filter.h"

namespace ragcore_bindings {

namespace py = pybind11;

[[noreturn]] inline void fail(const std::string& name, const std::string& what) {
  throw std::invalid_argument(name + ": " + what);
}

// Rows may be strided, elements within a row must be contiguous.
inline size_t row_stride_elements(const py::array& a, const std::string& name) {
  if (a.ndim() != 2) fail(name, "expected a 2-D array, got " + std::to_string(a.ndim()) + "-D");
  const auto item = static_cast<py::ssize_t>(a.itemsize());
  if (a.shape(0) == 0) return static_cast<size_t>(a.shape(1));  // no rows: strides are moot
  if (a.shape(1) > 1 && a.strides(1) != item)
    fail(name, "rows must be contiguous (use numpy.ascontiguousarray)");
  if (a.shape(0) > 1 && (a.strides(0) < item * a.shape(1) || a.strides(0) % item != 0))
    fail(name, "unsupported row stride (use numpy.ascontiguousarray)");
  return a.shape(0) > 1 ? static_cast<size_t>(a.strides(0) / item) : static_cast<size_t>(a.shape(1));
}

template <class T>
inline const T* vector_data(const std::optional<py::array>& a, size_t n, const std::string& name) {
  if (!a) return nullptr;
  if (!py::isinstance<py::array_t<T>>(*a) || a->ndim() != 1 ||
      static_cast<size_t>(a->shape(0)) != n)
    fail(name, "expected a 1-D array of " + std::to_string(n) + " elements of the right dtype");
  if (!(a->flags() & py::array::c_style)) fail(name, "must be contiguous");
  return static_cast<const T*>(a->data());
}

// The one-query paths' check, in nanoseconds: the query's d float32 values when it is one
// C-contiguous float32 row (1-D, or 1 x d) of finite values whose squared norm is at most
// max_sq_norm; nullptr otherwise (the Python checks then say what is wrong).
inline const float* one_clean_row(const py::handle& query, size_t d, double max_sq_norm) {
  if (!py::isinstance<py::array_t<float>>(query)) return nullptr;
  const auto q = py::reinterpret_borrow<py::array>(query);
  const bool one_row = (q.ndim() == 1 && static_cast<size_t>(q.shape(0)) == d) ||
                       (q.ndim() == 2 && q.shape(0) == 1 && static_cast<size_t>(q.shape(1)) == d);
  if (!one_row || !(q.flags() & py::array::c_style)) return nullptr;
  const float* v = static_cast<const float*>(q.data());
  double sq = 0.0;
  for (size_t p = 0; p < d; ++p) sq += static_cast<double>(v[p]) * v[p];
  return sq <= max_sq_norm ? v : nullptr;  // false for NaN, infinity or too large
}

// The allow mask (uint8 or bool, one byte per key) or an inactive filter.
inline ragcore::AllowFilter allow_filter(const std::optional<py::array>& allow, bool by_row) {
  ragcore::AllowFilter f;
  if (!allow) return f;
  if (allow->itemsize() != 1 || allow->ndim() != 1 || !(allow->flags() & py::array::c_style))
    fail("allow", "expected a contiguous 1-D array of bytes (uint8 or bool)");
  f.mask = static_cast<const uint8_t*>(allow->data());
  f.len = static_cast<size_t>(allow->shape(0));
  f.by_row = by_row;
  return f;
}

// A SimdLevel value that names a level (pybind11 enums accept any int through SimdLevel(n)).
inline ragcore::SimdLevel checked_simd_level(ragcore::SimdLevel level) {
  const int v = static_cast<int>(level);
  if (v < 0 || v > static_cast<int>(ragcore::SimdLevel::Avx512))
    fail("simd_level", "unknown value");
  return level;
}

// A SimdLevel argument (None: the best available) as the kernels' int (-1: best).
inline int simd_level_code(const std::optional<ragcore::SimdLevel>& level) {
  return level ? static_cast<int>(checked_simd_level(*level)) : -1;
}

// A new 1-D numpy array holding a copy of v.
template <class T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

}  // namespace ragcore_bindings
