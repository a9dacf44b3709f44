#pragma once
// NCCL's tuning-model constants and the achieved fraction of line rate per transport, loaded
// from configs/nccl/*.json by megasim/catalogs/nccl_model_reader.hpp. Pure data; the formulas
// that use it live in cost_model.hpp.
//
// All latencies are stored in seconds and bandwidths in bytes/s (the catalog writes µs and
// GB/s as NCCL's tuning.cc does and the loader converts).
#include <array>
#include <string>
#include <vector>

#include "megasim/coll/coll_types.hpp"

namespace megasim {

// Index helpers for the per-architecture and per-node-count tables (NCCL's compCapIndex and
// the N1 / N2 / N4+ column).
enum class GpuArchClass { Volta = 0, Ampere = 1, Hopper = 2 };
GpuArchClass arch_class_of_sm(int architecture_sm);
inline int node_column(int nodes) { return nodes <= 1 ? 0 : (nodes == 2 ? 1 : 2); }

using ProtoTable = std::array<double, kNumProtos>;     // indexed by NcclProto
using ArchNodeTable = std::array<std::array<double, 3>, 3>;  // [arch][node column]

// One transport's measured efficiency: busbw achieved by NCCL (Simple, large messages) over the
// line rate per direction. Applied identically to every run that uses the transport.
struct TransportEfficiency {
  std::string name;
  double line_Bps = 0;
  double achieved_busbw_Bps = 0;
  double fraction() const { return achieved_busbw_Bps / line_Bps; }
};

struct NcclModel {
  std::string name;
  // Latency tables (seconds), [algo: 0 tree, 1 ring][proto].
  std::array<ProtoTable, 2> base_lat_s{};
  std::array<ProtoTable, 2> hw_lat_nvlink_s{};
  std::array<ProtoTable, 2> hw_lat_pci_s{};
  std::array<ProtoTable, 2> hw_lat_net_s{};
  double net_overhead_s = 1e-6;          // per ring step on multi-node runs (Intel host)
  double net_overhead_simple_factor = 3;
  double ring_plateau_factor = 1.4;      // Ampere and newer
  double ring_plateau_factor_pre_ampere = 1.9;
  double ring_plateau_min_bytes = 64;    // per channel per rank

  // Bandwidth caps (bytes/s).
  std::array<double, 3> ll_max_single_node_Bps{};  // [arch]
  std::array<double, 3> ll_max_multi_node_Bps{};   // [node column] (column 0 unused)
  ArchNodeTable ring_ll128_per_channel_Bps{};
  ArchNodeTable tree_per_channel_Bps{};
  ArchNodeTable tree_ll128_per_channel_Bps{};

  // Protocol refinements relative to the Simple bus bandwidth.
  double ring_ll_factor = 0.5;
  double ring_ll128_factor = 0.92;
  double ring_ll128_factor_one_rank_per_node = 0.7;
  double tree_factor = 0.92;
  double tree_ll_factor = 1.0 / 3.8;
  double tree_ll128_factor_single_node = 7.0 / 9.0;
  double tree_ll128_factor_multi_node = 120.0 / 128.0;
  std::array<std::vector<double>, kNumProtos> tree_correction{};  // by log2(bytes/64)

  // Channel counts assumed for the per-channel caps and for lowering onto flows.
  int channels_single_node = 16;
  int channels_per_nic = 2;
  int channels_max = 32;  // NCCL's MAXCHANNELS: an NVL72 domain's 72 NICs do not open 144

  // Transport efficiencies: NVLink by GPU architecture, network by NIC line rate.
  std::vector<std::pair<int, TransportEfficiency>> nvlink;  // (min architecture_sm, eff)
  std::vector<TransportEfficiency> network;                 // chosen by nearest line rate
  // NCCL's all-to-all (grouped send/recv, every peer at once) across nodes reaches this fraction
  // of the network figure above, which ring collectives reach: the NIC-bound bytes of an
  // all-to-all move at network_fraction x this. NVLink traffic is not derated.
  double all_to_all_network_factor = 1.0;

  // Lookups.
  double nvlink_fraction(int architecture_sm) const;
  double network_fraction(double nic_line_Bps) const;
  double tree_correction_factor(NcclProto p, double size_bytes) const;
};

// The same model with all-to-all traffic at the transports' collective rate: for exchanges that
// do not go through NCCL's all-to-all (DeepEP and HybridEP drive the NICs from the GPU).
NcclModel without_all_to_all_derating(NcclModel m);

}  // namespace megasim
