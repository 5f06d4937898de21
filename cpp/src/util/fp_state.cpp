// See fp_state.h. Only the flush bits are read and written: rounding mode and
// exception masks and flags stay whatever the thread has.
#include "ragcore/util/fp_state.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define RAGCORE_FP_X86 1
#elif defined(__aarch64__)
#define RAGCORE_FP_AARCH64 1
#endif

namespace ragcore {

namespace {

#if defined(RAGCORE_FP_X86)
constexpr uint64_t kFlushBits = 0x8000u | 0x0040u;  // MXCSR FTZ (bit 15), DAZ (bit 6)
uint64_t read_control() { return _mm_getcsr(); }
void write_control(uint64_t v) { _mm_setcsr(static_cast<unsigned int>(v)); }
#elif defined(RAGCORE_FP_AARCH64)
constexpr uint64_t kFlushBits = uint64_t{1} << 24;  // FPCR.FZ: inputs and results
uint64_t read_control() {
  uint64_t v;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
  return v;
}
void write_control(uint64_t v) { __asm__ __volatile__("msr fpcr, %0" : : "r"(v)); }
#else
constexpr uint64_t kFlushBits = 0;
uint64_t read_control() { return 0; }
void write_control(uint64_t) {}
#endif

}  // namespace

bool denormal_flush_supported() { return kFlushBits != 0; }

bool denormals_flushed() {
  return kFlushBits != 0 && (read_control() & kFlushBits) == kFlushBits;
}

uint64_t set_denormal_flush(bool flush) {
  const uint64_t previous = read_control();
  const uint64_t next = flush ? (previous | kFlushBits) : (previous & ~kFlushBits);
  if (next != previous) write_control(next);
  return previous;
}

void restore_denormal_state(uint64_t previous) {
  const uint64_t now = read_control();
  const uint64_t next = (now & ~kFlushBits) | (previous & kFlushBits);
  if (next != now) write_control(next);
}

}  // namespace ragcore
