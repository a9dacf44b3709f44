// allocate_zeroed / ZeroedArray / BigVector: zero until written, writable to the last byte,
// large blocks 2 MiB-aligned (what a transparent huge page needs), every size freed cleanly
// (the ASan build checks the frees of calloc'd blocks; a mapped block's rounded-up tail and its
// munmap size are beyond ASan's view), sizes whose byte count would wrap refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "megasim/core/huge_pages.hpp"
#include "megasim/core/zeroed_array.hpp"

namespace megasim {
namespace {

TEST(HugePages, BlocksReadZeroAndAreWritable) {
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, kHugePageMinBytes - 1,
                                  kHugePageMinBytes, kHugePageBytes, 3 * kHugePageBytes + 17}) {
    auto* p = static_cast<unsigned char*>(allocate_zeroed(bytes));
    ASSERT_NE(p, nullptr);
    const std::size_t n = bytes == 0 ? 1 : bytes;
    EXPECT_EQ(p[0], 0) << bytes;
    EXPECT_EQ(p[n - 1], 0) << bytes;
    EXPECT_EQ(p[n / 2], 0) << bytes;
    std::memset(p, 0xab, n);
    EXPECT_EQ(p[n - 1], 0xab);
    if (bytes >= kHugePageMinBytes) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kHugePageBytes, 0u) << bytes;
    }
    free_zeroed(p, bytes);
  }
  free_zeroed(nullptr, kHugePageBytes);  // a no-op, as free(nullptr)
  EXPECT_THROW(allocate_zeroed(std::numeric_limits<std::size_t>::max()), std::bad_alloc);
  EXPECT_THROW(ZeroedArray<double>(std::numeric_limits<std::size_t>::max() / 8 + 2), std::bad_alloc);
  EXPECT_THROW(HugePageAllocator<double>().allocate(std::numeric_limits<std::size_t>::max() / 4), std::bad_array_new_length);
}

TEST(HugePages, ZeroedArrayAndBigVector) {
  ZeroedArray<double> a(1 << 20);  // 8 MiB: mapped
  EXPECT_EQ(a[0], 0.0);
  EXPECT_EQ(a[(1 << 20) - 1], 0.0);
  a[12345] = 2.5;
  ZeroedArray<double> b = std::move(a);
  EXPECT_EQ(b[12345], 2.5);
  EXPECT_EQ(b.size(), std::size_t{1} << 20);

  BigVector<int> v;
  for (int i = 0; i < 1'000'000; ++i) v.push_back(i);  // grows through small and mapped buffers
  EXPECT_EQ(v[999'999], 999'999);
  BigVector<int> w(v.begin(), v.begin() + 10);
  EXPECT_EQ(w.back(), 9);
  v.clear();
  v.shrink_to_fit();
  EXPECT_TRUE(v.empty());
}

}  // namespace
}  // namespace megasim
