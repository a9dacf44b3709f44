#pragma once
// The result of simulating one training step: every field of DESIGN.md A3, in SI units with
// the unit in the name. Produced by both engines (analytic and des); serialised by report/.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "megasim/model/memory.hpp"  // MemoryBreakdown

namespace megasim {

// Where one step's wall-clock time goes, seconds. The fields add up to step_time_s.
struct StepBreakdown {
  double compute_s = 0;          // GPU busy with model math on the critical path
  double exposed_tp_comm_s = 0;  // tensor-parallel collectives not hidden behind compute
  double exposed_pp_comm_s = 0;  // pipeline send/recv not hidden
  double exposed_dp_comm_s = 0;  // data-parallel gradient/parameter collectives not hidden
  double exposed_cp_comm_s = 0;  // context-parallel K/V exchange not hidden
  double exposed_ep_comm_s = 0;  // MoE token dispatch/combine not hidden
  double pipeline_bubble_s = 0;  // pipeline fill and drain idle time
  double optimizer_s = 0;        // optimizer step (+ gradient-norm all-reduce)
  double data_loading_s = 0;     // exposed data loading at the start of the step
  double other_s = 0;            // launch overheads, stragglers, anything else
  // The part of other_s that is the expected slow-host (straggler) slow-down: informational,
  // already inside other_s, so not added again by total_s().
  double straggler_s = 0;
  double total_s() const {
    return compute_s + exposed_tp_comm_s + exposed_pp_comm_s + exposed_dp_comm_s +
           exposed_cp_comm_s + pipeline_bubble_s + optimizer_s + data_loading_s + other_s + exposed_ep_comm_s;
  }
};


// One transformer layer, one micro-batch, on one GPU, including the TP/CP communication left
// exposed (backward includes any recomputed forward): the per-layer time a profiler shows.
struct LayerTime {
  double forward_s = 0;
  double backward_s = 0;
};

struct PlanSummary {
  int tp = 1, pp = 1, vpp = 1, cp = 1;
  std::int64_t dp = 1;
  std::int64_t micro_batches_per_pipeline = 1;
  std::int64_t micro_batch_size = 1;
  int zero_stage = 0;
  std::string recompute = "none";
};

struct LinkLoad {
  std::string link;          // human-readable link name, e.g. "tor3.rail2 -> agg1"
  double bytes = 0;          // bytes carried during the step
  double utilization = 0;    // busy fraction of the step (0..1)
};

// Named apart from net/ecmp_stats.hpp's EcmpStats (the full per-tier statistics).
struct StepEcmpSummary {
  double max_flows_per_uplink = 0;
  double mean_flows_per_uplink = 0;
  double max_uplink_load_vs_ideal = 1.0;  // busiest uplink: flows under ECMP / load under ideal spraying (static)
};

// Mixture of Experts: the expert grid and how the routing loaded it (MoE models only).
struct MoeSummary {
  int ep = 1, etp = 1;
  std::int64_t edp = 1;
  std::string dispatcher;                // system.moe_token_dispatcher_type
  double routing_cv = 0;                 // spread of tokens over experts the model used
  double max_to_mean_rank_load = 1;      // the most-loaded EP rank's received tokens / the mean
  double max_to_mean_expert_load = 1;    // the busiest expert's tokens / the mean
  double dropped_token_fraction = 0;     // routed copies dropped by the capacity factor
  double block_forward_s = 0;            // one MoE block alone, one micro-batch (StepCosts::moe_block_*)
  double block_backward_s = 0;
  // How the dispatch and combine were priced: "fabric" (flows on the routed fabric, the event
  // engine) or "closed_form" (NCCL's all-to-all model); with "fabric", the EP groups of one
  // pipeline stage that ran at once and how many the stage has.
  std::string exchange_priced_by = "closed_form";
  std::int64_t exchange_groups_simulated = 0;
  std::int64_t exchange_groups_per_stage = 0;
};

struct StepReport {
  std::string name;
  std::string engine;                    // "analytic" | "des"
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;                        // model FLOPs / (step time * GPUs * dense peak)
  double hfu = 0;                        // hardware FLOPs (with recompute) / same
  double model_tflops_per_gpu = 0;       // model FLOP/s per GPU / 1e12
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double model_parameters = 0;
  double model_active_parameters = 0;    // what one token passes through (MoE: top-k experts)
  double model_mtp_parameters = 0;       // multi-token-prediction modules, reported apart
  double peak_flops_per_gpu = 0;         // dense peak of the training precision used for MFU
  std::optional<double> time_to_train_days;
  std::int64_t num_gpus = 0;
  StepBreakdown breakdown;
  LayerTime layer_time;
  MemoryBreakdown memory;                // on the pipeline stage that needs the most
  int memory_peak_stage = 0;
  double memory_capacity_bytes = 0;
  bool memory_fits = true;
  PlanSummary plan;
  std::vector<LinkLoad> busiest_links;   // DES only
  std::optional<StepEcmpSummary> ecmp;         // DES only
  double startup_s = 0;                  // communicator initialisation (start-up cost)
  std::string startup_hint;              // text report only: what would shorten a long start-up
  std::optional<MoeSummary> moe;
};

}  // namespace megasim
