#pragma once
// Shared by the tests of plan reuse (shifted_plan, size_scale / resized_plan): a DP-like group
// request and a flow-by-flow comparison of two plans.
#include <gtest/gtest.h>

#include "megasim/coll/lowering.hpp"

namespace megasim::testing {

// GPUs `first`, `first + stride`, ... (two per 8-GPU node with stride 4), `bytes` in total.
inline CollectiveRequest group_request(CollOp op, CollAlgo algo, double bytes, int first, int stride, int count) {
  CollectiveRequest r;
  r.op = op;
  r.algo = algo;
  r.size_bytes = bytes;
  for (int i = 0; i < count; ++i) r.gpus.push_back(first + i * stride);
  return r;
}

// Same lowering, shape, estimate, phases and flows; wire bytes within `wire_rel_tol` (0: equal).
inline void expect_same_plan(const CollectivePlan& a, const CollectivePlan& b, double wire_rel_tol = 0) {
  EXPECT_EQ(a.lowered_as, b.lowered_as);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.shape.ranks, b.shape.ranks);
  EXPECT_EQ(a.shape.nodes, b.shape.nodes);
  EXPECT_EQ(a.shape.same_rail, b.shape.same_rail);
  EXPECT_EQ(a.estimate.time_s, b.estimate.time_s);
  ASSERT_EQ(a.phases.size(), b.phases.size());
  for (std::size_t p = 0; p < a.phases.size(); ++p) {
    EXPECT_EQ(a.phases[p].latency_s, b.phases[p].latency_s);
    ASSERT_EQ(a.phases[p].flows.size(), b.phases[p].flows.size());
    for (std::size_t i = 0; i < a.phases[p].flows.size(); ++i) {
      const FlowStep& x = a.phases[p].flows[i];
      const FlowStep& y = b.phases[p].flows[i];
      EXPECT_EQ(x.src_gpu, y.src_gpu);
      EXPECT_EQ(x.dst_gpu, y.dst_gpu);
      EXPECT_EQ(x.queue_pair, y.queue_pair);
      EXPECT_EQ(x.multiplicity, y.multiplicity);
      if (wire_rel_tol == 0) {
        EXPECT_EQ(x.wire_bytes, y.wire_bytes);
      } else {
        EXPECT_NEAR(x.wire_bytes, y.wire_bytes, wire_rel_tol * y.wire_bytes);
      }
    }
  }
}

}  // namespace megasim::testing
