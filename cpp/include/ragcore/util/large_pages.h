// An allocator for large arrays read at random (a graph's vectors and links): 64-byte
// aligned, so a row whose size is a multiple of 64 bytes spans whole cache lines (no
// load split across two lines), and from 2 MiB up 2 MiB aligned and advised for
// transparent huge pages (Linux), so a walk that touches a new row every few hundred
// nanoseconds does not also miss the TLB on nearly every one (4 KiB pages cover only
// a few MiB of an index of hundreds). Without THP the advice is a no-op; with the
// environment variable RAGCORE_NO_HUGE_PAGES set it is not given, so the two can be
// compared in one process. The bindings read the variable
// into huge_page_advice() with the GIL held, before each call that may allocate: getenv
// here, without the GIL, could race with os.environ's setenv in another thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ragcore {

// Whether LargePageAllocator advises huge pages (default true).
inline std::atomic<bool>& huge_page_advice() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

template <class T>
struct LargePageAllocator {
  using value_type = T;
  static constexpr size_t kLine = 64;
  static constexpr size_t kHugePage = size_t{2} << 20;

  LargePageAllocator() = default;
  template <class U>
  LargePageAllocator(const LargePageAllocator<U>&) {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T) - kHugePage) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    const size_t align = bytes >= kHugePage ? kHugePage : kLine;
    const size_t rounded = (bytes + align - 1) / align * align;  // aligned_alloc's rule
    void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Before the first touch, so the pages are faulted in huge; failure only costs speed.
    if (align == kHugePage && huge_page_advice().load(std::memory_order_relaxed))
      (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) noexcept { std::free(p); }

  template <class U>
  bool operator==(const LargePageAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const LargePageAllocator<U>&) const { return false; }
};

template <class T>
using LargeVector = std::vector<T, LargePageAllocator<T>>;

}  // namespace ragcore
