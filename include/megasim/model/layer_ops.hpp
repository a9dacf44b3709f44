#pragma once
// The kernel sequence of one transformer layer for one micro-batch on one TP (and CP) rank.
// Consumers: hw/ (kernel times), the analytic estimator and the event-engine workload builder.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"

namespace megasim {

enum class OpKind {
  Gemm,             // tensor-core matmul; gemm_m/n/k set
  Attention,        // attention core (flash or unfused); attn set
  Elementwise,      // memory-bound pointwise kernel(s)
  Norm,             // LayerNorm / RMSNorm (memory-bound, lower achieved bandwidth)
  TpAllGather,      // communication placeholders: comm_bytes = full (gathered) tensor size
  TpReduceScatter,
  TpAllReduce,
  CpExchange,       // context-parallel K/V ring exchange; comm_bytes sent per rank
  EpDispatch,       // MoE token dispatch / combine over the expert-parallel group; comm_bytes =
  EpCombine,        //   the busiest EP rank's received copies x h (routing skew and drops included),
                    //   or x 4 bytes for the routing probabilities' exchange beside the tokens'
  EpAllGather,      // all-gather over the expert grid's ETP x EP group on the compute stream (the
                    //   all-to-all dispatcher's token counts); comm_bytes = the gathered size
};
bool is_communication(OpKind k);
// An MoE dispatch or combine (tokens or routing probabilities) over the expert-parallel group.
bool is_ep_exchange(OpKind k);
const char* to_string(OpKind k);

// The attention kernel a layer runs: AttentionKernel (megasim/config/specs.hpp), the job's
// system.attention_kernel.

struct AttentionShape {
  std::int64_t batch = 0;
  std::int64_t heads = 0;        // query heads on this rank (a / TP)
  std::int64_t seq_q = 0;        // queries on this rank (s / CP)
  std::int64_t seq_kv_span = 0;  // keys each query may attend to at most (min(window, s))
  std::int64_t head_dim = 0;
  bool causal = true;
  bool backward = false;
  bool dropout = true;           // attention-probability dropout runs (attention_dropout > 0)
  AttentionKernel kernel = AttentionKernel::FlashV2;
};

struct LayerOp {
  std::string name;
  OpKind kind = OpKind::Elementwise;
  double flops = 0;               // FLOPs the kernel really executes (attention: causal-halved)
  double bytes = 0;               // HBM bytes read + written (compute ops)
  double upcast_bytes = 0;        // of an elementwise op's bytes, those of BF16 -> FP32 casts (slower)
  double comm_bytes = 0;          // communication ops only
  std::int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;
  AttentionShape attn;            // Attention only
  int kernels = 1;                // kernel launches this op stands for
  // On the path TP overlap pipelines: the FFN linears and their AG/RS (MegaScale), or every
  // parallel linear of the layer with tp_overlap_scope = all-linears (Transformer Engine).
  bool tp_overlap_path = false;
  // GEMM with FP8 operands: a transformer layer's linear under fp8 training (Transformer Engine
  // runs fprop, dgrad and wgrad in FP8; the LM head and attention stay 16-bit).
  bool fp8 = false;
  // ... with block scales (training.fp8_recipe blockwise: 1x128 activation / gradient scales,
  // 128x128 weight scales), which Hopper's cuBLASLt applies in the GEMM's main loop.
  bool fp8_block_scaled = false;
  bool weight_gradient = false;   // wgrad GEMM: reduces over the tokens (k = tokens); every other
                                  // layer GEMM has the tokens as its rows (m)
  // wgrad GEMMs: bytes per element of the main-grad buffer they accumulate into (4 with FP32
  // gradient reduction, else 2; Megatron's gradient-accumulation fusion). 0 for every other op.
  double main_grad_bytes = 0;
  // Backward collectives of a column-parallel linear that Megatron issues asynchronously: the
  // positions, in the same op list, of the GEMMs that run beside it (the linears' dgrad GEMMs
  // for an all-gather, their wgrad GEMMs for a reduce-scatter / all-reduce); all come before it.
  // Empty for every other op.
  std::vector<std::size_t> beside_gemms;
  // Expert GEMMs of an MoE block: each local expert's token rows (fprop/dgrad: its m; wgrad: its
  // k, the reduction), n and k (wgrad: m and n) shared; gemm_m / gemm_k hold the sums. Run as
  // one grouped kernel (system.moe_grouped_gemm) or as a loop of GEMMs. Empty for other ops.
  std::vector<std::int64_t> expert_rows;
  bool grouped = false;
  // A TP collective over the expert grid's ETP group (the routed experts' tensor parallelism),
  // not the attention's TP group.
  bool expert_tensor_parallel = false;
  bool shared_expert = false;  // a shared expert's kernel (what moe_shared_expert_overlap hides EP traffic behind)
  // A routed-expert kernel between the EP dispatch and the combine (sorting, casts, the expert
  // GEMMs, activation, bias): what Megatron-Core's merged 1F1B schedule runs as the layer's
  // "mlp" node, beside the other pass's exchanges.
  bool expert_side = false;
  // A kernel of Megatron-Core's combine node: after the combine's exchange in the forward (the
  // unpermute, the MLP's bias-dropout-add), before its gradient's exchange in the backward. The
  // merged 1F1B schedule runs that node on the communication stream, serial with the exchange
  // (models/gpt/fine_grained_callables.py submodule_combine_forward).
  bool combine_node = false;
  // A backward kernel of the attention block (after the MLP's norm backward): its weight
  // gradients are what Megatron-Core's merged step delays to a pair's tail (attn.backward_dw).
  bool attention_block = false;
  // The host blocks before launching this op until the GPU has run everything before it
  // (dropless MoE: the dispatch needs the token counts on the host). Pass timing: pass_times.cpp.
  bool host_waits_for_gpu = false;
  // Launched by a plain PyTorch loop outside the framework's module code: each launch costs the
  // host a plain eager op's time (host_dispatch_s), not that times the framework's per-launch
  // factor (system.host_launch_factor_*, measured on whole Megatron-Core layers).
  bool plain_torch_launches = false;
};

// What makes one layer's kernels differ from another's: an MoE block or a dense MLP, and
// attention within the sliding window or over the whole sequence.
struct LayerKind {
  bool moe = false;
  bool sliding = true;  // attends within model.sliding_window when it is set
  bool operator==(const LayerKind&) const = default;
};
LayerKind layer_kind(const ModelSpec& m, std::int64_t layer);
// The distinct kinds of the model's layers (MTP modules included), in order of first appearance.
std::vector<LayerKind> layer_kinds(const ModelSpec& m);
const char* describe(const LayerKind& k);  // "dense MLP, full attention", ...

// One layer, one micro-batch, this rank. Forward, backward (dgrad + wgrad per GEMM, reverse
// order, communication mirrored: forward AG <-> backward RS; with SP the input is all-gathered
// again for wgrad) and the extra forward work replayed by recomputation (selective: attention
// core; full: the whole forward, communication included).
std::vector<LayerOp> layer_forward_ops(const JobSpec& job, const LayerKind& kind);
std::vector<LayerOp> layer_backward_ops(const JobSpec& job, const LayerKind& kind);
std::vector<LayerOp> layer_recompute_ops(const JobSpec& job, const LayerKind& kind);
// An MoE layer's MoE block alone (router to unpermute, shared experts beside): Megatron-Core's
// MoELayer, what its moe_perf benchmark times. Empty for a dense model.
std::vector<LayerOp> moe_block_forward_ops(const JobSpec& job);
std::vector<LayerOp> moe_block_backward_ops(const JobSpec& job);
// The same for a dense layer (LayerKind{}).
std::vector<LayerOp> layer_forward_ops(const JobSpec& job);
std::vector<LayerOp> layer_backward_ops(const JobSpec& job);
std::vector<LayerOp> layer_recompute_ops(const JobSpec& job);

// First stage: embedding lookup (+ positions) and its TP reduction. Last stage: final norm,
// LM-head GEMM and vocab-parallel cross-entropy.
std::vector<LayerOp> embedding_forward_ops(const JobSpec& job);
std::vector<LayerOp> embedding_backward_ops(const JobSpec& job);
std::vector<LayerOp> lm_head_forward_ops(const JobSpec& job);
std::vector<LayerOp> lm_head_backward_ops(const JobSpec& job);
// Each multi-token-prediction module's block before its transformer layer (last stage): the two
// norms, the concatenation and eh_proj with their gathers (mtp_ops.cpp).
std::vector<LayerOp> mtp_projection_forward_ops(const JobSpec& job);
std::vector<LayerOp> mtp_projection_backward_ops(const JobSpec& job);

// Bytes per element of activations for the precision (fp8 keeps bf16 activations between
// kernels, as Transformer Engine does).
double activation_bytes_per_element(Precision p);

}  // namespace megasim
