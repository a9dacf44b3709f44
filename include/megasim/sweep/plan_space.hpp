#pragma once
// The planner's search space: every parallel plan of one model on one cluster, and the cheap
// checks that reject a plan before anything is simulated.
//
// The space is the cartesian product of these explicit domains (nothing else is varied; the
// model, cluster, precision, optimizer and system techniques come from the base job):
//   global batch   opts.global_batch_sizes (default: the base job's)
//   TP             divisors of the NVLink domain size (TP groups stay inside one NVLink domain)
//   CP             1, 2, 4, ... up to opts.max_context_parallel
//   PP layout      every divisor of num_hidden_layers (even split), plus, for each power of two
//                  PP >= 2 that does not divide the layers, one uneven Megatron-Core split:
//                  k = ceil(L/PP) layers on each middle stage and the rest shared by the first
//                  and last stage (first = floor(rest/2), last = rest - first), kept only when
//                  1 <= first <= last <= k (embedding and LM head stages get the lighter load)
//                  ; and for every PP >= 2 that does not divide the layers but divides
//                  L + 2, Megatron-Core's split with the embedding and the loss counted as
//                  layers (account_for_embedding/loss_in_pipeline_split: the first and last
//                  model chunk hold one layer fewer)
//   VPP            1 when PP = 1; else every divisor of the layers per stage (uneven: of the
//                  gcd of first, middle and last stage layers; accounted: of (L + 2) / PP,
//                  keeping at least one layer in every chunk)
//   micro batch    opts.micro_batch_sizes (default 1, 2, 4, 8)
//   recompute      none, selective, full
//   ZeRO stage     0, 1, 2, 3
//   EP             MoE models only: every power of two dividing the routed experts; dense
//                  models: none (ep = 0)
//   ETP            MoE models only: as the base job writes it; unwritten, both Megatron-Core
//                  layouts: the plan's TP (Megatron-Core's default) and, when TP > 1, ETP 1
//                  (experts unsplit, as DeepSeek-V3's and Qwen3's recipes run them)
// A plan is then rejected by the first rule it breaks, in the order config/validate.cpp checks
// them (so the reason matches what `megasim simulate` would say), and finally by memory fit.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/model/memory.hpp"

namespace megasim {

struct PlanCandidate {
  std::int64_t global_batch_size = 0;
  int tp = 1;
  int cp = 1;
  int pp = 1;
  std::optional<int> first_stage_layers;  // uneven split (Megatron-Core decoder_first/last_...)
  std::optional<int> last_stage_layers;
  // Megatron-Core's account_for_embedding_in_pipeline_split and ..._loss_...: both on for a
  // layout that splits L + 2 "layers" (embedding and loss counted), as the 405B recipes do.
  bool account_for_embedding_and_loss = false;
  // Models with multi-token prediction: a Megatron-Core pipeline_model_parallel_layout that
  // splits L + 2 + MTP slots evenly over the PP x VPP chunks, the embedding opening the first
  // chunk and the MTP modules and the loss closing the last (DeepSeek-V3's "Et|(tt|)*30mL").
  bool layout_with_mtp = false;
  int vpp = 1;
  std::int64_t micro_batch_size = 1;
  Recompute recompute = Recompute::None;
  int zero_stage = 0;
  int ep = 0;   // expert parallelism; 0 = the model has no experts
  int etp = 0;  // expert tensor parallelism; 0 = the model has no experts
};

// Canonical, human-readable key, e.g. "tp8-pp8-vpp6-cp1-mbs1-rc:none-z2-gbs6144", with
// "-first3-last4" after the PP term for uneven splits and "-embloss" for a split that counts
// the embedding and the loss as layers, and "-ep8" for an MoE model ("-ep8-etp1" when its ETP
// is not its TP). Unique per candidate.
std::string plan_key(const PlanCandidate& c);

// Total order used to break ties deterministically (field by field, in declaration order).
bool canonical_less(const PlanCandidate& a, const PlanCandidate& b);

// The Megatron-Core layout string of a layout_with_mtp candidate of a model with `layers`
// transformer layers and `mtp_layers` MTP modules (e.g. "Et|(tt|)*30mL"); empty otherwise.
std::string pipeline_layout_string(const PlanCandidate& c, std::int64_t layers, std::int64_t mtp_layers);

struct PlanSpaceOptions {
  std::vector<std::int64_t> global_batch_sizes;         // empty: the base job's
  std::vector<std::int64_t> micro_batch_sizes{1, 2, 4, 8};
  int max_context_parallel = 8;
  bool sequence_parallel = true;  // Megatron default; applied whenever TP > 1
};

// Every candidate of the space, in canonical order.
std::vector<PlanCandidate> enumerate_plans(const JobSpec& base, const PlanSpaceOptions& opts);

// Why a candidate is not runnable. Keys (stable, used in JSON) are listed by plan_rule_key.
enum class PlanRule {
  GpusDivisibleByModelParallel,  // num_gpus % (TP*PP*CP) != 0
  TpDividesHeads,                // num_attention_heads % TP
  TpDividesKvHeads,              // num_key_value_heads % TP
  BatchDivisibleByMicroBatchDp,  // global_batch % (micro_batch * DP)
  VppMicroBatchesDivisibleByPp,  // interleaving needs micro-batches % PP == 0
  SeqDivisibleBy2Cp,             // seq_length % (2*CP)
  SeqPerCpDivisibleByTp,         // sequence parallel: (seq/CP) % TP
  ExpertGridDividesGpus,         // MoE: num_gpus % (ETP*EP*PP), ETP <= GPUs per node, ETP | expert width,
                                 //   pp-first with PP > 1 needs ETP*EP = TP*CP
  MergedA2aOverlapRules,         // the job's overlap_moe_expert_parallel_comm: Megatron-Core needs
                                 //   EP > 1, the interleaved schedule when PP > 1, no full recompute
                                 //   and no recompute of the whole MoE block
  Memory,                        // peak memory per GPU exceeds the GPU's capacity
  CostModelError,                // the step cost model threw (a plan it cannot represent)
};
const char* plan_rule_key(PlanRule r);
inline constexpr PlanRule kAllPlanRules[] = {
    PlanRule::GpusDivisibleByModelParallel, PlanRule::TpDividesHeads,
    PlanRule::TpDividesKvHeads,             PlanRule::BatchDivisibleByMicroBatchDp,
    PlanRule::VppMicroBatchesDivisibleByPp, PlanRule::SeqDivisibleBy2Cp,
    PlanRule::SeqPerCpDivisibleByTp,        PlanRule::ExpertGridDividesGpus,
    PlanRule::MergedA2aOverlapRules,        PlanRule::Memory,
    PlanRule::CostModelError};

// The base job with the candidate's plan written in, derived fields (DP, sequence
// parallelism) recomputed. Does not validate.
JobSpec apply_plan(const JobSpec& base, const PlanCandidate& c, bool sequence_parallel = true);

// First divisibility rule `job` breaks, in config/validate.cpp's order; nullopt when none.
std::optional<PlanRule> first_broken_rule(const JobSpec& job);

// Peak bytes per GPU over the pipeline stages (peak_memory_per_gpu), with the GPU profile's
// buffer sizes; cheap, no allocation.
double peak_memory_bytes(const JobSpec& job, const BufferSizes& buffers);

}  // namespace megasim
