#pragma once
// Large zero-filled blocks for the per-link and per-GPU arrays of a 100,000-GPU fabric.
//
// Why: a folded 98,304-GPU step touches ~130 MB of such arrays once each, and on the 2-core
// reference machine (a paravirtualised VM) every 4 KiB first-touch fault costs about 7 us: a
// third of the run was page faults (perf, bench/RESULTS.md). Blocks of kHugePageMinBytes and
// more are mapped on their own, 2 MiB-aligned, and madvise(MADV_HUGEPAGE)d, so where transparent
// huge pages are enabled (`always` or `madvise`) one fault maps 2 MiB; elsewhere they behave as
// ordinary anonymous memory. Smaller blocks come from calloc. Either way the memory reads as
// zero until written.
#include <cstddef>
#include <limits>
#include <new>
#include <vector>

namespace megasim {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// Blocks from this size up are mapped on huge pages (a 1-2 MiB block still costs up to 512
// small faults, against one huge one rounded up to 2 MiB).
inline constexpr std::size_t kHugePageMinBytes = std::size_t{1} << 20;

// A zero-filled block of `bytes` (at least 1); throws std::bad_alloc (also for a size within two
// huge pages of SIZE_MAX, whose rounding would wrap).
void* allocate_zeroed(std::size_t bytes);
// Frees a block from allocate_zeroed with the same `bytes`; null is a no-op.
void free_zeroed(void* block, std::size_t bytes) noexcept;

// std::allocator's contract on allocate_zeroed: for the vectors that grow with the fabric.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_zeroed(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { free_zeroed(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// A vector whose large buffers are huge-page backed.
template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace megasim
