// The MoE router's and the all-to-all token dispatcher's bookkeeping kernels: everything around
// the router GEMM and the permutes that Megatron-Core launches per MoE layer and micro-batch.
// They are tiny on the GPU, but each is a launch the host pays at the framework's rate
// (system.host_launch_factor_*, measured per launch as Megatron-Core issues them), and the MoE
// layers of fine-grained models are bound by the host (docs/moe.md). Counted from the code of
// Megatron-Core 0d8e0714cd29 (Megatron-Bridge v0.2.0's pin) and Transformer Engine v2.9 on the
// path the Megatron-Bridge performance recipes run: moe_router_fusion and moe_permute_fusion on
// (scripts/performance/configs/*/..._llm_pretrain.py; every MoE provider sets the permute
// fusion). Their unfused paths issue more (PyTorch top-k, scatter and masked_select chains); they
// are priced as the fused ones, a floor. Their small NCCL calls are collectives of their own
// (the load-balancing loss's count all-reduce here, the dispatcher's token-count all-gather here,
// the probabilities' all-to-all in moe_ops.cpp): latency-bound, on the compute stream.
#include "op_builders.hpp"

namespace megasim::model_detail {

namespace {

// Bytes per router score element: FP32, as Megatron-Core keeps the logits, scores and
// probabilities under moe_router_dtype fp32 (the default here) and TE's fused router kernels
// compute in FP32; under "input" they are written in 16 bits, priced at 4 all the same (these
// kernels are bound by their launches).
constexpr double kScoreBytes = 4.0;

double score_elements(std::int64_t tokens, std::int64_t experts) { return dd(tokens) * dd(experts); }

MoeLoadBalancing load_balancing(const TrainingSpec& t) {
  return t.moe_router_load_balancing_type.value_or(MoeLoadBalancing::AuxLoss);  // Megatron-Core's default
}

bool aux_loss_runs(const TrainingSpec& t) {
  return t.moe_aux_loss_coeff > 0 && load_balancing(t) != MoeLoadBalancing::None;
}

// Launches of the load-balancing loss forward (router.py _apply_aux_loss / _apply_seq_aux_loss /
// _apply_global_aux_loss): TE's fused score kernel for the loss (compute_routing_scores_for_aux_
// loss), routing_map.sum over the tokens, TE's fused loss kernel, and the loss tracker's division
// by the coefficient and in-place add (moe_utils.py save_to_aux_losses_tracker); the per-sequence
// loss divides by the batch once more; the global one adds the counts into its running buffer,
// steps its counter and divides.
int aux_loss_forward_launches(MoeLoadBalancing type) {
  switch (type) {
    case MoeLoadBalancing::AuxLoss: return 5;
    case MoeLoadBalancing::SeqAuxLoss: return 6;
    case MoeLoadBalancing::GlobalAuxLoss: return 8;
    case MoeLoadBalancing::None: return 0;
  }
  return 0;
}

}  // namespace

bool router_in_fp32(const JobSpec& job) {
  return job.training.moe_router_dtype.value_or(MoeRouterDtype::Fp32) == MoeRouterDtype::Fp32;
}

// Router forward (router.py TopKRouter.forward and routing): the gating GEMM; under forced balance
// RandomSTE's logits.clone().normal_() (2); TE's fused top-k with the score function, writing the
// probabilities and the routing map (1); with a capacity factor apply_router_token_dropping:
// torch.topk over the tokens, zeros_like, scatter (a copy and the scatter), .bool() and the
// probabilities' mask product (6); the load-balancing loss (above); with DeepSeek-V3's expert
// bias, local_tokens_per_expert += routing_map.sum(0) (2). The loss and the bias count run only
// with autograd on (router.py: `self.training and torch.is_grad_enabled()`): in a checkpointed
// block's first forward (no_grad) they do not, in its recomputation they do.
void add_router_forward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, std::int64_t tokens,
                        bool grad_enabled) {
  const TrainingSpec& t = job.training;
  const std::int64_t experts = job.model.moe.num_experts;
  const double n = score_elements(tokens, experts);
  ops.push_back(gemm("router", tokens, experts, x.h, x.e, false));
  if (t.moe_router_force_load_balancing) {
    ops.push_back(mem("router_random_logits", OpKind::Elementwise, 3.0 * n * kScoreBytes, 2));
  }
  // Reads the logits, writes the probabilities, the map and the saved scores.
  ops.push_back(mem("router_topk", OpKind::Elementwise, 3.0 * n * kScoreBytes, 1));
  if (t.moe_expert_capacity_factor) {
    ops.push_back(mem("router_token_drop", OpKind::Elementwise, 6.5 * n * kScoreBytes, 6));
  }
  if (grad_enabled && aux_loss_runs(t)) {
    // The score kernel reads the logits and writes scores and map; the sum reads the map; the
    // loss kernel reads the scores.
    ops.push_back(mem("router_aux_loss", OpKind::Elementwise, 3.5 * n * kScoreBytes,
                      aux_loss_forward_launches(load_balancing(t))));
    // The loss needs the counts of the whole sequence: reduce_from_tensor_model_parallel_region
    // of routing_map.sum(0) (int64, one per expert) over the TP x CP group (router.py
    // _apply_aux_loss, _apply_seq_aux_loss), priced over the TP group. The global loss reduces
    // over TP x DP x CP instead (_apply_global_aux_loss); megasim does not price that group.
    if (load_balancing(t) != MoeLoadBalancing::GlobalAuxLoss) {
      ops.push_back(comm("router_aux_loss_count_all_reduce", OpKind::TpAllReduce, 8.0 * dd(experts), false));
    }
  }
  if (grad_enabled && t.moe_router_enable_expert_bias) {
    ops.push_back(mem("router_expert_bias_count", OpKind::Elementwise, n, 2));
  }
}

// Router backward: TE's fused top-k backward (1); with the loss, MoEAuxLossAutoScaler's
// ones_like * scale (2), the fused loss and score backward kernels (2) and the sum of the two
// logits gradients (1); with a capacity factor, the mask product's backward (1); then the gating
// GEMM's dgrad and wgrad and the router weight's main_grad accumulation (1: the router is a plain
// PyTorch matmul, outside TE's gradient-accumulation fusion).
void add_router_backward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, std::int64_t tokens) {
  const TrainingSpec& t = job.training;
  const std::int64_t experts = job.model.moe.num_experts;
  const double n = score_elements(tokens, experts);
  if (t.moe_expert_capacity_factor) {
    ops.push_back(mem("router_token_drop_bwd", OpKind::Elementwise, 2.0 * n * kScoreBytes, 1));
  }
  if (aux_loss_runs(t)) {
    ops.push_back(mem("router_aux_loss_bwd", OpKind::Elementwise, 7.0 * n * kScoreBytes, 5));
  }
  ops.push_back(mem("router_topk_bwd", OpKind::Elementwise, 3.0 * n * kScoreBytes, 1));
  ops.push_back(gemm("router_dgrad", tokens, x.h, experts, x.e, false));
  ops.push_back(gemm("router_wgrad", x.h, experts, tokens, x.e, false));
  // Under an FP32 router, RouterGatingLinearFunction.backward (moe_utils.py) runs both GEMMs in
  // FP32 (TF32 in TE's cuBLASLt call: priced at the 16-bit rate, TF32 is not measured here) on FP32
  // copies: the input cast up (read 2, write 4 bytes an element), the weight cast up, the FP32
  // input gradient (2 more bytes written) cast back down (read 4, write 2), the weight gradient
  // cast back: four casts.
  if (router_in_fp32(job)) {
    const double th = dd(tokens) * dd(x.h);
    const double eh = dd(experts) * dd(x.h);
    ops.push_back(mem("router_fp32_casts", OpKind::Elementwise, th * (6.0 + 2.0 + 6.0) + eh * 14.0, 4));
  }
  // Reads the 16-bit gradient, reads and writes the main grad.
  ops.push_back(mem("router_main_grad_add", OpKind::Elementwise, dd(x.h) * dd(experts) * (x.e + 2.0 * x.main_grad_bytes), 1));
}

// The all-to-all dispatcher's metadata before the permute (token_dispatcher.py
// MoEAlltoAllTokenDispatcher.preprocess and _maybe_dtoh_and_synchronize). Dropless across ranks:
// routing_map.sum(0).long() (2), the input splits' reshape-sum (1), the gathered counts' slice
// made contiguous (1) and three sums (3), then device-to-host copies of the local counts and the
// three split vectors (4); dropless on one rank: the sum (2) and its copy (1); padded to the
// capacity: the device fill of the per-expert counts (1). Dropping without padding also sums the
// kept copies (num_out_tokens, 1).
void add_dispatch_metadata(std::vector<LayerOp>& ops, const JobSpec& job, std::int64_t tokens, bool across_ranks) {
  const TrainingSpec& t = job.training;
  const double map_bytes = score_elements(tokens, job.model.moe.num_experts);  // the bool map, read once
  const int launches = t.moe_pad_expert_input_to_capacity
                           ? 1
                           : (across_ranks ? 11 : 3) + (t.moe_expert_capacity_factor ? 1 : 0);
  ops.push_back(mem("dispatch_token_counts", OpKind::Elementwise, map_bytes, launches));
  // Dropless across ranks, every rank needs every rank's counts for the all-to-all's split sizes:
  // gather_from_sequence_parallel_region(num_local_tokens_per_expert, group=tp_ep_group), one
  // int64 per expert from each rank of the expert grid's ETP x EP group, before the host sync.
  if (across_ranks && !t.moe_pad_expert_input_to_capacity) {
    const std::int64_t ranks =
        std::max(1, job.parallel.expert_model_parallel_size) * expert_tensor_parallel_size(job);
    ops.push_back(comm("dispatch_token_count_all_gather", OpKind::EpAllGather,
                       8.0 * dd(job.model.moe.num_experts) * dd(ranks), false));
  }
}

}  // namespace megasim::model_detail
