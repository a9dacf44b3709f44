#pragma once
// The stage-layout pass: one layer's (and the embedding's and LM head's) pass times spread
// over the pipeline stages and model chunks, each chunk with its compute, exposed TP/CP time,
// parameter bytes and DP buckets.
#include <vector>

#include "cost_context.hpp"
#include "megasim/exec/step_costs.hpp"
#include "tp_overlap.hpp"

namespace megasim {

// One micro-batch's pass times of one kind of layer (LayerKind: dense or MoE, sliding or full).
struct KindPasses {
  LayerKind kind;
  PassTimes fwd, bwd;  // backward includes the recompute
};

// One micro-batch's pass times of the pieces a chunk is made of.
struct LayerPasses {
  PassTimes layer_fwd, layer_bwd;  // the first layer's kind (every layer of a dense model)
  std::vector<KindPasses> kinds;   // every kind of layer the model has, the first layer's first
  PassTimes embedding_fwd, embedding_bwd;
  PassTimes head_fwd, head_bwd;  // LM head and loss
  PassTimes mtp_projection_fwd, mtp_projection_bwd;  // one MTP module's block before its layer
};
LayerPasses time_layer_passes(const Context& c);

// Megatron-Core's merged 1F1B step (overlap_moe_expert_parallel_comm) for one layer: sets each
// pass's ep_merged_exposed_s, its EP exchanges beyond the compute of their own phase.
void merge_ep_phases(const Context& c, PassTimes& f, PassTimes& b);

// Under the merged step: what one merged pair waits at its start for its two pipeline receives
// (chunk_costs.cpp), from a chunk's summed backward of `layers` layers.
double merged_pair_receive_wait_s(const Context& c, const PassTimes& b, int layers);

// EP traffic left on a pass's critical path once the host's launch slack has taken what it
// can: where the host, not the GPU, bounds a pass and nothing makes the host wait (padded
// capacity: no dropless token-count sync), Megatron-Core issues the all-to-all asynchronously
// and keeps launching, so the exchange runs on the stream while the host is still behind, and
// the pass takes max(host, kernels + exchange), not host + exchange. A pass with a host wait
// has no slack: host_wait_idle_s already runs its collectives in the launch queue.
double after_host_slack_s(double exposed_s, const PassTimes& t);

// The critical-path times of a forward and a backward pass (compute, exposed TP after overlap,
// exposed CP) as a chunk records them; layout fields are left to the caller.
ChunkCosts pass_costs(const PassTimes& f, const PassTimes& b, const TpOverlapConfig& ov);
// The same with the MoE dispatch/combine exposure under the job's MoE overlap settings.
ChunkCosts pass_costs(const Context& c, const PassTimes& f, const PassTimes& b, const TpOverlapConfig& ov);

// [stage][chunk] costs of the job's pipeline layout.
std::vector<std::vector<ChunkCosts>> stage_chunk_costs(const Context& c, const LayerPasses& passes,
                                                       const TpOverlapConfig& ov);

// 16-bit weights, as ZeRO all-gathers them.
inline constexpr double kWeightBytesPerParam = 2.0;

}  // namespace megasim
