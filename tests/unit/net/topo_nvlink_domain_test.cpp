// Rack-scale NVLink: hosts and NVLink domains are separate (cluster.nvlink_domain_size).
#include <gtest/gtest.h>

#include "megasim/core/error.hpp"
#include "megasim/net/router.hpp"
#include "megasim/net/topology_builders.hpp"
#include "net/topo_test_clusters.hpp"

namespace megasim {
namespace {

using testing::nvl72_cluster;

TEST(TopoNvlinkDomain, OneNvswitchPerDomainAndNicsPerHost) {
  const Fabric f = build_fabric(nvl72_cluster(144));
  EXPECT_EQ(f.layout().num_nodes, 36);  // 4-GPU hosts
  EXPECT_EQ(f.layout().num_domains, 2);
  EXPECT_EQ(f.num_vertices_of(VertexKind::NvSwitch), 2u);
  EXPECT_EQ(f.num_vertices_of(VertexKind::Nic), 144u);  // one per GPU
  EXPECT_EQ(f.node_of_gpu(71), 17);
  EXPECT_EQ(f.domain_of_gpu(71), 0);
  EXPECT_EQ(f.domain_of_gpu(72), 1);
  // GPUs of different hosts in one domain share the domain's NVLink switch.
  EXPECT_EQ(f.link_dst(f.gpu_links(0).to_nvswitch), f.link_dst(f.gpu_links(71).to_nvswitch));
  EXPECT_NE(f.link_dst(f.gpu_links(0).to_nvswitch), f.link_dst(f.gpu_links(72).to_nvswitch));
  EXPECT_DOUBLE_EQ(f.link_capacity_Bps()[f.gpu_links(5).to_nvswitch], 900e9);
}

TEST(TopoNvlinkDomain, TrafficInsideADomainCrossesNoNic) {
  const Fabric f = build_fabric(nvl72_cluster(144));
  const Router r(f, Routing::Ecmp, 1);
  // GPU 0 (host 0) to GPU 70 (host 17): other host, same NVL72 rack: NVLink only.
  const auto in_rack = r.paths(0, 70, 0);
  ASSERT_EQ(in_rack.size(), 1u);
  EXPECT_EQ(in_rack[0].links, (LinkPath{f.gpu_links(0).to_nvswitch, f.gpu_links(70).from_nvswitch}));
  // GPU 0 to GPU 72 (next rack): through the NICs.
  const auto across = r.paths(0, 72, 0);
  ASSERT_EQ(across.size(), 1u);
  EXPECT_EQ(f.link_kind(across[0].links.front()), LinkKind::Pcie);
}

TEST(TopoNvlinkDomain, DomainMustBeWholeHosts) {
  ClusterSpec c = nvl72_cluster(144);
  c.nvlink_domain_size = 70;  // not a multiple of 4
  EXPECT_THROW(build_fabric(c), InputError);
}

TEST(TopoNvlinkDomain, DefaultDomainIsTheHost) {
  ClusterSpec c = testing::megascale_cluster(64);
  const Fabric f = build_fabric(c);
  EXPECT_EQ(f.layout().nvlink_domain_size, 8);
  EXPECT_EQ(f.num_vertices_of(VertexKind::NvSwitch), 8u);
}

}  // namespace
}  // namespace megasim
