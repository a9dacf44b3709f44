// Large zero-filled blocks on transparent huge pages (see huge_pages.hpp).
#include "megasim/core/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <limits>
#include <cstdlib>
#include <new>

namespace megasim {
namespace {

std::size_t mapped_bytes(std::size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

}  // namespace

void* allocate_zeroed(std::size_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max() - 2 * kHugePageBytes) throw std::bad_alloc();
  if (bytes < kHugePageMinBytes) {
    void* p = std::calloc(bytes == 0 ? 1 : bytes, 1);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  // Map one huge page more than needed and unmap the unaligned head and tail, so the block
  // starts on a 2 MiB boundary (a huge page needs an aligned virtual range).
  const std::size_t size = mapped_bytes(bytes);
  void* raw = mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const std::size_t head = aligned - base;
  if (head > 0) munmap(raw, head);
  const std::size_t tail = kHugePageBytes - head;
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  void* block = reinterpret_cast<void*>(aligned);
  madvise(block, size, MADV_HUGEPAGE);  // a hint: where THP is off this fails and nothing changes
  return block;
}

void free_zeroed(void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes < kHugePageMinBytes) {
    std::free(block);
    return;
  }
  munmap(block, mapped_bytes(bytes));
}

}  // namespace megasim
