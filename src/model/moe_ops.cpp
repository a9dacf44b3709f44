// The MoE block of a layer, as Megatron-Core's MoELayer runs it with the all-to-all token
// dispatcher (megatron/core/transformer/moe/token_dispatcher.py; docs/moe.md): router GEMM and top-k, permute, EP dispatch, expert-TP all-gather, sort by
// local expert, the experts' grouped FC1 / activation / FC2, then the mirror image back, and
// the shared experts (a TP-parallel MLP) beside. Per rank and micro-batch; the rows of the
// expert GEMMs are those of the most-loaded EP rank (moe_routing.hpp), which every other rank
// waits for at the combine.
#include <cmath>

#include "megasim/model/moe_routing.hpp"
#include "op_builders.hpp"

namespace megasim::model_detail {

namespace {

struct MoeDims {
  std::int64_t tokens;       // this rank's tokens entering the block (the SP shard under TP)
  double copies;             // routed copies it sends: tokens x top-k
  double received;           // copies the most-loaded rank receives (before the expert-TP gather)
  // Rows that reach it under the flex dispatcher, which sends a token once per EP rank it
  // needs, not once per expert (DeepEP's is_token_in_rank; HybridEP likewise), to every ETP
  // rank of the expert.
  double received_tokens;
  std::vector<std::int64_t> rows;  // rows of each local expert's GEMMs on that rank
  std::int64_t rows_total;
  std::int64_t width;        // one expert's FFN width on this rank (/ ETP)
  std::int64_t fc1_width;    // gated: 2 x width
  std::int64_t experts, local_experts, etp, ep;
  bool shared;
};

MoeDims moe_dims(const JobSpec& job, const Dims& x) {
  const MoeSpec& m = job.model.moe;
  MoeDims d{};
  d.tokens = x.sp ? x.tokens / x.t : x.tokens;
  d.copies = routed_copies_per_rank(job);
  d.ep = std::max(1, job.parallel.expert_model_parallel_size);
  d.etp = expert_tensor_parallel_size(job);
  d.experts = m.num_experts;
  d.local_experts = m.num_experts / d.ep;
  d.width = m.expert_intermediate_size / d.etp;
  d.fc1_width = x.gated ? 2 * d.width : d.width;
  d.shared = m.shared_expert_intermediate_size > 0;
  const ExpertLoad load = expert_load(job);
  d.received = d.copies * load.max_to_mean_rank_load;
  d.received_tokens =
      d.received * distinct_targets_per_token(m, static_cast<int>(d.ep)) / dd(m.experts_per_token) * dd(d.etp);

  d.rows_total = 0;
  for (const double l : load.hottest_rank_expert_load) {
    const auto r = static_cast<std::int64_t>(std::llround(l * load.mean_tokens_per_expert * static_cast<double>(d.etp)));
    d.rows.push_back(r);
    d.rows_total += r;
  }
  return d;
}

// A dense-MLP view of the layer for its shared experts (TP-parallel, width shared / TP).
Dims shared_expert_dims(const JobSpec& job, const Dims& x) {
  Dims s = x;
  s.f_local = job.model.moe.shared_expert_intermediate_size / x.t;
  s.fc1_local = x.gated ? 2 * s.f_local : s.f_local;
  return s;
}

LayerOp expert_gemm(const JobSpec& job, const Dims& x, const MoeDims& d, std::string name, std::int64_t n,
                    std::int64_t k, bool wgrad) {
  // fprop / dgrad: rows x n x k per expert; wgrad: k x n x rows (reduction over the tokens).
  LayerOp op = wgrad ? linear(x, std::move(name), k, n, d.rows_total, false)
                     : linear(x, std::move(name), d.rows_total, n, k, false);
  op.expert_rows = d.rows;
  op.grouped = job.system.moe_grouped_gemm;
  // One GEMM launch per local expert either way: Transformer Engine's GroupedLinear (what
  // moe_grouped_gemm runs in Megatron-Core) loops cuBLAS GEMMs over the experts on 4 streams
  // (TE v2.9 common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm; its single-kernel grouped
  // GEMMs are opt-in: CUTLASS BF16 on Hopper from v2.8, cuBLASLt device-shape from v2.14). The
  // grouped flag picks the GEMMs' device time (grouped kernel vs a loop of serial GEMMs); each
  // launch also pays the device-side launch gap (kernel_launch_overhead_s), as any kernel does.
  op.kernels = static_cast<int>(d.local_experts);
  // Every expert's weights are read once, whatever its rows.
  op.bytes = x.e * (static_cast<double>(d.rows_total) * static_cast<double>(wgrad ? n : k) +
                    static_cast<double>(d.local_experts) * static_cast<double>(k) * static_cast<double>(n) +
                    static_cast<double>(d.rows_total) * static_cast<double>(wgrad ? k : n));
  if (wgrad) {
    op.weight_gradient = true;
    op.main_grad_bytes = x.main_grad_bytes;
  }
  return op;
}

// A collective over the expert TP group (dispatch_postprocess / combine_preprocess over tp_group
// of the expert grid, which has ETP ranks).
LayerOp etp_comm(std::string name, OpKind kind, double bytes, bool overlap) {
  LayerOp op = comm(std::move(name), kind, bytes, overlap);
  op.expert_tensor_parallel = true;
  return op;
}


void add_shared_experts_fwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const std::size_t from = ops.size();
  const Dims s = shared_expert_dims(job, x);
  // The shared experts' FC1 is a plain TE linear behind the MoE layer's own norm.
  add_column_input_cast(ops, s, "shared_fc1_input");
  add_ag(ops, s, "tp_all_gather_shared_experts", true, norm_out_bytes(s));
  ops.push_back(linear(s, "shared_fc1", s.tokens, s.fc1_local, s.h, true));
  ops.push_back(act_fwd(s));
  add_fp8_cast_transpose(ops, s, "shared_fc2_input", dd(s.tokens) * dd(s.f_local));
  ops.push_back(linear(s, "shared_fc2", s.tokens, s.h, s.f_local, true));
  add_rs_or_ar(ops, s, "tp_reduce_scatter_shared_experts", true, forward_rs_bytes(s, true));
  mark_compute_from(ops, from, &LayerOp::shared_expert);
}

void add_shared_experts_bwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const std::size_t from = ops.size();
  const Dims s = shared_expert_dims(job, x);
  add_grad_ag(ops, s, "tp_all_gather_grad_shared_experts", "shared_fc2", true);
  add_row_linear_bwd(ops, s, "shared_fc2", s.f_local, true);
  ops.push_back(act_bwd(s));
  add_column_input_transpose(ops, s, "shared_fc1_input");
  const std::size_t fc1 = add_linear_bwd(ops, s, "shared_fc1", s.fc1_local, s.h, true);
  add_col_bwd_comm(ops, s, "shared_experts", true, {fc1}, norm_out_bytes(s));
  mark_compute_from(ops, from, &LayerOp::shared_expert);
}

// With moe_act recomputed under FP8, Megatron-Core makes the experts' FC2 keep its 16-bit input
// (experts.py set_save_original_input): TE's GroupedLinear then quantizes it row-wise only in the
// forward and quantizes the kept input again, column-wise, for the wgrad in the backward
// (grouped_linear.py save_original_input).
bool fc2_saves_original_input(const JobSpec& job, const Dims& x) {
  return x.fp8 && job.training.recompute == Recompute::Selective && job.training.recompute_modules.moe_act;
}

// The dispatcher's path (token_dispatcher.py) sets its exchange and the local kernels around it:
// the all-to-all dispatcher permutes before sending and sorts the received chunks by local expert;
// the all-gather dispatcher gathers the expert grid's (ETP x EP) tokens, then permutes the rows its
// experts need, and unpermutes before reducing-scattering back; DeepEP sends each token once per
// rank it needs and permutes on arrival; HybridEP permutes (and pads) inside its own kernels.
enum class Dispatch { AllToAll, AllGather, DeepEp, HybridEp };
Dispatch dispatch_path(const JobSpec& job) {
  switch (job.system.moe_token_dispatcher_type) {
    case MoeDispatcher::AllToAll: return Dispatch::AllToAll;
    case MoeDispatcher::AllGather: return Dispatch::AllGather;
    case MoeDispatcher::Flex: break;
  }
  return job.system.moe_flex_dispatcher_backend == FlexBackend::HybridEp ? Dispatch::HybridEp : Dispatch::DeepEp;
}
bool is_flex(Dispatch p) { return p == Dispatch::DeepEp || p == Dispatch::HybridEp; }

// The routing probabilities are in the router's dtype: FP32 where the provider sets
// moe_router_dtype "fp32" (Megatron-Bridge's Qwen3 and DeepSeek providers), the input's 16 bits
// otherwise (moe_utils.py .type_as(logits)): training.moe_router_dtype. DeepEP and HybridEP take
// FP32 probabilities only and cast them (_DeepepManager / _HybridEPManager.dispatch).
bool fp32_probs(const JobSpec& job) {
  return is_flex(dispatch_path(job)) || router_in_fp32(job);
}
double prob_bytes(const JobSpec& job, const Dims& x) { return fp32_probs(job) ? 4.0 : x.e; }

// Rows the all-gather dispatcher gathers: every token of the expert grid's ETP x EP group
// (gather_from_sequence_parallel_region over tp_ep_group).
double gathered_tokens(const MoeDims& d) { return dd(d.ep) * dd(d.etp) * dd(d.tokens); }

// Bytes one EP dispatch moves for the most-loaded rank. all-to-all: its routed copies (the expert
// TP gather follows separately); all-gather: the group's tokens; flex: each copy to every ETP rank
// of its expert (the routing map expanded over tp_ep_group; no separate expert-TP collective),
// the de-duplication per rank and node priced by the network model (cost_context.cpp).
double dispatch_bytes(const JobSpec& job, const Dims& x, const MoeDims& d) {
  switch (dispatch_path(job)) {
    case Dispatch::AllGather: return gathered_tokens(d) * dd(x.h) * x.e;
    case Dispatch::DeepEp:
    case Dispatch::HybridEp: return d.received * dd(d.etp) * dd(x.h) * x.e;
    case Dispatch::AllToAll: break;
  }
  return d.received * dd(x.h) * x.e;
}
// The combine's bytes: the dispatch's, except that the all-gather dispatcher reduce-scatters in
// the probabilities' dtype (token_combine: hidden_states.to(local_probs.dtype)).
double combine_bytes(const JobSpec& job, const Dims& x, const MoeDims& d) {
  if (dispatch_path(job) == Dispatch::AllGather) return gathered_tokens(d) * dd(x.h) * prob_bytes(job, x);
  return dispatch_bytes(job, x, d);
}
// The expert-TP gather / reduce-scatter after the EP exchange: the all-to-all dispatcher's only
// (the all-gather and flex dispatchers exchange over the ETP x EP group itself).
bool separate_etp_collectives(const JobSpec& job, const MoeDims& d) {
  return d.etp > 1 && dispatch_path(job) == Dispatch::AllToAll;
}

// The all-to-all dispatcher sends each routed copy's probability beside its row, as a second
// all-to-all on the same splits (token_dispatcher.py MoEAlltoAllTokenDispatcher.token_dispatch:
// all_to_all of the tokens, then of permuted_probs; its autograd backward is the mirror
// all-to-all of the gradients), and gathers them beside the rows over expert TP
// (dispatch_postprocess). The flex dispatcher moves them inside its own kernels. The allgather
// dispatcher gathers, beside the tokens, every rank's routing map (bool) and dense probabilities
// [tokens, experts] (MoEAllGatherTokenDispatcher.token_dispatch), and its backward
// reduce-scatters the probabilities' gradient: calls of their own, one exchange with the tokens'.
bool probs_travel(const JobSpec& job) { return dispatch_path(job) == Dispatch::AllToAll; }
void add_probs_exchange(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, const MoeDims& d,
                        const char* name, OpKind kind) {
  const double p = prob_bytes(job, x);
  if (probs_travel(job)) ops.push_back(comm(name, kind, d.received * p, false));
  if (dispatch_path(job) != Dispatch::AllGather) return;
  const double gathered = gathered_tokens(d) * dd(d.experts);  // [ETP x EP x tokens, experts]
  if (kind == OpKind::EpDispatch) ops.push_back(comm(std::string(name) + "_routing_map", kind, gathered, false));
  ops.push_back(comm(name, kind, gathered * p, false));
}

// Dropless routing needs each expert's token count on the host before the dispatch (the
// all-to-all's split sizes, TE GroupedLinear's m_splits list): Megatron-Core copies them to the
// host and blocks on an event, once per MoE layer forward (token_dispatcher.py
// _maybe_dtoh_and_synchronize; DeepEP's dispatch likewise waits for the GPU's receive counts).
// Padding every expert to its capacity fixes the counts on the host: no wait.
bool host_syncs_before_dispatch(const JobSpec& job) {
  return !job.training.moe_pad_expert_input_to_capacity;
}

// Megatron-Core adds the experts' FC2 bias (add_bias_linear, GPT-OSS) outside the grouped
// GEMM, because each copy's bias is scaled by its routing probability: TEGroupedMLP._apply_bias
// splits the output by local expert and runs `t + b * p` per expert, then concatenates
// (megatron/core/transformer/moe/experts.py). Per expert forward: the product (one write) and
// the sum (two reads, one write), then one copy for the concatenation; backward, autograd's
// b * p gives (g * p).sum(0) and (g * b).sum(-1): two products and two reductions per expert
// over the rows, and one concatenation of the probability gradients. FC1's bias rides in the
// GEMM's epilogue (TE GroupedLinear), free. Measured on a lent H100 with that code at GPT-OSS's
// EP 8 shapes (tools/measure/expert_bias_apply.py, bench/data/h100-expert-bias-apply.json): 33
// launches forward and 100 backward (6 per expert and 4), both bound by the host at 15 and 19 us
// a launch (0.42 / 1.60 ms at 1,024 rows an expert, 0.50 / 1.87 ms at 16): a plain PyTorch
// loop's rate, not Megatron-Core's per-launch factor.
void add_expert_fc2_bias_fwd(std::vector<LayerOp>& ops, const Dims& x, const MoeDims& d) {
  if (!x.bias) return;
  const double rows_h = dd(d.rows_total) * dd(x.h) * x.e;
  ops.push_back(mem("expert_fc2_bias", OpKind::Elementwise, 6.0 * rows_h, 2 * static_cast<int>(d.local_experts) + 1));
  ops.back().plain_torch_launches = true;
}
void add_expert_fc2_bias_bwd(std::vector<LayerOp>& ops, const Dims& x, const MoeDims& d) {
  if (!x.bias) return;
  const double rows_h = dd(d.rows_total) * dd(x.h) * x.e;
  ops.push_back(
      mem("expert_fc2_bias_bwd", OpKind::Elementwise, 6.0 * rows_h, 6 * static_cast<int>(d.local_experts) + 4));
  ops.back().plain_torch_launches = true;
}

// Transformer Engine's FP8 GEMMs take their rows in blocks of 16 (32 under MXFP8): when any
// local expert's rows are not a multiple, Megatron-Core's TEGroupedMLP pads the experts' input
// (and the routing probabilities) into an aligned buffer before FC1 and unpads FC2's output
// after it (experts.py quantization_padding / quantization_unpadding; TE v2.9
// module/fp8_padding.py and fp8_unpadding.py: one fused_multi_row_padding kernel reading and
// writing every row, the input returned untouched when already aligned). Dropless routing almost
// never lands every expert on a multiple; a capacity padded to one does. Backward: the mirror
// copies of the two gradients.
bool fp8_expert_rows_padded(const Dims& x, const MoeDims& d) {
  if (!x.fp8) return false;
  const std::int64_t align = x.fp8_recipe == Fp8Recipe::Mxfp8 ? 32 : 16;
  for (const std::int64_t r : d.rows)
    if (r % align != 0) return true;
  return false;
}
// One padding (or unpadding) copy of the experts' rows of `width` elements; `probs_bytes` > 0
// adds the routing probabilities' own small copy (one per row, in the router's dtype).
void add_fp8_row_padding(std::vector<LayerOp>& ops, const Dims& x, const MoeDims& d, const std::string& name,
                         std::int64_t width, double probs_bytes) {
  const double rows = dd(d.rows_total);
  ops.push_back(mem(name, OpKind::Elementwise, 2.0 * rows * dd(width) * x.e + 2.0 * rows * probs_bytes,
                    probs_bytes > 0 ? 2 : 1));
}


// GPT-OSS clamps its gated activation's halves (swiglu_limit): Megatron-Core's
// weighted_bias_quick_geglu_impl (fusions/fused_bias_geglu.py, what TEGroupedMLP calls with
// bias_activation_fusion) runs the clamp as eager ops before its fused kernel: a clamp of each
// half and a torch.cat of the two; backward, autograd's clamp_backward of each half and the
// chunk's cat. Measured with that code at GPT-OSS's EP 8 shapes (16,589 rows of 2 x 2,880, BF16)
// on a lent H100 (tools/measure/mcore_clamped_geglu.py, bench/data/h100-mcore-clamped-geglu.json):
// 3 more kernels and 0.48 ms forward, 9 more and 0.93 ms backward, i.e. 13.6 and 26.3 bytes an
// FC1-output element at the measured copy rate (the elementwise rate within 1%); derived from the
// code's reads and writes they were 8 and 15. Without the fusion, glu() clamps each half in place
// of the chunk (2 kernels, each half read and written; backward 2 clamp_backward kernels reading
// the gradient and the input): from the code, not measured.
void add_activation_clamp_fwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, const MoeDims& d) {
  if (!(job.model.swiglu_limit > 0)) return;  // the parser allows it on gated MoE models only
  const double n = dd(d.rows_total) * dd(d.fc1_width);
  ops.push_back(x.fused ? mem("expert_activation_clamp", OpKind::Elementwise, n * 13.6, 3)
                        : mem("expert_activation_clamp", OpKind::Elementwise, n * 2.0 * x.e, 2));
  ops.back().expert_side = true;
}
void add_activation_clamp_bwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, const MoeDims& d) {
  if (!(job.model.swiglu_limit > 0)) return;  // the parser allows it on gated MoE models only
  const double n = dd(d.rows_total) * dd(d.fc1_width);
  ops.push_back(x.fused ? mem("expert_activation_clamp_bwd", OpKind::Elementwise, n * 26.3, 9)
                        : mem("expert_activation_clamp_bwd", OpKind::Elementwise, n * 3.0 * x.e, 2));
}

// The experts' activation without bias_activation_fusion (system.fused_kernels off; Megatron-Core's
// TransformerConfig default, which its moe_perf benchmark keeps): experts.py bias_act_func's eager
// path runs the activation (GeLU; gated, glu(): SiLU of one half, `x_linear + glu_linear_offset`,
// their product), multiplies by the routing probabilities (FP32 under moe_router_dtype fp32, so the
// product is FP32) and casts back to 16 bits; backward, autograd's mirror (the cast, the product's
// two gradients and the probabilities' reduction, the activation's). Fused, weighted_bias_swiglu_impl
// does it in one pass. Measured with that code on a lent H100 (tools/measure/fp8_blockwise_gemm.py,
// bench/data/h100-fp8-blockwise-gemm-run2.json; 3 shapes each, within 1 B of each other), as bytes
// per output element at the copy rate; kernels counted from the code. GPT-OSS's quick_gelu
// (x * sigmoid(1.702 x), three eager kernels where SiLU is one) is priced as SiLU's chain.
struct UnfusedActivation {
  double forward_bytes, backward_bytes;
  int forward_kernels, backward_kernels;
};
UnfusedActivation unfused_activation(bool gated, bool fp32) {
  if (gated) return fp32 ? UnfusedActivation{40.2, 71.3, 5, 9} : UnfusedActivation{29.3, 45.6, 4, 7};
  return fp32 ? UnfusedActivation{22.3, 46.4, 3, 6} : UnfusedActivation{11.7, 21.5, 2, 4};
}

// The experts' activation kernel(s), forward or backward: fused, one pass over the FC1 output and
// the activation output (backward: the gradient in, both halves' gradients out); unfused, the
// measured eager chain.
LayerOp expert_activation(const JobSpec& job, const Dims& x, const MoeDims& d, bool backward) {
  const std::string name = std::string(x.gated ? "expert_swiglu" : "expert_gelu") + (backward ? "_bwd" : "");
  const double rows = dd(d.rows_total);
  if (x.fused) {
    const double elems = backward ? dd(2 * d.fc1_width + d.width) : dd(d.fc1_width + d.width);
    return mem(name, OpKind::Elementwise, rows * elems * x.e, 1);
  }
  const UnfusedActivation u = unfused_activation(x.gated, fp32_probs(job));
  return mem(name, OpKind::Elementwise, rows * dd(d.width) * (backward ? u.backward_bytes : u.forward_bytes),
             backward ? u.backward_kernels : u.forward_kernels);
}

}  // namespace

void add_moe_activation(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const MoeDims d = moe_dims(job, x);
  add_activation_clamp_fwd(ops, job, x, d);
  ops.push_back(expert_activation(job, x, d, false));
  ops.back().expert_side = true;
}

void add_shared_experts_forward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  if (job.model.moe.shared_expert_intermediate_size > 0) add_shared_experts_fwd(ops, job, x);
}

void add_moe_forward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, bool grad_enabled) {
  const MoeDims d = moe_dims(job, x);
  const Dispatch path = dispatch_path(job);
  const double h = dd(x.h);
  const double E = dd(d.experts);
  const double rows = dd(d.rows_total);
  const double pb = prob_bytes(job, x);
  add_router_forward(ops, job, x, d.tokens, grad_enabled);
  if (path == Dispatch::AllToAll) {
    add_dispatch_metadata(ops, job, d.tokens, d.ep * d.etp > 1);
    // Permute: gather each copy's row into expert order. Transformer Engine's fused permute with
    // probabilities (TE v2.9 pytorch/triton/permutation.py): three Triton passes build the row-id
    // map from the routing map, then one kernel moves the rows and their probabilities.
    const double row_id_map_bytes = 8.0 * E * dd(d.tokens);  // int32 [tokens, 2E + 1], written and read
    ops.push_back(mem("permute", OpKind::Elementwise, (dd(d.tokens) + d.copies) * h * x.e + row_id_map_bytes, 4));
  }
  if (d.shared) add_shared_experts_fwd(ops, job, x);
  ops.push_back(comm("ep_dispatch", OpKind::EpDispatch, dispatch_bytes(job, x, d), false));
  ops.back().host_waits_for_gpu = host_syncs_before_dispatch(job);
  add_probs_exchange(ops, job, x, d, "ep_dispatch_probs", OpKind::EpDispatch);
  const std::size_t experts_from = ops.size();
  if (separate_etp_collectives(job, d)) {
    ops.push_back(etp_comm("etp_all_gather", OpKind::TpAllGather, rows * h * x.e, false));
    if (probs_travel(job)) ops.push_back(etp_comm("etp_all_gather_probs", OpKind::TpAllGather, rows * pb, false));
  }
  // Permute on arrival. All-gather: the gathered tokens its local experts need, by the local
  // routing map (dispatch_postprocess; TE's fused permute, 4). DeepEP: each received token once
  // with its top-k indices, made a local routing map (fused_indices_to_multihot, 1) and permuted
  // into its local experts' copies (4) (_DeepepManager.get_permuted_hidden_states_by_experts).
  // That is Megatron-Core's experimental fused path, which Megatron-Bridge's DeepSeek performance
  // configs turn on (v0.2.0 deepseek_llm_pretrain.py enable_megatron_core_experimental); without
  // it _indices_to_multihot runs about 12 PyTorch kernels and a host sync, not priced.
  if (path == Dispatch::AllGather) {
    const double g = gathered_tokens(d);
    ops.push_back(mem("permute", OpKind::Elementwise,
                      (std::min(g, rows) + rows) * h * x.e + 8.0 * dd(d.local_experts) * g, 4));
  } else if (path == Dispatch::DeepEp) {
    const double in = d.received_tokens;
    ops.push_back(mem("permute", OpKind::Elementwise, (in + rows) * h * x.e + 8.0 * dd(d.local_experts) * in, 5));
  }
  // Sort by local expert (the all-to-all's output comes grouped by source rank): TE's
  // moe_sort_chunks_by_index builds its chunk map, then sorts (2).
  const bool sorted = path == Dispatch::AllToAll && d.local_experts > 1;
  if (sorted) ops.push_back(mem("sort_by_local_expert", OpKind::Elementwise, 2.0 * rows * h * x.e, 2));
  // HybridEP pads each expert's rows to the FP8 alignment inside its dispatch (pad_multiple).
  const bool padded = fp8_expert_rows_padded(x, d) && path != Dispatch::HybridEp;
  if (padded) add_fp8_row_padding(ops, x, d, "fp8_pad_expert_input", x.h, pb);
  add_fp8_cast_transpose(ops, x, "expert_fc1_input", rows * h, d.local_experts);
  ops.push_back(expert_gemm(job, x, d, "expert_fc1", d.fc1_width, x.h, false));
  add_moe_activation(ops, job, x);
  if (fc2_saves_original_input(job, x)) {
    add_fp8_cast(ops, x, "expert_fc2_input", rows * dd(d.width), d.local_experts);
  } else {
    add_fp8_cast_transpose(ops, x, "expert_fc2_input", rows * dd(d.width), d.local_experts);
  }
  ops.push_back(expert_gemm(job, x, d, "expert_fc2", x.h, d.width, false));
  if (padded) add_fp8_row_padding(ops, x, d, "fp8_unpad_expert_output", x.h, 0.0);
  add_expert_fc2_bias_fwd(ops, x, d);
  if (sorted) ops.push_back(mem("unsort_by_local_expert", OpKind::Elementwise, 2.0 * rows * h * x.e, 2));
  // Unpermute before the combine sends. DeepEP: the copies merge back into one row per received
  // token (TE's fused unpermute, 1). All-gather: back into every gathered token's row (1), then
  // cast to the probabilities' dtype for the reduce-scatter (token_combine's .to, 1 under FP32).
  if (path == Dispatch::DeepEp) {
    ops.push_back(mem("unpermute", OpKind::Elementwise, (rows + d.received_tokens) * h * x.e, 1));
  } else if (path == Dispatch::AllGather) {
    const double g = gathered_tokens(d);
    ops.push_back(mem("unpermute", OpKind::Elementwise, (rows + g) * h * x.e, 1));
    if (pb != x.e) ops.push_back(mem("combine_cast", OpKind::Elementwise, g * h * (x.e + pb), 1));
  }
  mark_compute_from(ops, experts_from, &LayerOp::expert_side);
  if (separate_etp_collectives(job, d)) {
    ops.push_back(etp_comm("etp_reduce_scatter", OpKind::TpReduceScatter, rows * h * x.e, false));
  }
  ops.push_back(comm("ep_combine", OpKind::EpCombine, combine_bytes(job, x, d), false));
  const std::size_t combine_node_from = ops.size();
  // After the combine (the combine node's kernels). All-to-all: TE's fused unpermute merges the weighted copies back to token
  // order (1) and the shared experts' output is added (1). All-gather: the reduce-scattered sum
  // cast back (1 under FP32). Every path adds the shared experts' output (MoELayer.combine).
  if (path == Dispatch::AllToAll) {
    ops.push_back(mem("unpermute", OpKind::Elementwise, (d.copies + 2.0 * dd(d.tokens)) * h * x.e, d.shared ? 2 : 1));
    mark_compute_from(ops, combine_node_from, &LayerOp::combine_node);
    return;
  }
  if (path == Dispatch::AllGather && pb != x.e) {
    ops.push_back(mem("combine_cast_back", OpKind::Elementwise, dd(d.tokens) * h * (pb + x.e), 1));
  }
  if (d.shared) ops.push_back(mem("shared_experts_add", OpKind::Elementwise, 3.0 * dd(d.tokens) * h * x.e, 1));
  mark_compute_from(ops, combine_node_from, &LayerOp::combine_node);
}

void add_moe_backward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const MoeDims d = moe_dims(job, x);
  const Dispatch path = dispatch_path(job);
  const double h = dd(x.h);
  const double rows = dd(d.rows_total);
  const double pb = prob_bytes(job, x);
  const double g = gathered_tokens(d);
  const std::size_t combine_node_from = ops.size();  // the combine node's gradients first
  if (path == Dispatch::AllToAll) {
    ops.push_back(mem("unpermute_bwd", OpKind::Elementwise, (d.copies + dd(d.tokens)) * h * x.e, 1));
  } else if (path == Dispatch::AllGather && pb != x.e) {
    ops.push_back(mem("combine_cast_back_bwd", OpKind::Elementwise, dd(d.tokens) * h * (x.e + pb), 1));
  }
  mark_compute_from(ops, combine_node_from, &LayerOp::combine_node);
  ops.push_back(comm("ep_combine_bwd", OpKind::EpDispatch, combine_bytes(job, x, d), false));
  const std::size_t experts_from = ops.size();
  if (separate_etp_collectives(job, d)) {
    ops.push_back(etp_comm("etp_all_gather_grad", OpKind::TpAllGather, rows * h * x.e, false));
  }
  // The mirror of the unpermute before the combine: a permute of the gradients into the copies.
  if (path == Dispatch::DeepEp) {
    ops.push_back(mem("unpermute_bwd", OpKind::Elementwise, (d.received_tokens + rows) * h * x.e, 1));
  } else if (path == Dispatch::AllGather) {
    if (pb != x.e) ops.push_back(mem("combine_cast_bwd", OpKind::Elementwise, g * h * (pb + x.e), 1));
    ops.push_back(mem("unpermute_bwd", OpKind::Elementwise, (std::min(g, rows) + rows) * h * x.e, 1));
  }
  const bool sorted = path == Dispatch::AllToAll && d.local_experts > 1;
  if (sorted) ops.push_back(mem("sort_grad_by_local_expert", OpKind::Elementwise, 2.0 * rows * h * x.e, 1));
  add_expert_fc2_bias_bwd(ops, x, d);
  const bool padded = fp8_expert_rows_padded(x, d) && path != Dispatch::HybridEp;
  if (padded) add_fp8_row_padding(ops, x, d, "fp8_pad_expert_output_grad", x.h, 0.0);
  // The experts' saved FP8 inputs need no transpose here: TE's GroupedLinear quantizes its input
  // with the column-wise (transposed) usage in the forward, when the weights need gradients, and
  // keeps only that copy (grouped_linear.py _GroupedLinear.forward: set_usage(columnwise=...),
  // update_usage(rowwise_usage=False)): the forward's cast-transpose wrote it.
  add_fp8_cast_transpose(ops, x, "expert_fc2_grad", rows * h, d.local_experts);
  if (fc2_saves_original_input(job, x)) {
    add_fp8_cast(ops, x, "expert_fc2_input_columnwise", rows * dd(d.width), d.local_experts);
  }
  ops.push_back(expert_gemm(job, x, d, "expert_fc2_dgrad", d.width, x.h, false));
  ops.push_back(expert_gemm(job, x, d, "expert_fc2_wgrad", x.h, d.width, true));
  ops.push_back(expert_activation(job, x, d, true));
  add_activation_clamp_bwd(ops, job, x, d);
  add_fp8_cast_transpose(ops, x, "expert_fc1_grad", rows * dd(d.fc1_width), d.local_experts);
  ops.push_back(expert_gemm(job, x, d, "expert_fc1_dgrad", x.h, d.fc1_width, false));
  ops.push_back(expert_gemm(job, x, d, "expert_fc1_wgrad", d.fc1_width, x.h, true));
  if (padded) add_fp8_row_padding(ops, x, d, "fp8_unpad_expert_input_grad", x.h, pb);
  if (sorted) ops.push_back(mem("unsort_grad_by_local_expert", OpKind::Elementwise, 2.0 * rows * h * x.e, 1));
  // The mirror of the permute on arrival: the copies' gradients merged back per received token
  // (DeepEP) or scattered into every gathered token's row (all-gather).
  if (path == Dispatch::DeepEp) {
    ops.push_back(mem("permute_bwd", OpKind::Elementwise, (rows + d.received_tokens) * h * x.e, 1));
  } else if (path == Dispatch::AllGather) {
    ops.push_back(mem("permute_bwd", OpKind::Elementwise, (rows + g) * h * x.e, 1));
  }
  mark_compute_from(ops, experts_from, &LayerOp::expert_side);
  if (separate_etp_collectives(job, d)) {
    ops.push_back(etp_comm("etp_reduce_scatter_grad", OpKind::TpReduceScatter, rows * h * x.e, false));
    if (probs_travel(job)) {
      ops.push_back(etp_comm("etp_reduce_scatter_probs_grad", OpKind::TpReduceScatter, rows * pb, false));
    }
  }
  ops.push_back(comm("ep_dispatch_bwd", OpKind::EpCombine, dispatch_bytes(job, x, d), false));
  add_probs_exchange(ops, job, x, d, "ep_dispatch_probs_bwd", OpKind::EpCombine);
  if (d.shared) add_shared_experts_bwd(ops, job, x);
  if (path == Dispatch::AllToAll) {
    ops.push_back(mem("permute_bwd", OpKind::Elementwise, (d.copies + dd(d.tokens)) * h * x.e, 1));
  }
  add_router_backward(ops, job, x, d.tokens);
}

}  // namespace megasim::model_detail
