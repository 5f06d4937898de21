// The result arrays of a top-k binding: allocated with the GIL, filled without it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>

#include "array_checks.h"
#include "ragcore/util/result_bound.h"

namespace ragcore_bindings {

// A new C-contiguous nq x k array of T, made by numpy's C API directly: pybind11's shape
// constructor builds shape and stride vectors, heap allocations paid on every call.
template <class T>
pybind11::array_t<T> result_array(size_t nq, size_t k) {
  auto& api = pybind11::detail::npy_api::get();
  const Py_intptr_t dims[2] = {static_cast<Py_intptr_t>(nq), static_cast<Py_intptr_t>(k)};
  PyObject* descr =
      api.PyArray_DescrFromType_(pybind11::detail::npy_format_descriptor<T>::value);
  if (descr == nullptr) throw pybind11::error_already_set();
  // NewFromDescr takes the reference to descr, also when it fails.
  PyObject* array =
      api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, 2, dims, nullptr, nullptr, 0, nullptr);
  if (array == nullptr) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::array_t<T>>(array);
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
