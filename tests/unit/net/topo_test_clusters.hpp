#pragma once
// Cluster specs shared by the topo and route tests. Figures follow MegaScale §3.6 and the
// A100 datasheet (reference/megascale.md, hardware-and-nccl.md); latencies are round test
// values, not catalog figures.
#include <cstdint>

#include "megasim/config/specs.hpp"
#include "megasim/net/router.hpp"
#include "megasim/net/topology_builders.hpp"

namespace megasim::testing {

inline constexpr double kNvlinkBps = 300e9;  // A100 NVLink3, per direction
inline constexpr double kNicBps = 25e9;      // 200 Gb/s
inline constexpr double kPortBps = 50e9;     // 400 Gb/s Tomahawk 4 port
inline constexpr double kLinkLatencyS = 1e-6;
inline constexpr double kNicLatencyS = 2e-6;

// MegaScale-like: 8 GPUs and 8 x 200G NICs per server, 64-port 400G switches at 1:1,
// split ToR downlinks, 64 servers per ToR set.
inline ClusterSpec megascale_cluster(std::int64_t num_gpus,
                                     Topology topology = Topology::RailOptimizedClos) {
  ClusterSpec c;
  c.name = "test";
  c.gpu.name = "a100";
  c.gpu.nvlink_bandwidth_Bps = kNvlinkBps;
  c.num_gpus = num_gpus;
  c.gpus_per_node = 8;
  c.network.topology = topology;
  c.network.nic_bandwidth_Bps = kNicBps;
  c.network.nics_per_node = 8;
  c.network.switch_radix = 64;
  c.network.switch_port_bandwidth_Bps = kPortBps;
  c.network.oversubscription = 1.0;
  c.network.servers_per_tor = 64;
  c.network.split_port = true;
  c.network.link_latency_s = kLinkLatencyS;
  c.network.nic_latency_s = kNicLatencyS;
  return c;
}

// A miniature three-tier Clos: radix-8 switches, 2 GPUs and 2 NICs per node, 2 servers per
// ToR set. Hand-derived: ToR 4 down (8 NIC ports) / 4 up; agg 4 down / 4 up; a pod holds
// 4 / 2 rails = 2 ToR sets = 4 ToRs; 10 nodes -> 5 sets -> 10 ToRs -> 3 pods; aggs per pod
// = smallest divisor of 4 >= ceil(4*4/4) = 4 (1 link per ToR-agg pair); spines per plane =
// divisor of 4 >= ceil(3*4/8) = 2 (2 links per agg-spine pair); 4 planes -> 8 spines.
inline ClusterSpec mini_clos(Topology topology = Topology::RailOptimizedClos) {
  ClusterSpec c = megascale_cluster(20, topology);
  c.gpus_per_node = 2;
  c.network.nics_per_node = 2;
  c.network.switch_radix = 8;
  c.network.servers_per_tor = 2;
  return c;
}

// The 12,288-GPU MegaScale fabric and an ECMP router on it (seed 1), built once per test
// program: both are immutable, and building them under ASan dominates the suite's time.
inline const Fabric& megascale_12288() {
  static const Fabric fabric = build_fabric(megascale_cluster(12288));
  return fabric;
}
inline const Router& megascale_12288_ecmp() {
  static const Router router(megascale_12288(), Routing::Ecmp, 1);
  return router;
}

// Rack-scale NVLink (GB200 NVL72-like): 4-GPU hosts with one 400G NIC per GPU on 4 rails,
// 72 GPUs per NVLink domain at 900 GB/s per GPU, 64-port switches, 32 hosts per ToR set.
inline ClusterSpec nvl72_cluster(std::int64_t num_gpus) {
  ClusterSpec c = megascale_cluster(num_gpus);
  c.gpu.nvlink_bandwidth_Bps = 900e9;
  c.gpu.architecture_sm = 100;
  c.gpus_per_node = 4;
  c.nvlink_domain_size = 72;
  c.network.nics_per_node = 4;
  c.network.nic_bandwidth_Bps = 50e9;
  c.network.switch_port_bandwidth_Bps = 50e9;
  c.network.split_port = false;
  c.network.servers_per_tor = 32;
  return c;
}

}  // namespace megasim::testing
