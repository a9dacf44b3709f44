#pragma once
// Pure lowering of one collective into flow steps, following NCCL's structure:
//  * Ring (per channel): NCCL's pipelined ring is modelled as long-lived concurrent flows
//    between ring neighbours, each carrying its whole share ((n-1)/n * S / C per rank for
//    all-gather / reduce-scatter, 2(n-1)/n * S / C for all-reduce). Across nodes, channel c
//    enters and leaves every node on the same rail (rail-matched NICs, as NCCL's ring search
//    does), so the node's GPUs form an NVLink cycle whose last hop hands the data to the rail
//    GPU (PXN) and one inter-node flow per node goes out on that rail.
//  * Tree (all-reduce, NCCL's double binary tree across nodes, chain inside a node): two trees
//    of S/2 each, every tree edge carrying S/2 up (reduce) and S/2 down (broadcast).
//  * Hierarchical all-reduce: NVLink reduce-scatter, one ring per rail across nodes on S/r,
//    NVLink all-gather, as three phases.
//  * All-to-all: n(n-1) pairwise flows of S/n; one across nodes onto another rail takes
//    NCCL's default PXN route (NVLink to a member of the group on the source's node whose NIC is
//    on the destination's rail, then that rail), both hops at once. Send/recv: one flow (gpus[0] -> gpus[1]) or,
//    with scatter_gather = t > 1, t rail-parallel flows of S/t followed by an NVLink
//    all-gather on the receiving node (Megatron / MegaScale scatter-gather).
// Each phase carries the NCCL-model latency of its part; flows pay it before taking
// bandwidth. Each inter-node edge is split over the connection's queue pairs
// (NCCL_IB_QPS_PER_CONNECTION); distinct (channel, qp) give distinct ECMP hashes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "megasim/coll/cost_model.hpp"
#include "megasim/config/specs.hpp"

namespace megasim {

struct CollectiveRequest {
  CollOp op = CollOp::AllReduce;
  CollAlgo algo = CollAlgo::Auto;
  double size_bytes = 0;       // nccl-tests convention (see cost_model.hpp)
  std::vector<int> gpus;       // global GPU ids in ring order
  int channels = 0;            // 0: NCCL's default for the group (default_channels)
  std::string tag;             // names the engine task and flows
  int scatter_gather = 1;      // send/recv only: split over this many rails
};

struct FlowStep {
  int src_gpu = 0;
  int dst_gpu = 0;
  double wire_bytes = 0;       // payload / (transport fraction x protocol factor)
  std::uint64_t queue_pair = 0;
  int multiplicity = 1;        // identical flows merged (same endpoints, qp and bytes)
};

struct CollPhase {
  std::vector<FlowStep> flows;
  double latency_s = 0;
};

struct CollectivePlan {
  CollGroupShape shape;
  CollEstimate estimate;        // analytic estimate of the whole collective (chosen algo/proto)
  CollAlgo lowered_as = CollAlgo::Ring;
  int channels = 1;
  std::vector<CollPhase> phases;  // run one after the other
};

// Shape of a GPU list: nodes = distinct nodes; ranks_per_node = the most GPUs on one node
// (groups are uniform in practice); same_rail when one GPU per node, all on one local index.
CollGroupShape shape_of(const std::vector<int>& gpus, const ClusterSpec& cluster);

// The analytic estimate of a request exactly as lower_collective() records it, without
// building flows (send/recv uses the pair's shape and adds the scatter-gather all-gather;
// hierarchical sums its three phases).
CollEstimate estimate_request(const CollectiveRequest& req, const ClusterSpec& cluster,
                              const NcclModel& model);

// Throws InputError("gpus", ...) for an empty list, duplicates or ids outside the cluster,
// std::invalid_argument for an inconsistent request (negative size, send/recv without 2 GPUs).
CollectivePlan lower_collective(const CollectiveRequest& req, const ClusterSpec& cluster,
                                const NcclModel& model);

// One send of an all-to-all-v: `bytes` of payload from one GPU to another.
struct PointToPoint {
  int src_gpu = 0;
  int dst_gpu = 0;
  double bytes = 0;
};

// An all-to-all-v among the GPUs its sends name (the communicator): every send at once, in one
// phase of latency `latency_s`, with the transport fractions (NCCL's all-to-all factor on the
// network included: pass without_all_to_all_derating(model) for traffic NCCL does not carry),
// PXN relays and queue-pair split of lower_collective's all-to-all (NCCL's grouped send/recv,
// Simple protocol: the payloads of MoE token exchanges are megabytes). Sends to self and empty
// sends move nothing. Throws InputError("gpus", ...) for a GPU outside the cluster.
CollectivePlan lower_all_to_all_v(const std::vector<PointToPoint>& sends, const ClusterSpec& cluster,
                                  const NcclModel& model, double latency_s);

// Lowering is equivariant under a shift: when `to` asks for what `from` asked (op, algorithm,
// size, channels) and each of its GPUs is the GPU at the same position of `from` plus one
// offset that moves every member by the same number of NVLink domains (so the node blocks,
// their order and every member's position in its block stay), the plan of `to` is `from`'s
// plan with every flow's endpoints shifted: the same flows in the same order, with the same
// bytes and queue pairs. Returns that plan, or nullopt when `to` is no such shift (then lower
// it). Send/recv is never shifted (its rail-parallel flows leave the group). A step's DP groups
// are shifts of one another (one per TP rank and pipeline stage): this lowers them once.
std::optional<CollectivePlan> shifted_plan(const CollectivePlan& from_plan, const CollectiveRequest& from,
                                           const CollectiveRequest& to, const ClusterSpec& cluster);

// Lowering is linear in the size while the tuner's choices hold: when `to` asks for what `from`
// asked over the same GPUs (same algorithm request and channels; the op the same, or reduce-
// scatter for all-gather and back, whose rings carry the same share over the same edges) and
// NCCL's model picks the same algorithm, protocol and latency at both sizes, every flow of
// `to`'s plan carries `from`'s wire bytes times one factor, with the same endpoints, queue
// pairs, multiplicities and phase latencies. Returns that factor, or nullopt (then lower `to`):
// send/recv, hierarchical all-reduce (three phases tuned apart) and empty sizes never scale.
// A step's DP buckets of one group differ only in size: this prepares each group once.
std::optional<double> size_scale(const CollectivePlan& from_plan, const CollectiveRequest& from,
                                 const CollectiveRequest& to, const ClusterSpec& cluster, const NcclModel& model);
// `from_plan` resized (size_scale's factor on every flow, `to`'s estimate) and shifted onto
// `to`'s GPUs (as shifted_plan), in one copy; nullopt where either does not hold.
std::optional<CollectivePlan> resized_plan(const CollectivePlan& from_plan, const CollectiveRequest& from,
                                           const CollectiveRequest& to, const ClusterSpec& cluster,
                                           const NcclModel& model);

}  // namespace megasim
