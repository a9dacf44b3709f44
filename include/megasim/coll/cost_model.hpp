#pragma once
// Analytic collective cost: NCCL's own tuning model (latency + bytes / algorithm bandwidth,
// protocol and algorithm picked by minimum predicted time, as NCCL's tuner does), with the
// bus bandwidth taken from the transports the communicator actually crosses, each at its
// measured achieved fraction of line rate. Pure and cheap: the estimator and the planner call
// it millions of times.
//
// Sizes follow nccl-tests: all-reduce = buffer size; all-gather = total output; reduce-scatter
// = total input; all-to-all = per-rank buffer (sum over peers); send/recv = message size.
#include "megasim/coll/coll_types.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/specs.hpp"

namespace megasim {

struct CollEstimate {
  CollAlgo algo = CollAlgo::Ring;      // Ring or Tree (the one chosen)
  NcclProto proto = NcclProto::Simple;
  double latency_s = 0;                // NCCL latency term (incl. plateau factor)
  double algbw_Bps = 0;                // model algorithm bandwidth (bytes / (time - latency))
  double time_s = 0;
};

// Simple-protocol bus bandwidth of a group: the minimum over the transports a ring crosses of
// line rate x achieved fraction, aggregated over what the group uses (a node-spanning ring
// over 8 rails uses 8 NICs per node; one GPU per node uses one NIC).
double group_bus_bandwidth_Bps(const CollGroupShape& g, const ClusterSpec& cluster,
                               const NcclModel& m);
// Per-GPU NVLink and per-node network bandwidth at the achieved fractions.
double nvlink_effective_Bps(const ClusterSpec& cluster, const NcclModel& m);
double nic_effective_Bps(const ClusterSpec& cluster, const NcclModel& m);
// NICs of one NVLink domain a group with `ranks_per_node` GPUs there drives (>= 1; at most
// the domain's hosts' NICs).
int nics_used_per_node(int ranks_per_node, const ClusterSpec& cluster);
// NCCL's graph->latencyInter: propagation over the switch hops between two nodes' NICs
// (2 hops under one leaf / rail switch, 4 through the spine).
double inter_node_topology_latency_s(const CollGroupShape& g, const ClusterSpec& cluster);
// Channels NCCL would open for this group (catalog assumption; see nccl-2.21.json).
int default_channels(const CollGroupShape& g, const ClusterSpec& cluster, const NcclModel& m);

// Full estimate (chosen algorithm/protocol, latency, bandwidth). Tree applies to all-reduce
// only; asking for it (or Hierarchical) elsewhere falls back to Ring as NCCL does.
// Throws std::invalid_argument for an inconsistent shape or a negative size.
CollEstimate estimate_collective(CollOp op, double size_bytes, const CollGroupShape& g,
                                 const ClusterSpec& cluster, const NcclModel& m,
                                 CollAlgo algo = CollAlgo::Auto);
// Same with a forced protocol (the flow model uses it to match a chosen protocol).
CollEstimate estimate_collective_with(CollOp op, double size_bytes, const CollGroupShape& g,
                                      const ClusterSpec& cluster, const NcclModel& m,
                                      CollAlgo algo, NcclProto proto);

inline double collective_time_s(CollOp op, double size_bytes, const CollGroupShape& g,
                                const ClusterSpec& cluster, const NcclModel& m,
                                CollAlgo algo = CollAlgo::Auto) {
  return estimate_collective(op, size_bytes, g, cluster, m, algo).time_s;
}

}  // namespace megasim
