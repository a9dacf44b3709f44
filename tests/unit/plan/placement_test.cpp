#include "megasim/plan/placement.hpp"

#include <gtest/gtest.h>

#include <set>

#include "megasim/core/error.hpp"

namespace megasim {
namespace {

ClusterSpec cluster(std::int64_t gpus) {
  ClusterSpec c;
  c.num_gpus = gpus;
  c.gpus_per_node = 8;
  c.network.servers_per_tor = 64;
  return c;
}

ParallelSpec plan(int tp, int pp, int cp, PlacementOrder order) {
  ParallelSpec p;
  p.tensor_model_parallel_size = tp;
  p.pipeline_model_parallel_size = pp;
  p.context_parallel_size = cp;
  p.placement = order;
  return p;
}

// MegaScale 175B on 12,288 GPUs, DP first: TP 8 fills a node; the 192 DP replicas of one
// stage are nodes 0..191 (three ToR sets of 64 servers); stage 1 starts at GPU 8*192 = 1536,
// node 192, ToR set 3.
TEST(Placement, MegaScaleDpFirstTextbook) {
  const Placement pl(plan(8, 8, 1, PlacementOrder::DpFirst), cluster(12288));
  EXPECT_EQ(pl.dp(), 192);
  EXPECT_EQ(pl.rank_of({0, 0, 1, 0}), 8);
  EXPECT_EQ(pl.rank_of({0, 0, 0, 1}), 1536);
  EXPECT_EQ(pl.node_of_gpu(1536), 192);
  EXPECT_EQ(pl.tor_set_of_gpu(1536), 3);
  const auto dp = pl.dp_group(3);
  ASSERT_EQ(dp.size(), 192U);
  EXPECT_EQ(dp[1], 11);
  EXPECT_EQ(dp.back(), 3 + 8 * 191);
  std::set<int> tors;
  for (auto r : dp) tors.insert(pl.tor_set_of_gpu(static_cast<int>(r)));
  EXPECT_EQ(tors.size(), 3U);
  const auto pp = pl.pp_group(0);
  ASSERT_EQ(pp.size(), 8U);
  EXPECT_EQ(pp[7], 7 * 1536);
  const auto tp = pl.tp_group(13);
  EXPECT_EQ(tp.front(), 8);
  EXPECT_EQ(tp.back(), 15);
}

// PP first: one pipeline replica is 8 consecutive nodes; DP stride is 64 GPUs.
TEST(Placement, PpFirstTextbook) {
  const Placement pl(plan(8, 8, 1, PlacementOrder::PpFirst), cluster(512));
  EXPECT_EQ(pl.dp(), 8);
  EXPECT_EQ(pl.pp_group(0)[1], 8);
  EXPECT_EQ(pl.dp_group(0)[1], 64);
  EXPECT_EQ(pl.coord_of(64 + 8 + 2), (RankCoord{2, 0, 1, 1}));
}

TEST(Placement, CoordRoundTripWithContextParallel) {
  for (auto order : {PlacementOrder::DpFirst, PlacementOrder::PpFirst}) {
    const Placement pl(plan(2, 3, 2, order), cluster(96));
    EXPECT_EQ(pl.dp(), 8);
    std::set<std::int64_t> seen;
    for (std::int64_t r = 0; r < pl.world_size(); ++r) {
      EXPECT_EQ(pl.rank_of(pl.coord_of(r)), r);
      seen.insert(r);
    }
    EXPECT_EQ(seen.size(), 96U);
    // TP innermost: a TP pair shares a node.
    const auto tp = pl.tp_group(5);
    EXPECT_EQ(pl.node_of_gpu(static_cast<int>(tp[0])), pl.node_of_gpu(static_cast<int>(tp[1])));
  }
}

TEST(Placement, RejectsBadTiling) {
  EXPECT_THROW(Placement(plan(8, 3, 1, PlacementOrder::DpFirst), cluster(64)), InputError);
  EXPECT_THROW(Placement(plan(3, 1, 1, PlacementOrder::DpFirst), cluster(48)), InputError);
}

TEST(Placement, TableIsTruncated) {
  const Placement pl(plan(8, 8, 1, PlacementOrder::DpFirst), cluster(12288));
  const std::string t = render_placement_table(pl, 16);
  EXPECT_NE(t.find("ranks not shown"), std::string::npos);
  EXPECT_NE(t.find("12287"), std::string::npos);
  EXPECT_LT(t.size(), 4000U);
  const Placement small(plan(8, 1, 1, PlacementOrder::DpFirst), cluster(16));
  EXPECT_EQ(render_placement_table(small, 64).find("not shown"), std::string::npos);
}

}  // namespace
}  // namespace megasim
