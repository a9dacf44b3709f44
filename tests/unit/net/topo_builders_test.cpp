// Fabric builders: hand-derived switch and link counts, naming, placement, input errors.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "megasim/core/error.hpp"
#include "megasim/net/topology_builders.hpp"
#include "net/topo_test_clusters.hpp"

namespace megasim {
namespace {

using testing::megascale_cluster;
using testing::mini_clos;

// Physical links of each kind (each is two LinkIds; counted by the up direction).
std::map<LinkKind, std::size_t> count_links(const Fabric& f) {
  std::map<LinkKind, std::size_t> n;
  for (LinkId l = 0; l < f.num_links(); ++l) {
    if (f.link_is_up(l)) ++n[f.link_kind(l)];
  }
  return n;
}

// Number of links attached to a vertex (out directions = physical ports in use).
std::size_t ports(const Fabric& f, VertexKind kind, int index) {
  return f.out_links(f.vertex_of(kind, index)).size();
}

TEST(TopoBuilders, SmallestDivisorAtLeast) {
  EXPECT_EQ(smallest_divisor_at_least(32, 3), 4);
  EXPECT_EQ(smallest_divisor_at_least(32, 12), 16);
  EXPECT_EQ(smallest_divisor_at_least(32, 32), 32);
  EXPECT_EQ(smallest_divisor_at_least(32, 0), 1);
  EXPECT_EQ(smallest_divisor_at_least(7, 2), 7);
}

// Textbook, MegaScale at 12,288 GPUs: 1536 nodes / 64 servers per ToR set = 24 sets x 8
// rails = 192 ToRs. A pod = 32 agg down ports / 8 rails = 4 sets = 32 ToRs -> 6 pods; each
// ToR's 32 uplinks reach 32 aggs once (32*32/32 = 32 aggs per pod) -> 192 aggs. Spines per
// plane: 6 pods * 32 uplinks / 64 ports = 3 -> rounded to a divisor of 32 = 4, with 8 links
// per agg-spine pair; 32 planes * 4 = 128 spines.
TEST(TopoBuilders, MegaScale12288RailOptimizedClosTextbook) {
  const Fabric& f = testing::megascale_12288();
  const FabricLayout& lay = f.layout();
  EXPECT_EQ(lay.num_nodes, 1536);
  EXPECT_EQ(lay.tor_down_ports, 32);
  EXPECT_EQ(lay.tor_up_ports, 32);
  EXPECT_EQ(lay.nic_ports_per_tor, 64);
  EXPECT_EQ(lay.num_tor_sets, 24);
  EXPECT_EQ(f.num_tors(), 192);
  EXPECT_EQ(lay.tors_per_pod, 32);
  EXPECT_EQ(lay.num_pods, 6);
  EXPECT_EQ(lay.aggs_per_pod, 32);
  EXPECT_EQ(lay.tor_tier2_parallel_links, 1);
  EXPECT_EQ(f.num_aggs(), 192);
  EXPECT_EQ(lay.spines_per_group, 4);
  EXPECT_EQ(lay.agg_spine_parallel_links, 8);
  EXPECT_EQ(f.num_spines(), 128);

  const auto n = count_links(f);
  EXPECT_EQ(n.at(LinkKind::NvLink), 12288u);
  EXPECT_EQ(n.at(LinkKind::Pcie), 12288u);
  EXPECT_EQ(n.at(LinkKind::NicTor), 12288u);
  EXPECT_EQ(n.at(LinkKind::TorAgg), 192u * 32u);
  EXPECT_EQ(n.at(LinkKind::AggSpine), 192u * 32u);
  EXPECT_EQ(f.num_links(), 2u * (3u * 12288u + 2u * 6144u));
  EXPECT_EQ(f.num_vertices(), 12288u + 1536u + 12288u + 192u + 192u + 128u);

  // Port budgets: a ToR uses 64 NIC ports + 32 uplinks, an agg 32 + 32, a spine 6 pods * 8.
  EXPECT_EQ(ports(f, VertexKind::Tor, 191), 96u);
  EXPECT_EQ(ports(f, VertexKind::Agg, 100), 64u);
  EXPECT_EQ(ports(f, VertexKind::Spine, 127), 48u);
  EXPECT_EQ(ports(f, VertexKind::NvSwitch, 0), 8u);

  // Capacities per direction.
  const auto& cap = f.link_capacity_Bps();
  EXPECT_DOUBLE_EQ(cap[f.gpu_links(0).to_nvswitch], testing::kNvlinkBps);
  EXPECT_DOUBLE_EQ(cap[f.gpu_links(0).nic_to_tor], testing::kNicBps);
  EXPECT_DOUBLE_EQ(cap[f.gpu_links(0).to_nic], testing::kNicBps);  // PCIe unset -> NIC rate
}

// Placement: GPU 12*8+3 is node 12, rail 3, ToR set 0 -> ToR 3; node 100 is in set 1 ->
// ToR 8 + 3 = 11.
TEST(TopoBuilders, PlacementAndNames) {
  const Fabric& f = testing::megascale_12288();
  const int g = 12 * 8 + 3;
  EXPECT_EQ(f.node_of_gpu(g), 12);
  EXPECT_EQ(f.rail_of_gpu(g), 3);
  EXPECT_EQ(f.tor_of_gpu(g), 3);
  EXPECT_EQ(f.tor_of_gpu(100 * 8 + 3), 11);
  EXPECT_EQ(f.link_name(f.gpu_links(g).to_nvswitch), "node12.gpu3->nvswitch12");
  EXPECT_EQ(f.link_name(f.gpu_links(g).from_nic), "node12.nic3->node12.gpu3");
  EXPECT_EQ(f.link_name(f.gpu_links(g).nic_to_tor), "node12.nic3->tor3");
  EXPECT_EQ(f.link_kind(f.gpu_links(g).nic_to_tor), LinkKind::NicTor);
  EXPECT_TRUE(f.link_is_up(f.gpu_links(g).nic_to_tor));
  EXPECT_FALSE(f.link_is_up(f.gpu_links(g).tor_to_nic));
  EXPECT_EQ(Fabric::reverse(f.gpu_links(g).nic_to_tor), f.gpu_links(g).tor_to_nic);
  EXPECT_EQ(f.gpu_on_rail(12, 5), 12 * 8 + 5);
  // Latencies: the NIC's host cost on the sending side only; network hops per direction.
  EXPECT_DOUBLE_EQ(f.link_latency_s(f.gpu_links(g).to_nic), testing::kNicLatencyS);
  EXPECT_DOUBLE_EQ(f.link_latency_s(f.gpu_links(g).from_nic), 0.0);
  EXPECT_DOUBLE_EQ(f.link_latency_s(f.gpu_links(g).tor_to_nic), testing::kLinkLatencyS);
}

// Textbook, one ToR set (16 GPUs = 2 nodes): 8 rail ToRs; cross-rail needs aggregation:
// ceil(8 ToRs * 32 uplinks / 32 agg down ports) = 8 aggs, 32 / 8 = 4 parallel links per pair.
TEST(TopoBuilders, SmallClusterHasToRsAndAggsOnlyTextbook) {
  const Fabric f = build_fabric(megascale_cluster(16));
  EXPECT_EQ(f.num_tors(), 8);
  EXPECT_EQ(f.num_aggs(), 8);
  EXPECT_EQ(f.num_spines(), 0);
  EXPECT_EQ(f.layout().tor_tier2_parallel_links, 4);
  EXPECT_EQ(count_links(f).at(LinkKind::TorAgg), 8u * 32u);
  // Parallel links carry their index in the name.
  const VertexId tor0 = f.vertex_of(VertexKind::Tor, 0);
  std::set<std::string> names;
  for (LinkId l : f.out_links(tor0)) {
    if (f.link_kind(l) == LinkKind::TorAgg) names.insert(f.link_name(l));
  }
  EXPECT_EQ(names.size(), 32u);
  EXPECT_TRUE(names.count("tor0->agg0#1"));
}

// Textbook, 4096 GPUs: 512 nodes -> 8 sets -> 64 ToRs -> 2 pods, 64 aggs; spines per plane
// = ceil(2 * 32 / 64) = 1 with all 32 agg uplinks to it; 32 spines with 2 pods * 32 = 64
// ports each (full).
TEST(TopoBuilders, TwoPodsOneSpinePerPlaneTextbook) {
  const Fabric f = build_fabric(megascale_cluster(4096));
  EXPECT_EQ(f.layout().num_pods, 2);
  EXPECT_EQ(f.num_aggs(), 64);
  EXPECT_EQ(f.layout().spines_per_group, 1);
  EXPECT_EQ(f.layout().agg_spine_parallel_links, 32);
  EXPECT_EQ(f.num_spines(), 32);
  EXPECT_EQ(ports(f, VertexKind::Spine, 0), 64u);
}

TEST(TopoBuilders, MiniClosMatchesHandDerivation) {
  const Fabric f = build_fabric(mini_clos());
  EXPECT_EQ(f.num_tors(), 10);
  EXPECT_EQ(f.layout().num_pods, 3);
  EXPECT_EQ(f.num_aggs(), 12);
  EXPECT_EQ(f.num_spines(), 8);
  EXPECT_EQ(f.layout().agg_spine_parallel_links, 2);
}

// Textbook fat-tree, 2048 GPUs at 1:1: a leaf has 64 NIC ports / 8 NICs = 8 servers;
// 256 nodes -> 32 leaves; spines = divisor of 32 >= ceil(32*32/64) = 16, 2 links per pair.
TEST(TopoBuilders, FatTreeNonBlockingTextbook) {
  const Fabric f = build_fabric(megascale_cluster(2048, Topology::FatTree));
  EXPECT_EQ(f.layout().servers_per_tor, 8);
  EXPECT_EQ(f.num_tors(), 32);
  EXPECT_EQ(f.num_aggs(), 0);
  EXPECT_EQ(f.num_spines(), 16);
  EXPECT_EQ(f.layout().tor_tier2_parallel_links, 2);
  // All NICs of a server on one leaf.
  EXPECT_EQ(f.tor_of_gpu(8 * 9 + 0), 1);
  EXPECT_EQ(f.tor_of_gpu(8 * 9 + 7), 1);
  EXPECT_EQ(count_links(f).at(LinkKind::TorSpine), 32u * 32u);
}

// Textbook fat-tree at 3:1: 64 * 3/4 = 48 down ports (96 NIC ports -> 12 servers), 16 up;
// 264 nodes -> 22 leaves; spines = divisor of 16 >= ceil(22*16/64) = 6 -> 8, 2 links each.
TEST(TopoBuilders, FatTreeOversubscribedTextbook) {
  ClusterSpec c = megascale_cluster(264 * 8, Topology::FatTree);
  c.network.oversubscription = 3.0;
  const Fabric f = build_fabric(c);
  EXPECT_EQ(f.layout().tor_down_ports, 48);
  EXPECT_EQ(f.layout().tor_up_ports, 16);
  EXPECT_EQ(f.layout().servers_per_tor, 12);
  EXPECT_EQ(f.num_tors(), 22);
  EXPECT_EQ(f.num_spines(), 8);
}

// Textbook rail-only at 12,288 GPUs: 24 sets * 8 rails = 192 ToRs; per rail, spines = divisor
// of 32 >= ceil(24*32/64) = 12 -> 16 (2 links per pair); 8 rails * 16 = 128; no aggregation.
TEST(TopoBuilders, RailOnly12288Textbook) {
  const Fabric f = build_fabric(megascale_cluster(12288, Topology::RailOnly));
  EXPECT_EQ(f.num_tors(), 192);
  EXPECT_EQ(f.num_aggs(), 0);
  EXPECT_EQ(f.layout().spines_per_group, 16);
  EXPECT_EQ(f.num_spines(), 128);
  // No switch link joins two rails.
  for (LinkId l = 0; l < f.num_links(); ++l) {
    if (f.link_kind(l) != LinkKind::TorSpine || !f.link_is_up(l)) continue;
    const int tor = f.vertex_index(f.link_src(l));
    const int spine = f.vertex_index(f.link_dst(l));
    ASSERT_EQ(tor % 8, spine / 16) << f.link_name(l);
  }
}

TEST(TopoBuilders, SharedNics) {
  ClusterSpec c = megascale_cluster(16);
  c.network.nics_per_node = 4;
  const Fabric f = build_fabric(c);
  EXPECT_EQ(f.rail_of_gpu(5), 2);
  EXPECT_EQ(f.gpu_on_rail(1, 2), 8 + 4);
  EXPECT_EQ(f.gpu_links(4).nic_to_tor, f.gpu_links(5).nic_to_tor);
  EXPECT_NE(f.gpu_links(4).to_nic, f.gpu_links(5).to_nic);
}

void expect_input_error(const ClusterSpec& c, const std::string& path) {
  try {
    build_fabric(c);
    ADD_FAILURE() << "expected InputError at " << path;
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
  }
}

TEST(TopoBuilders, InputErrors) {
  ClusterSpec c = megascale_cluster(12);
  expect_input_error(c, "cluster.num_gpus");  // not a multiple of 8
  c = megascale_cluster(16);
  c.network.nic_bandwidth_Bps = 50e9;  // 400G NIC on a split 400G port
  expect_input_error(c, "cluster.network.nic_bandwidth");
  c = megascale_cluster(16);
  c.network.servers_per_tor = 65;
  expect_input_error(c, "cluster.network.servers_per_tor");
  c = megascale_cluster(16);
  c.network.oversubscription = 0.5;
  expect_input_error(c, "cluster.network.oversubscription");
  c = megascale_cluster(16);
  c.network.nics_per_node = 3;
  expect_input_error(c, "cluster.network.nics_per_node");
  c = megascale_cluster(16);
  c.gpu.nvlink_bandwidth_Bps = 0;
  expect_input_error(c, "cluster.gpu.nvlink_bandwidth");
  // A two-tier fat-tree of 64-port switches holds at most 64 leaves (4096 GPUs here).
  expect_input_error(megascale_cluster(12288, Topology::FatTree), "cluster.num_gpus");
}

// A job too big for its fabric names the bundled fabrics that hold it.
TEST(TopoBuilders, TooLargeNamesTheScaleFabrics) {
  ClusterSpec c = megascale_cluster(98304);
  c.network.split_port = false;
  c.network.nic_bandwidth_Bps = c.network.switch_port_bandwidth_Bps;
  c.network.servers_per_tor = 32;
  try {
    build_fabric(c);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "cluster.num_gpus");
    EXPECT_NE(std::string(e.what()).find("h100-400g-clos-r128"), std::string::npos) << e.what();
  }
  c.network.switch_radix = 128;  // three tiers of radix 128 hold it
  c.network.servers_per_tor = 64;
  EXPECT_EQ(build_fabric(c).num_gpus(), 98304);
}

}  // namespace
}  // namespace megasim
