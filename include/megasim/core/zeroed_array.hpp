#pragma once
// A fixed-size array of a trivially copyable T that starts all-zero without touching its
// memory: the OS zero-fills fresh pages on first use, so entries never written cost nothing up
// front. The flow network keeps several per-link arrays for a fabric's every link direction (a
// million at 98,304 GPUs) of which a folded run touches a few thousand; zeroing them eagerly
// was a fifth of that run (perf, docs/benchmarks.md). Arrays of 1 MiB and more are mapped
// directly and offered to the kernel as transparent huge pages (core/huge_pages.hpp): the
// touched entries of a per-link array are spread over the whole array, and on the reference
// machine a 4 KiB page fault costs ~7 us, so one 2 MiB fault instead of up to 512 is the
// cheaper way to get them.
// All-zero bytes must mean "zero" for T (integers, IEEE doubles, structs of them).
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include "megasim/core/huge_pages.hpp"

namespace megasim {

template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  ZeroedArray() = default;
  explicit ZeroedArray(std::size_t n) : data_(static_cast<T*>(allocate_zeroed(bytes_of(n)))), size_(n) {}
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ZeroedArray(ZeroedArray&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~ZeroedArray() { free_zeroed(data_, size_ * sizeof(T)); }
  static std::size_t bytes_of(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_alloc();
    return n * sizeof(T);
  }

  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace megasim
