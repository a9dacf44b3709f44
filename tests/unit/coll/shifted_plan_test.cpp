// shifted_plan: lowering a group shifted by a whole number of GPUs that keeps the NVLink-domain
// partition must give exactly what lowering the shifted group gives; any other group is refused.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "megasim/coll/lowering.hpp"
#include "plan_testing.hpp"
#include "test_clusters.hpp"

namespace megasim {
namespace {

using testing::bundled_nccl_model;
using testing::expect_same_plan;

// A DP-like group of 256 MB (two GPUs per 8-GPU node with stride 4).
CollectiveRequest group(CollOp op, CollAlgo algo, int first, int stride, int count) {
  return testing::group_request(op, algo, 256e6, first, stride, count);
}

TEST(ShiftedPlanTextbook, EqualsLoweringTheShiftedGroup) {
  const ClusterSpec c = testing::dgx_h100(64);
  const NcclModel m = bundled_nccl_model();
  const struct {
    CollOp op;
    CollAlgo algo;
  } cases[] = {{CollOp::AllReduce, CollAlgo::Ring},         {CollOp::AllReduce, CollAlgo::Tree},
               {CollOp::AllReduce, CollAlgo::Hierarchical}, {CollOp::ReduceScatter, CollAlgo::Auto},
               {CollOp::AllGather, CollAlgo::Auto},         {CollOp::AllToAll, CollAlgo::Auto}};
  for (const auto& k : cases) {
    const CollectiveRequest base = group(k.op, k.algo, 0, 4, 64);  // 32 nodes, two GPUs each
    const CollectivePlan base_plan = lower_collective(base, c, m);
    for (int delta : {1, 3, 256, 259}) {  // another TP rank; another pipeline stage; both
      CollectiveRequest to = base;
      for (int& g : to.gpus) g += delta;
      const auto shifted = shifted_plan(base_plan, base, to, c);
      ASSERT_TRUE(shifted.has_value()) << "delta " << delta;
      expect_same_plan(*shifted, lower_collective(to, c, m));
    }
  }
}

TEST(ShiftedPlanTextbook, RefusesWhatIsNoPartitionPreservingShift) {
  const ClusterSpec c = testing::dgx_h100(64);
  const NcclModel m = bundled_nccl_model();
  const CollectiveRequest base = group(CollOp::AllReduce, CollAlgo::Ring, 0, 4, 64);
  const CollectivePlan plan = lower_collective(base, c, m);
  auto shifted = [&](auto edit) {
    CollectiveRequest to = base;
    edit(to);
    return shifted_plan(plan, base, to, c).has_value();
  };
  // GPU 4 + 4 = 8 wraps into the next node while GPU 0 + 4 stays: the node blocks change.
  EXPECT_FALSE(shifted([](CollectiveRequest& r) { for (int& g : r.gpus) g += 4; }));
  EXPECT_FALSE(shifted([](CollectiveRequest& r) { r.gpus.back() += 8; }));          // not one offset
  EXPECT_FALSE(shifted([](CollectiveRequest& r) { for (int& g : r.gpus) g += 300; })); // past the cluster
  EXPECT_FALSE(shifted([](CollectiveRequest& r) { r.size_bytes *= 2; }));
  EXPECT_FALSE(shifted([](CollectiveRequest& r) { r.algo = CollAlgo::Tree; }));
  EXPECT_FALSE(shifted([](CollectiveRequest& r) { r.gpus.pop_back(); }));
  CollectiveRequest p2p;
  p2p.op = CollOp::SendRecv;
  p2p.size_bytes = 1e6;
  p2p.gpus = {0, 8};
  CollectiveRequest p2p_to = p2p;
  p2p_to.gpus = {1, 9};
  EXPECT_FALSE(shifted_plan(lower_collective(p2p, c, m), p2p, p2p_to, c).has_value());
}

// NVL72: a shift by 72 GPUs moves every member one rack; by 4 it stays inside the rack.
TEST(ShiftedPlanTextbook, RackScaleDomains) {
  const ClusterSpec c = testing::nvl72(4);
  const NcclModel m = bundled_nccl_model();
  const CollectiveRequest base = group(CollOp::AllReduce, CollAlgo::Auto, 0, 36, 6);  // 2 per rack
  const CollectivePlan plan = lower_collective(base, c, m);
  for (int delta : {4, 35, 72}) {
    CollectiveRequest to = base;
    for (int& g : to.gpus) g += delta;
    const auto shifted = shifted_plan(plan, base, to, c);
    ASSERT_TRUE(shifted.has_value()) << delta;
    expect_same_plan(*shifted, lower_collective(to, c, m));
  }
  CollectiveRequest wraps = base;
  for (int& g : wraps.gpus) g += 36;  // 36 + 36 = 72: the second member leaves its rack
  EXPECT_FALSE(shifted_plan(plan, base, wraps, c).has_value());
}

}  // namespace
}  // namespace megasim
