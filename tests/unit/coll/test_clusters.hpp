#pragma once
// Clusters for the collective tests, built directly from datasheet figures
// (shared/reference/hardware-and-nccl.md 6.1) so the tests do not depend on the config catalog.
#include <cstdint>
#include <string>

#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/specs.hpp"

namespace megasim::testing {

// DGX A100: NVLink3 300 GB/s per direction, 8 x HDR 200 Gb/s (25 GB/s) NICs.
inline ClusterSpec dgx_a100(std::int64_t nodes) {
  ClusterSpec c;
  c.name = "test-dgx-a100";
  c.gpu.name = "a100-sxm4-80gb";
  c.gpu.nvlink_bandwidth_Bps = 300e9;
  c.gpu.architecture_sm = 80;
  c.num_gpus = nodes * 8;
  c.gpus_per_node = 8;
  c.network.topology = Topology::RailOptimizedClos;
  c.network.nic_bandwidth_Bps = 25e9;
  c.network.nics_per_node = 8;
  c.network.switch_radix = 64;
  c.network.switch_port_bandwidth_Bps = 50e9;
  c.network.servers_per_tor = 32;
  c.network.link_latency_s = 0.5e-6;
  c.network.nic_latency_s = 1e-6;
  return c;
}

// DGX H100: NVLink4 450 GB/s per direction, 8 x NDR 400 Gb/s (50 GB/s) NICs.
inline ClusterSpec dgx_h100(std::int64_t nodes) {
  ClusterSpec c = dgx_a100(nodes);
  c.name = "test-dgx-h100";
  c.gpu.name = "h100-sxm5-80gb";
  c.gpu.nvlink_bandwidth_Bps = 450e9;
  c.gpu.architecture_sm = 90;
  c.network.nic_bandwidth_Bps = 50e9;
  c.network.switch_port_bandwidth_Bps = 50e9;  // one NDR NIC per 400G switch port
  c.network.split_port = false;
  return c;
}

// GB200 NVL72-like: 4-GPU hosts (one 400G NIC per GPU), 72-GPU NVLink 5 domains at 900 GB/s.
inline ClusterSpec nvl72(std::int64_t racks) {
  ClusterSpec c = dgx_h100(racks * 18);
  c.name = "test-nvl72";
  c.gpu.nvlink_bandwidth_Bps = 900e9;
  c.gpu.architecture_sm = 100;
  c.num_gpus = racks * 72;
  c.gpus_per_node = 4;
  c.nvlink_domain_size = 72;
  c.network.nics_per_node = 4;
  return c;
}

inline NcclModel bundled_nccl_model() {
  return load_default_nccl_model(std::string(MEGASIM_SOURCE_DIR) + "/configs");
}

}  // namespace megasim::testing
