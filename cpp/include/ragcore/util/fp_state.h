// Flushing of subnormal (denormal) floats on the calling thread.
//
// A subnormal operand or result costs x86 cores a microcode assist of about a
// hundred cycles; onnxruntime's masked softmax of attention meets them by the
// million (exp of scores shifted by the -10000 mask). Flush-to-zero (results) and
// denormals-are-zero (operands) make those values signed zeros instead, at full
// speed. The state is a per-thread control register (x86: MXCSR's FTZ and DAZ
// bits; aarch64: FPCR.FZ, which covers both), so a caller sets it on its own
// thread only, and puts back what was there afterwards.
#pragma once

#include <cstdint>

namespace ragcore {

// Whether this build can flush denormals on this processor (x86-64 and aarch64;
// elsewhere every call below is a no-op).
bool denormal_flush_supported();

// Whether the calling thread flushes now (both FTZ and DAZ on x86).
bool denormals_flushed();

// Sets the calling thread's flush state (true: flush) and returns the previous
// control-register bits, to be handed to restore_denormal_state on this thread.
uint64_t set_denormal_flush(bool flush);

// Puts the flush bits of `previous` (from set_denormal_flush) back on the calling
// thread; the register's other bits (rounding, exception flags) are left as they are.
void restore_denormal_state(uint64_t previous);

}  // namespace ragcore
