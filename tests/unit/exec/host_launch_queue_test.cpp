// The GPU behind a kernel-by-kernel host after a sync, worked by hand.
#include <gtest/gtest.h>

#include "../../src/exec/host_launch_queue.hpp"

namespace megasim {
namespace {

TEST(HostLaunchQueueTextbook, HostAheadCostsOnlyTheFirstLaunch) {
  // A 100 us op, then ten 1 us kernels: the host (10 us a launch) gets ahead during the long op.
  std::vector<LaunchedOp> ops{{100e-6, 1, 10e-6}};
  for (int i = 0; i < 10; ++i) ops.push_back({1e-6, 1, 10e-6});
  EXPECT_NEAR(gpu_idle_behind_host_s(ops), 10e-6, 1e-12);
}

TEST(HostLaunchQueueTextbook, HostBehindShortKernels) {
  // Ten 1 us kernels at 10 us a launch: kernel i runs at 10 i us, the last ends at 101 us, of
  // which 10 us were work.
  const std::vector<LaunchedOp> ops(10, LaunchedOp{1e-6, 1, 10e-6});
  EXPECT_NEAR(gpu_idle_behind_host_s(ops), 91e-6, 1e-12);
}

TEST(HostLaunchQueueTextbook, AnOpOfManyLaunchesEndsAfterItsLastLaunch) {
  // One op of four 2 us kernels: starts at 10 us, its last kernel is launched at 40 us and runs
  // 2 us: 42 us, 8 of them work.
  EXPECT_NEAR(gpu_idle_behind_host_s({{8e-6, 4, 10e-6}}), 34e-6, 1e-12);
  // Without host cost the GPU never idles.
  EXPECT_EQ(gpu_idle_behind_host_s({{8e-6, 4, 0.0}, {1e-6, 1, 0.0}}), 0.0);
}

TEST(HostLaunchQueueTextbook, EachOpLaunchesAtItsOwnRate) {
  // Two 1 us kernels launched at 10 us, then three at 4 us (a plain PyTorch loop inside a
  // framework's module): launches end at 20 + 12 = 32 us, the last kernel at 33 us; 5 us work.
  EXPECT_NEAR(gpu_idle_behind_host_s({{2e-6, 2, 10e-6}, {3e-6, 3, 4e-6}}), 28e-6, 1e-12);
}

}  // namespace
}  // namespace megasim
