// The result arrays of a top-k binding: allocated with the GIL, filled without it.
#pragma once

#include <pybind11/gil_safe_call_once.h>
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

// The result arrays of a search, filled.
struct ResultArrays {
  pybind11::array_t<float> scores;
  pybind11::array_t<int64_t> ids;
};

// Result arrays nq x k, then search(a) without the GIL.
template <class Args>
ResultArrays run_search(Args& a, size_t k, void (*search)(const Args&)) {
  if (k == 0) fail("k", "must be >= 1");
  ragcore::check_result_size(a.nq, k, a.n);
  ResultArrays found{result_array<float>(a.nq, k), result_array<int64_t>(a.nq, k)};
  a.out_scores = found.scores.mutable_data();
  a.out_ids = found.ids.mutable_data();
  {
    pybind11::gil_scoped_release release;
    search(a);
  }
  return found;
}

// ragcore.Hits of arrays a native search has just written, made as Hits.of_native makes
// it (no constructor checks) but without a Python frame: a search entry that returns this
// is the whole cost of a one-query call, so every fixed cost here is paid per call.
inline pybind11::object make_hits(ResultArrays&& found) {
  // Imported on first use (the package is loaded by then) and kept for the process; the
  // import may let another thread run, hence pybind11's GIL-safe once.
  PYBIND11_CONSTINIT static pybind11::gil_safe_call_once_and_store<pybind11::object> hits_class;
  PyObject* const hits_type =
      hits_class
          .call_once_and_store_result(
              [] { return pybind11::object(pybind11::module_::import("ragcore.hits").attr("Hits")); })
          .get_stored()
          .ptr();
  static PyObject* const scores_name = PyUnicode_InternFromString("scores");
  static PyObject* const ids_name = PyUnicode_InternFromString("ids");
  static PyObject* const no_args = PyTuple_New(0);
  auto hits = pybind11::reinterpret_steal<pybind11::object>(
      PyBaseObject_Type.tp_new(reinterpret_cast<PyTypeObject*>(hits_type), no_args, nullptr));
  if (!hits) throw pybind11::error_already_set();
  // object.__setattr__: past the frozen dataclass's __setattr__, as of_native does.
  if (PyObject_GenericSetAttr(hits.ptr(), scores_name, found.scores.ptr()) != 0 ||
      PyObject_GenericSetAttr(hits.ptr(), ids_name, found.ids.ptr()) != 0)
    throw pybind11::error_already_set();
  return hits;
}

}  // namespace ragcore_bindings
