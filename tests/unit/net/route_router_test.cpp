// Router: reachability, path validity, ECMP determinism, spray exactness, rail-only relay.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>

#include "megasim/net/router.hpp"
#include "megasim/net/topology_builders.hpp"
#include "net/topo_test_clusters.hpp"

namespace megasim {
namespace {

using testing::megascale_cluster;
using testing::mini_clos;

// A path is valid when consecutive links are adjacent, it runs from the source GPU to the
// destination GPU, and from the first PCIe hop on it never goes up after going down
// (up-down / valley-free). Only a rail-only relay may precede that, and only over NVLink.
void expect_valid(const Fabric& f, int src, int dst, const LinkPath& p) {
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(f.link_src(p.front()), f.vertex_of(VertexKind::Gpu, src));
  EXPECT_EQ(f.link_dst(p.back()), f.vertex_of(VertexKind::Gpu, dst));
  bool network = false, went_down = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i > 0) {
      ASSERT_EQ(f.link_src(p[i]), f.link_dst(p[i - 1])) << "gap at hop " << i;
    }
    if (f.link_kind(p[i]) == LinkKind::Pcie) network = true;
    if (!network) {
      ASSERT_EQ(f.link_kind(p[i]), LinkKind::NvLink);
      continue;
    }
    if (f.link_is_up(p[i])) {
      ASSERT_FALSE(went_down) << "valley at hop " << i << ": " << f.link_name(p[i]);
    } else {
      went_down = true;
    }
  }
}

void expect_all_pairs_routed(const ClusterSpec& c, Routing policy) {
  const Fabric f = build_fabric(c);
  const Router r(f, policy, 7);
  for (int s = 0; s < f.num_gpus(); ++s) {
    for (int d = 0; d < f.num_gpus(); ++d) {
      if (s == d) continue;
      const auto paths = r.paths(s, d, 0);
      ASSERT_FALSE(paths.empty());
      double total = 0;
      for (const WeightedPath& p : paths) {
        expect_valid(f, s, d, p.links);
        EXPECT_DOUBLE_EQ(p.weight, paths.front().weight);  // equal weights
        total += p.weight;
      }
      EXPECT_NEAR(total, 1.0, 1e-12);
    }
  }
}

TEST(RouteRouter, EveryPairRoutedMiniClos) {
  for (Routing p : {Routing::Ecmp, Routing::IdealSpray, Routing::SinglePath}) {
    expect_all_pairs_routed(mini_clos(), p);
  }
}

TEST(RouteRouter, EveryPairRoutedFatTreeAndRailOnly) {
  for (Topology t : {Topology::FatTree, Topology::RailOnly}) {
    for (Routing p : {Routing::Ecmp, Routing::IdealSpray}) expect_all_pairs_routed(mini_clos(t), p);
  }
}

TEST(RouteRouter, IntraNodeAndSameTor) {
  const Fabric f = build_fabric(megascale_cluster(16));
  const Router r(f, Routing::Ecmp, 1);
  const auto intra = r.paths(1, 6, 0);
  ASSERT_EQ(intra.size(), 1u);
  EXPECT_EQ(intra[0].links, (LinkPath{f.gpu_links(1).to_nvswitch, f.gpu_links(6).from_nvswitch}));
  EXPECT_DOUBLE_EQ(intra[0].latency_s, 0.0);
  // Same rail, same ToR set: GPU -> NIC -> ToR -> NIC -> GPU; latency = NIC + 2 hops.
  const auto same_tor = r.paths(2, 8 + 2, 0);
  ASSERT_EQ(same_tor.size(), 1u);
  EXPECT_EQ(same_tor[0].links.size(), 4u);
  EXPECT_DOUBLE_EQ(same_tor[0].latency_s, testing::kNicLatencyS + 2 * testing::kLinkLatencyS);
  EXPECT_EQ(r.paths(3, 3, 0).front().links.size(), 0u);
}

// direct_path returns exactly the route paths() takes when it is switch-free (same NVLink
// domain, or same ToR), and nothing when the route crosses a switch-to-switch link.
TEST(RouteRouter, DirectPathMatchesPaths) {
  const Fabric f = build_fabric(megascale_cluster(1024));  // 128 nodes, 64 per ToR set
  const Router r(f, Routing::Ecmp, 1);
  std::array<LinkId, 4> d{};
  int n = 0;
  for (const auto& [src, dst] : std::vector<std::pair<int, int>>{{1, 6}, {2, 8 + 2}, {3, 63 * 8 + 3}}) {
    ASSERT_TRUE(r.direct_path(src, dst, d, n)) << src << "->" << dst;
    const LinkPath direct(d.begin(), d.begin() + n);
    EXPECT_EQ(direct, r.paths(src, dst, 0).front().links) << src << "->" << dst;
  }
  EXPECT_FALSE(r.direct_path(0, 64 * 8, d, n));  // the next ToR set: through an aggregation switch
  EXPECT_FALSE(r.direct_path(0, 8 + 1, d, n));   // another rail: another ToR
  EXPECT_FALSE(r.direct_path(5, 5, d, n));
}

// Textbook, MegaScale 12,288: GPU 0 (pod 0) to GPU 12287 (ToR set 23, pod 5) crosses
// ToR -> agg -> spine -> agg -> ToR: 4 switch hops, 8 links, latency = NIC + 6 hops.
// Ideal spray: 32 aggs * 32 agg uplinks = 1024 equal paths of weight 1/1024; each spine->agg
// link carries 1/1024, each agg->ToR link at the destination 1/32.
TEST(RouteRouter, CrossPodPathsAndSprayExactnessTextbook) {
  const Fabric& f = testing::megascale_12288();
  const Router& ecmp = testing::megascale_12288_ecmp();
  EXPECT_EQ(ecmp.tor_distance(f.tor_of_gpu(0), f.tor_of_gpu(12287)), 4);
  const auto p = ecmp.paths(0, 12287, 0);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].links.size(), 8u);
  EXPECT_NEAR(p[0].latency_s, testing::kNicLatencyS + 6 * testing::kLinkLatencyS, 1e-15);
  expect_valid(f, 0, 12287, p[0].links);

  const Router spray(f, Routing::IdealSpray, 1);
  const auto sp = spray.paths(0, 12287, 0);
  ASSERT_EQ(sp.size(), 1024u);
  std::map<LinkId, double> from_paths;
  for (const WeightedPath& w : sp) {
    EXPECT_DOUBLE_EQ(w.weight, 1.0 / 1024.0);
    for (LinkId l : w.links) from_paths[l] += w.weight;
  }
  const auto shares = spray.link_shares(0, 12287, 0);
  ASSERT_EQ(shares.size(), from_paths.size());
  std::map<LinkKind, double> max_share;
  for (const LinkShare& s : shares) {
    EXPECT_NEAR(from_paths.at(s.link), s.fraction, 1e-12) << f.link_name(s.link);
    max_share[f.link_kind(s.link)] = std::max(max_share[f.link_kind(s.link)], s.fraction);
  }
  EXPECT_DOUBLE_EQ(max_share[LinkKind::AggSpine], 1.0 / 1024.0);
  EXPECT_DOUBLE_EQ(max_share[LinkKind::TorAgg], 1.0 / 32.0);
  EXPECT_DOUBLE_EQ(max_share[LinkKind::NicTor], 1.0);
}

TEST(RouteRouter, SprayPathsMatchExactSplitEverywhereMiniClos) {
  const Fabric f = build_fabric(mini_clos());
  const Router spray(f, Routing::IdealSpray, 3);
  for (int s = 0; s < f.num_gpus(); ++s) {
    for (int d = 0; d < f.num_gpus(); ++d) {
      std::map<LinkId, double> from_paths;
      for (const WeightedPath& w : spray.paths(s, d, 0)) {
        for (LinkId l : w.links) from_paths[l] += w.weight;
      }
      for (const LinkShare& sh : spray.link_shares(s, d, 0)) {
        ASSERT_NEAR(from_paths[sh.link], sh.fraction, 1e-12) << s << "->" << d;
      }
    }
  }
}

// ECMP is a pure function of (src, dst, qp, seed): same seed, same choice; another seed or
// queue pair changes some choices; the single-path policy always takes the lowest next hop.
TEST(RouteRouter, EcmpDeterminismAndSeedSensitivity) {
  const Fabric f = build_fabric(megascale_cluster(4096));
  const Router a(f, Routing::Ecmp, 1), a2(f, Routing::Ecmp, 1), b(f, Routing::Ecmp, 2);
  const Router single(f, Routing::SinglePath, 1);
  int differ_seed = 0, differ_qp = 0;
  std::map<LinkId, int> first_hop_use;
  for (int i = 0; i < 200; ++i) {
    const int src = i * 8;          // rail 0 of nodes 0..199 (pod 0)
    const int dst = 4095 - 7 - i * 8;  // rail 0 of the last nodes (pod 1)
    const LinkPath pa = a.paths(src, dst, 0).front().links;
    EXPECT_EQ(pa, a2.paths(src, dst, 0).front().links);
    differ_seed += pa != b.paths(src, dst, 0).front().links;
    differ_qp += pa != a.paths(src, dst, 1).front().links;
    first_hop_use[pa[2]] += 1;  // the ToR uplink (after GPU->NIC, NIC->ToR)
    const LinkPath ps = single.paths(src, dst, 0).front().links;
    EXPECT_EQ(ps, single.paths(src, dst, 5).front().links);
    EXPECT_EQ(ps[2], single.next_hops(f.link_src(ps[2]), f.tor_of_gpu(dst)).front());
  }
  EXPECT_GT(differ_seed, 100);
  EXPECT_GT(differ_qp, 100);
  // 200 flows hashed over 32 ToR uplinks use most of them.
  EXPECT_GT(first_hop_use.size(), 25u);
}

TEST(RouteRouter, NextHopsCountsEqualCostPorts) {
  const Fabric& f = testing::megascale_12288();
  const Router& r = testing::megascale_12288_ecmp();
  const int dst_tor = f.tor_of_gpu(12287);
  EXPECT_EQ(r.next_hops(f.vertex_of(VertexKind::Tor, 0), dst_tor).size(), 32u);
  EXPECT_EQ(r.next_hops(f.vertex_of(VertexKind::Agg, 0), dst_tor).size(), 32u);  // to spines
  EXPECT_EQ(r.next_hops(f.vertex_of(VertexKind::Spine, 0), dst_tor).size(), 8u);  // parallel
  EXPECT_EQ(r.next_hops(f.vertex_of(VertexKind::Tor, dst_tor), dst_tor).size(), 0u);
}

// Rail-only: GPU 1 (node 0, rail 1) to GPU 8*70+5 (node 70, rail 5, another ToR set) first
// crosses NVLink to node 0's rail-5 GPU (GPU 5), then rail 5's network.
TEST(RouteRouter, RailOnlyCrossRailGoesThroughNvlinkFirst) {
  const Fabric f = build_fabric(megascale_cluster(1024, Topology::RailOnly));
  const Router r(f, Routing::Ecmp, 1);
  const int dst = 8 * 70 + 5;
  const auto p = r.paths(1, dst, 0);
  ASSERT_EQ(p.size(), 1u);
  const LinkPath& l = p[0].links;
  ASSERT_GE(l.size(), 4u);
  EXPECT_EQ(l[0], f.gpu_links(1).to_nvswitch);
  EXPECT_EQ(l[1], f.gpu_links(5).from_nvswitch);
  EXPECT_EQ(l[2], f.gpu_links(5).to_nic);
  EXPECT_EQ(f.tor_of_gpu(5), f.rail_of_gpu(dst));  // ToR set 0, rail 5
  for (std::size_t i = 3; i < l.size(); ++i) EXPECT_NE(f.link_kind(l[i]), LinkKind::NvLink);
  expect_valid(f, 1, dst, l);
}

}  // namespace
}  // namespace megasim
