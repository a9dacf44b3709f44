#pragma once
// The per-micro-batch cost ingredients of one training step, shared by both engines: what
// exec's cost passes compute (megasim/exec/step_costs.hpp) and what the analytic estimator and
// the event-engine workload read. Both read durations and byte counts from here, so the two
// engines differ only in how they compose them (closed-form schedule formulas vs. simulated
// dependencies, streams and network flows), never in the physics. Plain data, defined here,
// below exec, so that the workload builder does not depend on the module that runs it.
// All times are for one GPU and one micro-batch unless the name says otherwise.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "megasim/model/memory.hpp"

namespace megasim {

// One model chunk (a contiguous run of layers on one pipeline stage; VPP gives v per stage).
struct ChunkCosts {
  int first_layer = 0;           // global index of its first transformer layer
  int layers = 0;
  // The layers Megatron-Core's merged 1F1B step schedules in the chunk: its decoder layers and
  // any multi-token-prediction modules (0: not known, every pair taken as even).
  int merged_layers = 0;
  bool has_embedding = false;    // first chunk of the first stage
  bool has_lm_head = false;      // last chunk of the last stage (LM head + loss)
  double fwd_compute_s = 0;      // kernels only (GEMMs, attention, elementwise, norms)
  double bwd_compute_s = 0;      // dgrad + wgrad, plus recomputed forward when recompute is on
  double fwd_tp_comm_s = 0;      // TP collectives on NVLink, serial time
  double bwd_tp_comm_s = 0;
  double fwd_tp_exposed_s = 0;   // TP time left on the critical path after TP overlap
  double bwd_tp_exposed_s = 0;   //   (includes the compute slow-down from sharing SMs)
  double fwd_cp_exposed_s = 0;   // context-parallel K/V exchange left exposed
  double bwd_cp_exposed_s = 0;
  double fwd_ep_exposed_s = 0;   // MoE dispatch/combine left exposed after MoE overlap
  double bwd_ep_exposed_s = 0;
  // The same for a pass that runs alone where the 1F1B all-to-all overlap merges steady-state
  // pairs (its warm-up forwards and cool-down backwards): all of it. Equal to the above without
  // that overlap.
  double fwd_ep_alone_s = 0;
  double bwd_ep_alone_s = 0;
  // Megatron-Core's merged 1F1B step: what each merged pair (counted on its backward) waits at
  // its start for the two pipeline receives the previous pair posted as it ended (chunk_costs.cpp).
  double merged_pp_wait_s = 0;
  double param_bytes = 0;        // this GPU's parameter bytes of the chunk (before ZeRO sharding)
  // Overlapped DP collectives per step for this chunk, each way: 1 with MegaScale's per-chunk
  // overlap; with system.dp_overlap_granularity = bucket, one per gradient bucket, released as
  // the chunk's last backward produces it (and gathered as its first forward reaches it).
  int dp_buckets = 1;
  double fwd_s() const { return fwd_compute_s + fwd_tp_exposed_s + fwd_cp_exposed_s + fwd_ep_exposed_s; }
  double bwd_s() const { return bwd_compute_s + bwd_tp_exposed_s + bwd_cp_exposed_s + bwd_ep_exposed_s; }
};

struct StepCosts {
  int pp = 1;
  int vpp = 1;
  std::int64_t dp = 1;
  std::int64_t micro_batches = 1;        // per pipeline per step
  // Warm-up forwards beyond the (interleaved) 1F1B schedule's (config/specs.hpp
  // extra_warmup_passes; workload/schedule.hpp).
  int extra_warmup_passes = 0;
  std::vector<std::vector<ChunkCosts>> chunks;  // [stage][chunk]

  // One transformer layer, one micro-batch, on one GPU: kernels plus the TP/CP communication
  // left exposed after TP overlap (backward includes the recomputed forward). What a profiler
  // shows per layer, and what Korthikanti et al. 2022 Table 4 publishes.
  double layer_fwd_s = 0;
  double layer_bwd_s = 0;
  // One MoE block alone (MoE models; 0 otherwise), one micro-batch: its kernels plus its EP
  // dispatch and combine, serial (Megatron-LM's moe_perf benchmark times an MoELayer so).
  double moe_block_fwd_s = 0;
  double moe_block_bwd_s = 0;
  // How the EP dispatch and combine were priced: as flows on the fabric (the event engine,
  // exec/ep_fabric) for ep_groups_simulated of the stage's ep_groups_per_stage groups, or in
  // NCCL's closed form (the analytic engine, or a group over the simulation budget).
  bool ep_priced_on_fabric = false;
  std::int64_t ep_groups_simulated = 0;
  std::int64_t ep_groups_per_stage = 0;

  // Pipeline point-to-point: activations (or their gradients) between adjacent chunks.
  double p2p_bytes = 0;                  // bytes per GPU per boundary per micro-batch
  int p2p_nics = 1;                      // NICs a boundary transfer is spread over (scatter-gather)
  double p2p_time_s = 0;                 // analytic, uncontended, one boundary

  // Data parallel (per GPU, whole stage unless noted).
  double dp_grad_reduce_bytes = 0;       // gradient bytes reduced per step (fp32 or 16-bit)
  double dp_param_gather_bytes = 0;      // parameter bytes all-gathered per step (ZeRO >= 1)
  // The routed experts' share, which Megatron-Core reduces and gathers over the expert
  // data-parallel group (ETP x EP GPUs apart, its own bucket groups) instead of the DP group;
  // 0 without experts or with expert DP 1. The analytic times below include both.
  double edp_grad_reduce_bytes = 0;
  double edp_param_gather_bytes = 0;
  // Whether the step has any DP collective: dense ones need DP > 1, the experts' run even where
  // DP is 1 (expert DP > 1 when EP x ETP < TP x CP).
  bool has_dp_collectives() const { return dp > 1 || edp_grad_reduce_bytes > 0; }
  double dp_reduce_time_s = 0;           // analytic, uncontended (reduce-scatter or all-reduce)
  double dp_gather_time_s = 0;           // analytic, uncontended all-gather
  double dp_overlap_compute_slowdown = 0;  // fraction compute slows while DP comm shares the GPU
  // Share of stage s's DP bytes that belongs to its chunk c (by parameter bytes; 1/VPP when the
  // chunks carry none, as hand-built test costs may).
  double dp_share(int stage, int chunk) const {
    const auto& st = chunks[static_cast<std::size_t>(stage)];
    double total = 0;
    for (const auto& ch : st) total += ch.param_bytes;
    return total > 0 ? st[static_cast<std::size_t>(chunk)].param_bytes / total
                     : 1.0 / static_cast<double>(st.size());
  }

  double optimizer_s = 0;                // optimizer step incl. gradient-norm reduction
  double data_loading_s = 0;             // exposed host-side loading at the start of a step
  double gc_skew_s = 0;                  // late launch of the last DP collective (Python GC)
  double straggler_slowdown = 0;         // expected pipeline slow-down from straggler hosts
  double launch_overhead_per_chunk_s = 0;  // host-side GPU idle per chunk pass (p2p synchronize)
  BufferSizes buffers;                   // the GPU's hardware profile, for the memory model
};

}  // namespace megasim
