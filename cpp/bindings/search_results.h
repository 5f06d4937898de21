// The result arrays of a top-k binding: allocated with the GIL, filled without it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>

#include "array_checks.h"
#include "ragcore/util/result_bound.h"

namespace ragcore_bindings {

// Result arrays nq x k, then search(a) without the GIL; returns (scores, ids).
template <class Args>
pybind11::tuple run_search(Args& a, size_t k, void (*search)(const Args&)) {
  if (k == 0) fail("k", "must be >= 1");
  ragcore::check_result_size(a.nq, k, a.n);
  pybind11::array_t<float> scores({a.nq, k});
  pybind11::array_t<int64_t> out_ids({a.nq, k});
  a.out_scores = scores.mutable_data();
  a.out_ids = out_ids.mutable_data();
  {
    pybind11::gil_scoped_release release;
    search(a);
  }
  return pybind11::make_tuple(scores, out_ids);
}

}  // namespace ragcore_bindings
