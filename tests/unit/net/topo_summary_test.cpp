// Topology summary (bisection, oversubscription, text) and GraphViz output.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "megasim/core/error.hpp"
#include "megasim/net/topology_builders.hpp"
#include "megasim/net/topology_summary.hpp"
#include "net/topo_test_clusters.hpp"

namespace megasim {
namespace {

using testing::megascale_cluster;

// Textbook: at 1:1 every tier carries the NIC capacity, 12,288 * 25 GB/s = 307.2 TB/s upward,
// so bisection = 307.2 / 2 = 153.6 TB/s and both oversubscriptions are 1.
TEST(TopoSummary, MegaScaleBisectionTextbook) {
  const TopologySummary s = summarize_topology(testing::megascale_12288());
  EXPECT_EQ(s.num_tors, 192u);
  EXPECT_EQ(s.num_aggs, 192u);
  EXPECT_EQ(s.num_spines, 128u);
  EXPECT_EQ(s.num_nvswitches, 1536u);
  EXPECT_DOUBLE_EQ(s.bisection_Bps, 153.6e12);
  EXPECT_DOUBLE_EQ(s.tor_oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(s.agg_oversubscription, 1.0);
  ASSERT_EQ(s.links.size(), 5u);
  EXPECT_EQ(s.links[3].kind, LinkKind::TorAgg);
  EXPECT_EQ(s.links[3].physical_links, 6144u);
  EXPECT_DOUBLE_EQ(s.links[3].capacity_Bps, 50e9);

  std::ostringstream text;
  print_topology_summary(s, text);
  EXPECT_NE(text.str().find("switches: tor 192, agg 192, spine 128"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("oversubscription: tor 1.00:1, agg 1.00:1"), std::string::npos)
      << text.str();
}

// Textbook, fat-tree 3:1 with 264 full servers on 22 leaves: NIC capacity 264*8*25 GB/s =
// 52.8 TB/s, leaf uplinks 22*16*50 GB/s = 17.6 TB/s -> oversubscription 3.0, bisection
// min(52.8, 17.6) / 2 = 8.8 TB/s.
TEST(TopoSummary, FatTreeOversubscriptionTextbook) {
  ClusterSpec c = megascale_cluster(264 * 8, Topology::FatTree);
  c.network.oversubscription = 3.0;
  const TopologySummary s = summarize_topology(build_fabric(c));
  EXPECT_DOUBLE_EQ(s.tor_oversubscription, 3.0);
  EXPECT_DOUBLE_EQ(s.agg_oversubscription, 0.0);
  EXPECT_DOUBLE_EQ(s.bisection_Bps, 8.8e12);
}

// Textbook, one node: a balanced cut splits its 8 GPUs 4/4 across the NVSwitch:
// 4 * 300 GB/s = 1.2 TB/s.
TEST(TopoSummary, SingleNodeBisectionIsNvlinkTextbook) {
  const TopologySummary s = summarize_topology(build_fabric(megascale_cluster(8)));
  EXPECT_DOUBLE_EQ(s.bisection_Bps, 1.2e12);
}

// Textbook, 2 servers under one ToR set: the ToR's design ratio is still 64 NIC ports *
// 25 GB/s : 32 uplinks * 50 GB/s = 1:1 (not the 2 populated ports); no spine tier -> agg 0.
// Bisection = 16 NICs * 25 GB/s / 2 = 200 GB/s.
TEST(TopoSummary, PartlyPopulatedTorReportsDesignRatioTextbook) {
  const TopologySummary s = summarize_topology(build_fabric(megascale_cluster(16)));
  EXPECT_DOUBLE_EQ(s.tor_oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(s.agg_oversubscription, 0.0);
  EXPECT_DOUBLE_EQ(s.bisection_Bps, 200e9);
}

TEST(TopoSummary, DotForSmallCluster) {
  const Fabric f = build_fabric(megascale_cluster(16));
  std::ostringstream dot;
  write_dot(f, dot);
  const std::string s = dot.str();
  EXPECT_EQ(s.rfind("digraph", 0), 0u);
  EXPECT_NE(s.find("label=\"node1.gpu7\""), std::string::npos);
  EXPECT_NE(s.find("label=\"tor-agg 50.0 GB/s\""), std::string::npos) << s.substr(0, 400);
  // One edge per physical link: 16 NVLink + 16 PCIe + 16 NIC + 256 ToR-agg.
  std::size_t edges = 0;
  for (std::size_t pos = s.find("->"); pos != std::string::npos; pos = s.find("->", pos + 2)) {
    ++edges;
  }
  EXPECT_EQ(edges, 16u + 16u + 16u + 256u);
}

TEST(TopoSummary, DotRefusesLargeClusters) {
  const Fabric f = build_fabric(megascale_cluster(1024));
  std::ostringstream dot;
  try {
    write_dot(f, dot);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "--dot");
  }
}

}  // namespace
}  // namespace megasim
