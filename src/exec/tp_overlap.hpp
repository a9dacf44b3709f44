#pragma once
// Tensor-parallel communication and how much of it overlap hides (MegaScale §3.2, Fig. 3;
// Transformer Engine's userbuffers).
//
// Collectives priced one by one beside their own GEMMs (PassTimes::async_*: Megatron's
// asynchronous backward collectives, and every collective under Transformer Engine, whose
// method per collective is one of the three formulas below) are priced where the op list is
// timed; their exposed part is added here either way.
//
// Without overlap every TP collective sits on the critical path. With MegaScale's overlap
// (tp_overlap_scope = ffn) the FFN's all-gather and reduce-scatter are fused into its parallel
// linears and the GEMM is split into `chunks` pieces pipelined with the communication on a
// second stream: the first communication chunk cannot hide (nothing to compute yet), the rest
// hides behind GEMM chunks while there is GEMM left, and the GEMM slows by `slowdown` while
// they share the GPU (NCCL kernels occupy SMs and HBM bandwidth).
#include "megasim/config/specs.hpp"

namespace megasim {

// Times of one pass (forward or backward) of some layers for one micro-batch.
struct PassTimes {
  double compute_s = 0;     // all compute kernels
  double overlap_gemm_s = 0;  // GEMMs TP communication can be fused with (system.tp_overlap_scope)
  double overlap_comm_s = 0;  // TP collectives fused with those GEMMs when overlap is on
  double other_comm_s = 0;  // TP collectives that stay exposed
  // TP collectives priced one by one beside their own GEMMs: Megatron's asynchronous backward
  // collectives, and every collective under Transformer Engine's userbuffers (step_costs.cpp).
  double async_comm_s = 0;
  double async_exposed_s = 0;  //   what of them stays exposed, with the SM-sharing slow-down
  double cp_comm_s = 0;     // context-parallel exchange
  double shared_expert_s = 0;  // the shared experts' kernels (what shared-expert overlap hides EP behind)
  int kernels = 0;          // kernel launches
  double host_wait_s = 0;   // GPU idle after a host wait mid-pass (dropless MoE), in compute_s
  // In a pass with no host wait: the host's launch time beyond its kernels' time (compute_s
  // already holds it), up to the pass's own EP exchanges. The host keeps launching while the
  // stream runs them, so this much of them costs nothing more (chunk_costs.cpp ep_exposed).
  double host_slack_s = 0;
  // Where Megatron-Core's merged 1F1B schedule (overlap_moe_expert_parallel_comm) cuts an MoE
  // layer's pass (models/common/model_chunk_schedule_plan.py TransformerLayerSchedulePlan.run):
  // kernels on the expert side (between the dispatch and the combine, shared experts included:
  // its "mlp" node) and on the attention side (the rest: attention, router, permute; not the combine
  // node's kernels, below),
  // and its two EP exchanges in pass order (forward: dispatch, combine; backward: the combine's
  // gradient, then the dispatch's). Kernel times, before any host bound.
  double expert_side_kernels_s = 0;
  double attention_side_kernels_s = 0;
  double first_exchange_s = 0;
  double second_exchange_s = 0;
  // The combine node's kernels (LayerOp::combine_node), counted in neither side above.
  double combine_node_kernels_s = 0;
  // The attention block's weight-gradient GEMMs (LayerOp::attention_block), in compute_s.
  double attention_wgrad_s = 0;
  // EP-group collectives the host issues on the compute stream before a dropless host wait
  // (the all-to-all dispatcher's token-count all-gather): no overlap hides them.
  double ep_serial_comm_s = 0;
  // MoE dispatch and combine over the expert-parallel group (an exchange is a run of
  // consecutive EP ops: the tokens' all-to-all and the probabilities' beside it), serial.
  double ep_exchange_s() const { return first_exchange_s + second_exchange_s; }
  // All of the pass's EP-group communication, serial.
  double ep_comm_s() const { return ep_exchange_s() + ep_serial_comm_s; }
  // This pass's EP exchanges left exposed when the schedule merges it with the opposite pass of
  // a layer like it (chunk_costs.cpp merge_ep_phases); 0 outside MoE layers.
  double ep_merged_exposed_s = 0;
  double tp_comm_s() const { return overlap_comm_s + other_comm_s + async_comm_s; }  // serial TP time
  PassTimes scaled(int n) const {
    PassTimes t = *this;
    t.compute_s *= n;
    t.overlap_gemm_s *= n;
    t.overlap_comm_s *= n;
    t.other_comm_s *= n;
    t.async_comm_s *= n;
    t.async_exposed_s *= n;
    t.cp_comm_s *= n;
    t.shared_expert_s *= n;
    t.kernels *= n;
    t.host_wait_s *= n;
    t.host_slack_s *= n;
    t.expert_side_kernels_s *= n;
    t.attention_side_kernels_s *= n;
    t.first_exchange_s *= n;
    t.second_exchange_s *= n;
    t.combine_node_kernels_s *= n;
    t.attention_wgrad_s *= n;
    t.ep_serial_comm_s *= n;
    t.ep_merged_exposed_s *= n;
    return t;
  }
  PassTimes& operator+=(const PassTimes& o) {
    compute_s += o.compute_s;
    overlap_gemm_s += o.overlap_gemm_s;
    overlap_comm_s += o.overlap_comm_s;
    other_comm_s += o.other_comm_s;
    async_comm_s += o.async_comm_s;
    async_exposed_s += o.async_exposed_s;
    cp_comm_s += o.cp_comm_s;
    shared_expert_s += o.shared_expert_s;
    kernels += o.kernels;
    host_wait_s += o.host_wait_s;
    host_slack_s += o.host_slack_s;
    expert_side_kernels_s += o.expert_side_kernels_s;
    attention_side_kernels_s += o.attention_side_kernels_s;
    first_exchange_s += o.first_exchange_s;
    second_exchange_s += o.second_exchange_s;
    combine_node_kernels_s += o.combine_node_kernels_s;
    attention_wgrad_s += o.attention_wgrad_s;
    ep_serial_comm_s += o.ep_serial_comm_s;
    ep_merged_exposed_s += o.ep_merged_exposed_s;
    return *this;
  }
};

struct TpOverlapConfig {
  bool enabled = false;
  int chunks = 4;
  double slowdown = 0;  // fraction GEMMs slow while communication runs beside them
};

struct OverlapResult {
  double exposed_s = 0;  // TP communication time (plus contention) left on the critical path
};

OverlapResult apply_tp_overlap(const PassTimes& t, const TpOverlapConfig& cfg);

// Exposed time of one collective of `comm_s` overlapped with GEMMs of `gemm_s`, by method; each
// adds `slowdown` x the time the two share the GPU (the NCCL kernel's SMs).
// Beside: the collective and the GEMMs start together on two streams (Megatron's asynchronous
// backward collectives, Transformer Engine's bulk overlap).
double beside_exposed_s(double comm_s, double gemm_s, double slowdown);
// Ring exchange into the GEMMs that consume the gathered tensor, in k steps: the first GEMM step
// runs on the local shard, each later one waits for its shard (Transformer Engine's all-gathers).
double ring_exchange_exposed_s(double comm_s, double gemm_s, int k, double slowdown);
// Reduce-scatter pipelined behind the GEMMs that produce its input, in k chunks: the last
// chunk's reduction has nothing left to hide behind (Transformer Engine's forward RS).
double pipelined_reduce_scatter_exposed_s(double comm_s, double gemm_s, int k, double slowdown);

}  // namespace megasim
