// Checks and conversions shared by the binding sources: they guarantee that no
// input can crash the process; what the arguments mean is checked in the Python layer.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// The first n elements of a 1-D contiguous array of T that may hold more (a grown buffer).
template <class T>
inline const T* prefix_data(const std::optional<py::array>& a, size_t n, const std::string& name) {
  if (!a) return nullptr;
  if (!py::isinstance<py::array_t<T>>(*a) || a->ndim() != 1 || static_cast<size_t>(a->shape(0)) < n)
    fail(name, "expected a 1-D array of at least " + std::to_string(n) +
                   " elements of the right dtype");
  if (!(a->flags() & py::array::c_style)) fail(name, "must be contiguous");
  return static_cast<const T*>(a->data());
}

// The bound on a query's Euclidean norm (ragcore._util.arrays.MAX_NORM): with larger norms a
// float32 dot product or squared distance could overflow to infinity.
constexpr double kMaxQueryNorm = 1e18;

// Every search entry's check of its query values, done here once: each row finite and of
// norm at most kMaxQueryNorm. The first row holding NaN or infinity is named, else the first
// row of too large a norm (the messages of the Python checks of stored vectors).
inline void check_query_values(const float* q, size_t nq, size_t d, size_t stride,
                               const std::string& name) {
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t non_finite = kNone, too_large = kNone;
  double too_large_norm = 0.0;
  for (size_t i = 0; i < nq && non_finite == kNone; ++i) {
    const float* row = q + i * stride;
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // independent sums: no serial add chain
    size_t p = 0;
    for (; p + 8 <= d; p += 8)
      for (size_t j = 0; j < 8; ++j) acc[j] += static_cast<double>(row[p + j]) * row[p + j];
    for (; p < d; ++p) acc[0] += static_cast<double>(row[p]) * row[p];
    double sq = 0.0;
    for (double v : acc) sq += v;  // finite unless a value is NaN or infinite
    if (!std::isfinite(sq)) {
      non_finite = i;
    } else if (too_large == kNone && std::sqrt(sq) > kMaxQueryNorm) {
      too_large = i;
      too_large_norm = std::sqrt(sq);
    }
  }
  if (non_finite != kNone)
    throw std::invalid_argument(name + " contains NaN or infinity (first in row " +
                                std::to_string(non_finite) + ")");
  if (too_large != kNone) {
    char norm[32];
    std::snprintf(norm, sizeof norm, "%.3g", too_large_norm);
    throw std::invalid_argument(name + " row " + std::to_string(too_large) + " has norm " + norm +
                                "; norms above 1e+18 could overflow the float32 scores");
  }
}

// Query rows as every dense search entry takes them: one row (1-D) or one per row (2-D),
// float32 of d values, elements of a row contiguous; values checked by check_query_values.
struct QueryRows {
  const float* data;
  size_t nq, stride;
};

inline QueryRows query_rows(const py::array& queries, size_t d) {
  if (!py::isinstance<py::array_t<float>>(queries)) fail("queries", "expected float32");
  QueryRows r{static_cast<const float*>(queries.data()), 1, d};
  if (queries.ndim() == 1) {
    if (static_cast<size_t>(queries.shape(0)) != d)
      fail("queries", "expected " + std::to_string(d) + " values");
    if (d > 1 && queries.strides(0) != static_cast<py::ssize_t>(sizeof(float)))
      fail("queries", "must be contiguous");
  } else {
    r.stride = row_stride_elements(queries, "queries");
    if (static_cast<size_t>(queries.shape(1)) != d)
      fail("queries", "expected " + std::to_string(d) + " columns");
    r.nq = static_cast<size_t>(queries.shape(0));
  }
  check_query_values(r.data, r.nq, d, r.stride, "queries");
  return r;
}

// query_rows for the kernels that read the rows back to back: sets nq, returns the data.
inline const float* contiguous_query_rows(const py::array& queries, size_t d, size_t& nq) {
  const QueryRows q = query_rows(queries, d);
  if (q.nq > 1 && q.stride != d) fail("queries", "rows must be contiguous (use numpy.ascontiguousarray)");
  nq = q.nq;
  return q.data;
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
