// Bindings of the per-thread denormal flush (fp_state.h). The calls are a few
// nanoseconds and must run on the calling thread, so the GIL is kept: releasing it
// would not move them to another thread, and there is no work to overlap.
#include <pybind11/pybind11.h>

#include "ragcore/util/fp_state.h"

namespace py = pybind11;

void register_fp_state(py::module_& m) {
  m.def("denormal_flush_supported", &ragcore::denormal_flush_supported,
        "Whether this build can flush subnormal floats to zero (x86-64: MXCSR FTZ+DAZ; "
        "aarch64: FPCR.FZ); elsewhere the other calls are no-ops.");
  m.def("denormals_flushed", &ragcore::denormals_flushed,
        "Whether the calling thread flushes subnormal floats to zero now.");
  m.def("set_denormal_flush", &ragcore::set_denormal_flush, py::arg("flush"),
        "Sets the calling thread's flush state; returns the previous control bits "
        "for restore_denormal_state on the same thread.");
  m.def("restore_denormal_state", &ragcore::restore_denormal_state, py::arg("previous"),
        "Puts back the flush bits saved by set_denormal_flush on the calling thread.");
}
