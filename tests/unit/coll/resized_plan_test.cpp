// size_scale / resized_plan: a plan lowered at one size, scaled to another where NCCL's model
// keeps its algorithm, protocol and latency, must be what lowering at that size gives (wire
// bytes to rounding); anywhere the tuner's choice changes it must refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "megasim/coll/lowering.hpp"
#include "plan_testing.hpp"
#include "test_clusters.hpp"

namespace megasim {
namespace {

using testing::bundled_nccl_model;

// Resized plans carry the lowering's wire bytes to rounding.
void expect_same_flows(const CollectivePlan& a, const CollectivePlan& b) { testing::expect_same_plan(a, b, 1e-12); }

constexpr auto group = testing::group_request;

// Every pair of sizes from 4 KiB to 4 GiB, for every op and algorithm a DP group or a node's
// group uses: whatever size_scale accepts is exact, and it accepts the large-message pairs.
TEST(ResizedPlan, EqualsLoweringAtTheNewSize) {
  const ClusterSpec c = testing::dgx_h100(64);
  const NcclModel m = bundled_nccl_model();
  const struct {
    CollOp op;
    CollAlgo algo;
  } cases[] = {{CollOp::AllReduce, CollAlgo::Ring}, {CollOp::AllReduce, CollAlgo::Tree},
               {CollOp::AllReduce, CollAlgo::Auto}, {CollOp::ReduceScatter, CollAlgo::Auto},
               {CollOp::AllGather, CollAlgo::Auto}, {CollOp::AllToAll, CollAlgo::Auto}};
  int accepted = 0;
  int refused = 0;
  for (const auto& k : cases) {
    for (const auto& [first, stride, count] : {std::tuple{0, 4, 64}, std::tuple{0, 1, 8}, std::tuple{2, 8, 32}}) {
      for (double from_bytes = 4096; from_bytes <= 4.3e9; from_bytes *= 8) {
        const CollectiveRequest from = group(k.op, k.algo, from_bytes, first, stride, count);
        const CollectivePlan from_plan = lower_collective(from, c, m);
        for (double to_bytes = 4096 * 3; to_bytes <= 4.3e9; to_bytes *= 8) {
          const CollectiveRequest to = group(k.op, k.algo, to_bytes, first, stride, count);
          const auto resized = resized_plan(from_plan, from, to, c, m);
          if (!resized) {
            ++refused;
            continue;
          }
          ++accepted;
          expect_same_flows(*resized, lower_collective(to, c, m));
        }
      }
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 20);  // the small sizes use LL / LL128 and a different latency
}

// A DP step's gradient reduce-scatter and parameter all-gather ride the same ring (both
// Simple at these sizes over 64 ranks; below ~0.5 GB the model picks LL128).
TEST(ResizedPlan, ReduceScatterToAllGather) {
  const ClusterSpec c = testing::dgx_h100(64);
  const NcclModel m = bundled_nccl_model();
  const CollectiveRequest rs = group(CollOp::ReduceScatter, CollAlgo::Auto, 2e9, 1, 4, 64);
  const CollectiveRequest ag = group(CollOp::AllGather, CollAlgo::Auto, 1.5e9, 1, 4, 64);
  const auto resized = resized_plan(lower_collective(rs, c, m), rs, ag, c, m);
  ASSERT_TRUE(resized.has_value());
  expect_same_flows(*resized, lower_collective(ag, c, m));
}

// Another DP group of the step (shifted by a TP rank, a pipeline stage or both) with another
// bucket's op and size: shifted and resized in one step, as lowering it gives.
TEST(ResizedPlan, ShiftedAndResizedAtOnce) {
  const ClusterSpec c = testing::dgx_h100(64);
  const NcclModel m = bundled_nccl_model();
  const CollectiveRequest from = group(CollOp::ReduceScatter, CollAlgo::Auto, 2e9, 0, 4, 64);
  const CollectivePlan plan = lower_collective(from, c, m);
  for (const int first : {0, 1, 3, 256, 259}) {
    const CollectiveRequest to = group(CollOp::AllGather, CollAlgo::Auto, 1.5e9, first, 4, 64);
    const auto moved = resized_plan(plan, from, to, c, m);
    ASSERT_TRUE(moved.has_value()) << first;
    expect_same_flows(*moved, lower_collective(to, c, m));
  }
  // GPU 4 + 4 = 8 leaves its node while GPU 0 + 4 stays: no shift, whatever the size.
  EXPECT_FALSE(resized_plan(plan, from, group(CollOp::AllGather, CollAlgo::Auto, 1.5e9, 4, 4, 64), c, m).has_value());
}

TEST(ResizedPlan, RefusesWhatLowersDifferently) {
  const ClusterSpec c = testing::dgx_h100(64);
  const NcclModel m = bundled_nccl_model();
  const CollectiveRequest base = group(CollOp::AllReduce, CollAlgo::Ring, 2e9, 0, 4, 64);  // Simple
  const CollectivePlan plan = lower_collective(base, c, m);
  auto scales = [&](auto edit) {
    CollectiveRequest to = base;
    edit(to);
    return size_scale(plan, base, to, c, m).has_value();
  };
  EXPECT_TRUE(scales([](CollectiveRequest& r) { r.size_bytes = 4e9; }));
  EXPECT_FALSE(scales([](CollectiveRequest& r) { r.size_bytes = 0; }));
  EXPECT_FALSE(scales([](CollectiveRequest& r) { r.size_bytes = 256e6; }));  // LL128
  EXPECT_FALSE(scales([](CollectiveRequest& r) { r.size_bytes = 8192; }));  // LL
  EXPECT_FALSE(scales([](CollectiveRequest& r) { r.gpus.back() += 1; }));
  EXPECT_FALSE(scales([](CollectiveRequest& r) { r.algo = CollAlgo::Tree; }));
  EXPECT_FALSE(scales([](CollectiveRequest& r) { r.channels = 4; }));
  EXPECT_FALSE(scales([](CollectiveRequest& r) { r.op = CollOp::AllGather; }));  // all-reduce moves twice
  const CollectiveRequest hier = group(CollOp::AllReduce, CollAlgo::Hierarchical, 256e6, 0, 4, 64);
  CollectiveRequest hier_to = hier;
  hier_to.size_bytes = 1e9;
  EXPECT_FALSE(size_scale(lower_collective(hier, c, m), hier, hier_to, c, m).has_value());
  CollectiveRequest p2p;
  p2p.op = CollOp::SendRecv;
  p2p.size_bytes = 1e6;
  p2p.gpus = {0, 8};
  CollectiveRequest p2p_to = p2p;
  p2p_to.size_bytes = 2e6;
  EXPECT_FALSE(size_scale(lower_collective(p2p, c, m), p2p, p2p_to, c, m).has_value());
}

}  // namespace
}  // namespace megasim
