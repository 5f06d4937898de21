// The result arrays of a top-k binding: allocated with the GIL, filled without it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>

#include "array_checks.h"
#include "ragcore/util/result_bound.h"

namespace ragcore_bindings {

// A new C-contiguous array of T of these dimensions (1 or 2), made by numpy's C API
// directly: pybind11's shape constructor builds shape and stride vectors, heap allocations
// paid on every call.
template <class T>
pybind11::array_t<T> new_array(std::initializer_list<size_t> shape) {
  auto& api = pybind11::detail::npy_api::get();
  Py_intptr_t dims[2] = {0, 0};
  int nd = 0;
  if (shape.size() > 2) throw std::invalid_argument("new_array: at most 2 dimensions");
  for (size_t extent : shape) dims[nd++] = static_cast<Py_intptr_t>(extent);
  PyObject* descr =
      api.PyArray_DescrFromType_(pybind11::detail::npy_format_descriptor<T>::value);
  if (descr == nullptr) throw pybind11::error_already_set();
  // NewFromDescr takes the reference to descr, also when it fails.
  PyObject* array =
      api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, nullptr, 0, nullptr);
  if (array == nullptr) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::array_t<T>>(array);
}

// The nq x k result array of T of a top-k search.
template <class T>
pybind11::array_t<T> result_array(size_t nq, size_t k) {
  return new_array<T>({nq, k});
}

// Result arrays nq x k, then search(a) without the GIL; returns (scores, ids).
template <class Args>
pybind11::tuple run_search(Args& a, size_t k, void (*search)(const Args&)) {
  if (k == 0) fail("k", "must be >= 1");
  ragcore::check_result_size(a.nq, k, a.n);
  pybind11::array_t<float> scores = result_array<float>(a.nq, k);
  pybind11::array_t<int64_t> out_ids = result_array<int64_t>(a.nq, k);
  a.out_scores = scores.mutable_data();
  a.out_ids = out_ids.mutable_data();
  {
    pybind11::gil_scoped_release release;
    search(a);
  }
  return pybind11::make_tuple(scores, out_ids);
}

}  // namespace ragcore_bindings
