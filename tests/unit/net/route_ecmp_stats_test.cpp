// ECMP collision statistics against balls-into-bins and the ideal-spray baseline.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "megasim/core/rng.hpp"
#include "megasim/net/ecmp_stats.hpp"
#include "megasim/net/topology_builders.hpp"
#include "net/topo_test_clusters.hpp"

namespace megasim {
namespace {

using testing::megascale_cluster;

// 2,048 GPUs on a non-blocking fat-tree: 32 leaves of 64 GPUs, 32 uplinks each (16 spines,
// 2 parallel links per pair).
Fabric fat_tree_2048() { return build_fabric(megascale_cluster(2048, Topology::FatTree)); }

const UplinkTierStats& tier(const EcmpStats& s, LinkKind kind) {
  for (const UplinkTierStats& t : s.tiers) {
    if (t.kind == kind) return t;
  }
  throw std::logic_error("tier missing");
}

TEST(RouteEcmpStats, BinomialCdfTextbook) {
  // Bin(2, 1/2): P(0) = 1/4, P(<=1) = 3/4.
  EXPECT_NEAR(binomial_cdf(2, 0.5, 0), 0.25, 1e-12);
  EXPECT_NEAR(binomial_cdf(2, 0.5, 1), 0.75, 1e-12);
  EXPECT_DOUBLE_EQ(binomial_cdf(2, 0.5, 2), 1.0);
  // Large n stays finite: Bin(100000, 1/32) has mean 3125; P(X <= 3125) is about 1/2.
  EXPECT_NEAR(binomial_cdf(100000, 1.0 / 32, 3125), 0.5, 0.02);
}

// Random permutation traffic: at each leaf the n_s flows leaving it fall on its k = 32 uplinks
// like balls into bins, so the idle fraction is about (1 - 1/k)^n ~ e^{-n/k} (n ~ 62 -> ~0.14)
// and the mean load is n/k. The realised statistics must match the expectations.
TEST(RouteEcmpStats, RandomPermutationMatchesBallsIntoBins) {
  const Fabric f = fat_tree_2048();
  const Router ecmp(f, Routing::Ecmp, 11);
  std::vector<int> perm(2048);
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(2024);
  for (std::size_t i = perm.size() - 1; i > 0; --i) {
    std::swap(perm[i], perm[static_cast<std::size_t>(rng.below(i + 1))]);
  }
  std::vector<FlowKey> flows;
  for (int s = 0; s < 2048; ++s) flows.push_back({s, perm[static_cast<std::size_t>(s)], 0});
  const EcmpStats st = ecmp_collision_stats(ecmp, flows);
  const UplinkTierStats& t = tier(st, LinkKind::TorSpine);
  EXPECT_EQ(t.num_links, 32u * 32u);
  EXPECT_NEAR(t.mean_load, t.total_load / 1024.0, 1e-12);
  // About 2048 * 31/32 flows leave their leaf.
  EXPECT_NEAR(t.total_load, 2048.0 * 31.0 / 32.0, 60.0);
  EXPECT_NEAR(t.expected_idle_fraction, std::exp(-t.mean_load), 0.02);
  EXPECT_NEAR(t.idle_fraction, t.expected_idle_fraction, 0.04);
  EXPECT_NEAR(t.max_load, t.expected_max_load, 2.0);
  EXPECT_GT(t.max_load, 2.0 * t.mean_load);  // collisions: hot uplinks well above the mean
  EXPECT_GE(t.p99_load, t.mean_load);
  EXPECT_LE(t.p99_load, t.max_load);
  // The spray baseline spreads the same flows evenly over each leaf's uplinks.
  EXPECT_NEAR(t.spray_mean_load, t.mean_load, 1e-9);
  EXPECT_LT(t.spray_max_load, t.max_load);
}

// Leaf-shift traffic (GPU i -> i + 64) on 512 GPUs (8 leaves of 64 GPUs, 32 uplinks each):
// every leaf sends exactly 64 flows off-leaf. Ideal spray puts 64/32 = 2 flows on every
// uplink, so max == mean == 2: collisions vanish.
TEST(RouteEcmpStats, IdealSprayHasNoCollisions) {
  const Fabric f = build_fabric(megascale_cluster(512, Topology::FatTree));
  std::vector<FlowKey> flows;
  for (int s = 0; s < 512; ++s) flows.push_back({s, (s + 64) % 512, 0});
  const EcmpStats spray = ecmp_collision_stats(Router(f, Routing::IdealSpray, 1), flows);
  const UplinkTierStats& t = tier(spray, LinkKind::TorSpine);
  EXPECT_NEAR(t.mean_load, 2.0, 1e-9);
  EXPECT_NEAR(t.max_load, t.mean_load, 1e-9);
  EXPECT_DOUBLE_EQ(t.idle_fraction, 0.0);

  const EcmpStats ecmp = ecmp_collision_stats(Router(f, Routing::Ecmp, 1), flows);
  const UplinkTierStats& e = tier(ecmp, LinkKind::TorSpine);
  EXPECT_NEAR(e.mean_load, 2.0, 1e-9);
  EXPECT_GT(e.max_load, 2.0);
  EXPECT_NEAR(e.spray_max_load, 2.0, 1e-9);
  // Balls into bins, n = 64 per leaf into k = 32: idle fraction (31/32)^64 = 0.131.
  EXPECT_NEAR(e.expected_idle_fraction, std::pow(31.0 / 32.0, 64.0), 1e-12);
}

// Textbook: find (deterministically) two flows from leaf 0 to leaf 1 whose hashes pick the
// same leaf uplink; alone in the fabric, that uplink carries 2 flows, every other uplink 0,
// and spray spreads the same 2 flows as 2/32 per uplink of leaf 0.
TEST(RouteEcmpStats, TwoFlowsHashedOntoOneUplinkTextbook) {
  const Fabric f = fat_tree_2048();
  const Router ecmp(f, Routing::Ecmp, 5);
  const auto uplink = [&](int s, int d) { return ecmp.paths(s, d, 0).front().links[2]; };
  int a = -1, b = -1;
  for (int i = 0; i < 64 && a < 0; ++i) {
    for (int j = i + 1; j < 64; ++j) {
      if (uplink(i, 64 + i) == uplink(j, 64 + j)) {
        a = i;
        b = j;
        break;
      }
    }
  }
  ASSERT_GE(a, 0) << "64 flows on 32 uplinks must collide (pigeonhole)";
  const EcmpStats st = ecmp_collision_stats(ecmp, {{a, 64 + a, 0}, {b, 64 + b, 0}});
  const UplinkTierStats& t = tier(st, LinkKind::TorSpine);
  EXPECT_DOUBLE_EQ(st.link_load[uplink(a, 64 + a)], 2.0);
  EXPECT_DOUBLE_EQ(t.max_load, 2.0);
  EXPECT_DOUBLE_EQ(t.total_load, 2.0);
  EXPECT_DOUBLE_EQ(t.spray_max_load, 2.0 / 32.0);
}

// Three tiers: in the MegaScale Clos, flows from rail 0 of pod 0 to rail 0 of pod 1 cross both tiers.
TEST(RouteEcmpStats, ThreeTierTiersReported) {
  const Fabric f = build_fabric(megascale_cluster(4096));
  const Router ecmp(f, Routing::Ecmp, 1);
  std::vector<FlowKey> flows;
  for (int i = 0; i < 64; ++i) flows.push_back({i * 8, 2048 + i * 8, 0});
  const EcmpStats st = ecmp_collision_stats(ecmp, flows);
  ASSERT_EQ(st.tiers.size(), 2u);
  const UplinkTierStats& ta = tier(st, LinkKind::TorAgg);
  const UplinkTierStats& as = tier(st, LinkKind::AggSpine);
  EXPECT_DOUBLE_EQ(ta.total_load, 64.0);
  EXPECT_DOUBLE_EQ(as.total_load, 64.0);
  EXPECT_EQ(ta.num_links, 64u * 32u);
  EXPECT_EQ(as.num_links, 64u * 32u);
  // All 64 flows start at ToR 0: 64 balls into its 32 uplinks (other ToRs idle).
  EXPECT_GE(ta.max_load, 2.0);
  EXPECT_GT(ta.expected_max_load, 2.0);
}

}  // namespace
}  // namespace megasim
