#include "megasim/workload/task_graph.hpp"

#include <gtest/gtest.h>

namespace megasim {
namespace {

StepCosts costs(int p, int v, std::int64_t m, std::int64_t dp) {
  StepCosts c;
  c.pp = p;
  c.vpp = v;
  c.micro_batches = m;
  c.dp = dp;
  c.chunks.assign(static_cast<std::size_t>(p), std::vector<ChunkCosts>(static_cast<std::size_t>(v)));
  for (auto& st : c.chunks)
    for (auto& ch : st) {
      ch.fwd_compute_s = 1;
      ch.bwd_compute_s = 2;
      ch.param_bytes = 100;
    }
  c.p2p_bytes = 10;
  c.dp_grad_reduce_bytes = 1000;
  c.dp_param_gather_bytes = 500;
  return c;
}

std::size_t count(const StepGraph& g, TaskKind k) {
  std::size_t n = 0;
  for (const auto& t : g.tasks) n += t.kind == k;
  return n;
}

// p = 4, v = 2, m = 4: 2*p*v*m = 64 passes; transfers cross every virtual boundary except
// none (p > 1): forward (p v - 1) * m = 28, backward the same.
TEST(TaskGraph, CountsTextbook) {
  const StepGraph g = build_step_graph(costs(4, 2, 4, 2), WorkloadOptions{});
  EXPECT_EQ(count(g, TaskKind::Forward), 32U);
  EXPECT_EQ(count(g, TaskKind::Backward), 32U);
  EXPECT_EQ(count(g, TaskKind::PpTransfer), 56U);
  // ZeRO-1 without overlap: one reduce-scatter and one all-gather per stage.
  EXPECT_EQ(count(g, TaskKind::DpReduceScatter), 4U);
  EXPECT_EQ(count(g, TaskKind::DpAllGather), 4U);
  for (const auto& ord : g.compute_order) EXPECT_EQ(ord.size(), 1U + 16U + 2U);
}

TEST(TaskGraph, DpOverlapSplitsPerChunk) {
  WorkloadOptions o;
  o.zero_stage = 2;
  o.dp_overlap = true;
  const StepGraph g = build_step_graph(costs(2, 3, 4, 4), o);
  EXPECT_EQ(count(g, TaskKind::DpReduceScatter), 6U);
  EXPECT_EQ(count(g, TaskKind::DpAllGather), 6U);
  double rs = 0;
  for (const auto& t : g.tasks)
    if (t.kind == TaskKind::DpReduceScatter && t.stage == 0) rs += t.bytes;
  EXPECT_DOUBLE_EQ(rs, 1000.0);
  // All-gathers are issued first on the DP stream, in chunk order.
  const auto& d0 = g.dp_order[0];
  EXPECT_EQ(g.tasks[d0[0]].kind, TaskKind::DpAllGather);
  EXPECT_EQ(g.tasks[d0[0]].chunk, 0);
  EXPECT_EQ(g.tasks[d0[2]].chunk, 2);
}

TEST(TaskGraph, DdpAllReduceAndNoDpForSingleReplica) {
  WorkloadOptions o;
  o.zero_stage = 0;
  EXPECT_EQ(count(build_step_graph(costs(2, 1, 2, 8), o), TaskKind::DpAllReduce), 2U);
  EXPECT_EQ(count(build_step_graph(costs(2, 1, 2, 1), o), TaskKind::DpAllReduce), 0U);
}

TEST(TaskGraph, BlockingSendAddsSenderDependency) {
  WorkloadOptions o;
  o.pp_overlap = false;
  const StepGraph blocking = build_step_graph(costs(2, 1, 2, 1), o);
  o.pp_overlap = true;
  const StepGraph async = build_step_graph(costs(2, 1, 2, 1), o);
  std::size_t deps_b = 0, deps_a = 0;
  for (const auto& t : blocking.tasks) deps_b += t.deps.size();
  for (const auto& t : async.tasks) deps_a += t.deps.size();
  EXPECT_GT(deps_b, deps_a);
}

}  // namespace
}  // namespace megasim
