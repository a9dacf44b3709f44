// Kernel sequence of one transformer layer (Megatron-LM structure; MegaScale PTB variant).
//
// Byte counts are HBM traffic of the kernels (reads + writes) with 16-bit activations and a
// 1-byte dropout mask. Unfused vs fused (SystemSpec::fused_kernels):
//   norm:            unfused 2 passes over x (statistics, then normalise) + write; fused 1 + write
//   bias + GeLU:     unfused bias-add (r+w) then GeLU (r+w); fused one pass (r+w)
//   bias-dropout-add unfused bias (r+w), dropout (r+w+mask), residual add (2r+w); fused 2r+w+mask
//   without a bias the unfused bias-add is absent; with hidden_dropout 0 torch skips the
//   dropout: bias (if any) and the residual add remain, and the backward is the identity.
//
// FP8 training (training.precision = fp8) follows Transformer Engine v2.9's linears as
// Megatron-Core 0d8e0714 builds them (TELayerNormColumnParallelLinear, TERowParallelLinear, the
// activation in between outside TE): every GEMM of a layer runs with E4M3/E5M2 operands (fprop,
// dgrad and wgrad), and Hopper's FP8 GEMM takes both operands K-major, so each FP8 operand is
// needed as written and transposed:
//   * a LayerNorm feeding a column-parallel linear writes FP8 itself under delayed scaling; under
//     current scaling it writes 16 bits and its amax and a cast follows, block-scaled recipes
//     quantize its output in one kernel; with SP the all-gather moves 1 byte per element and
//     the backward transposes the gathered copy for the wgrad;
//   * the row-parallel linears' inputs are quantized in the forward: FC2's cast and transposed
//     in one kernel (read 2, write 1 + 1 bytes per element); the attention projection's too
//     under delayed scaling, but under any other recipe Megatron-Core has it keep its 16-bit
//     input (set_save_original_input), so the forward writes the row-wise copy only and the
//     backward quantizes the kept input again for the wgrad;
//   * every linear's output gradient is cast and transposed in the backward, except that with SP
//     a row-parallel linear's gradient shard is cast before its all-gather (which then moves 1
//     byte per element) and the gathered FP8 gradient transposed for the wgrad.
// On a GPU with non-TN FP8 GEMMs (Blackwell) no transpose runs and a per-tensor cast writes one
// copy (fp8_casts.cpp). The casts' kernels and bytes follow training.fp8_recipe (fp8_casts.cpp:
// current scaling's amax passes; the amax all-reduce over the TP group under current scaling:
// add_ag). Not modelled: the delayed recipe's amax-history bookkeeping, the weights' casts (once
// a step, from the first micro-batch: about 4 B a parameter), and the 1-byte savings of the fused
// casts over 16-bit outputs.
#include "megasim/model/layer_ops.hpp"

#include <algorithm>

#include "megasim/core/error.hpp"
#include "megasim/model/params.hpp"
#include "op_builders.hpp"

namespace megasim {

bool is_communication(OpKind k) {
  return k == OpKind::TpAllGather || k == OpKind::TpReduceScatter || k == OpKind::TpAllReduce ||
         k == OpKind::CpExchange || k == OpKind::EpDispatch || k == OpKind::EpCombine || k == OpKind::EpAllGather;
}

bool is_ep_exchange(OpKind k) { return k == OpKind::EpDispatch || k == OpKind::EpCombine; }

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Gemm: return "gemm";
    case OpKind::Attention: return "attention";
    case OpKind::Elementwise: return "elementwise";
    case OpKind::Norm: return "norm";
    case OpKind::TpAllGather: return "tp_all_gather";
    case OpKind::TpReduceScatter: return "tp_reduce_scatter";
    case OpKind::TpAllReduce: return "tp_all_reduce";
    case OpKind::CpExchange: return "cp_exchange";
    case OpKind::EpDispatch: return "ep_dispatch";
    case OpKind::EpCombine: return "ep_combine";
    case OpKind::EpAllGather: return "ep_all_gather";
  }
  return "?";
}

double activation_bytes_per_element(Precision) { return 2.0; }

LayerKind layer_kind(const ModelSpec& m, std::int64_t layer) {
  return LayerKind{is_moe_layer(m, layer), is_sliding_layer(m, layer)};
}

std::vector<LayerKind> layer_kinds(const ModelSpec& m) {
  std::vector<LayerKind> kinds;
  for (std::int64_t i = 0; i < m.num_hidden_layers + m.num_nextn_predict_layers; ++i) {
    const LayerKind k = layer_kind(m, i);
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  return kinds;
}

const char* describe(const LayerKind& k) {
  if (k.moe) return k.sliding ? "MoE block, sliding-window attention" : "MoE block, full attention";
  return k.sliding ? "dense MLP, sliding-window attention" : "dense MLP, full attention";
}

namespace model_detail {

Dims dims(const JobSpec& job) { return dims(job, LayerKind{}); }

Dims dims(const JobSpec& job, const LayerKind& kind) {
  const ModelSpec& m = job.model;
  Dims x{};
  x.t = std::max(1, job.parallel.tensor_model_parallel_size);
  x.cp = std::max(1, job.parallel.context_parallel_size);
  x.b = job.training.micro_batch_size;
  x.s_local = job.training.seq_length / x.cp;
  x.tokens = x.b * x.s_local;
  x.h = m.hidden_size;
  x.hd = m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads;
  x.a_local = std::max<std::int64_t>(1, m.num_attention_heads / x.t);
  const std::int64_t g = m.num_key_value_heads > 0 ? m.num_key_value_heads : m.num_attention_heads;
  x.g_local = std::max<std::int64_t>(1, g / x.t);  // KV heads are replicated when g < TP
  x.q_local = x.a_local * x.hd;
  x.kv_local = 2 * x.g_local * x.hd;
  const std::int64_t f = m.intermediate_size > 0 ? m.intermediate_size : 4 * m.hidden_size;
  x.f_local = f / x.t;
  x.gated = m.gated_mlp;
  x.fc1_local = x.gated ? 2 * x.f_local : x.f_local;
  x.span = m.sliding_window && kind.sliding ? std::min(*m.sliding_window, job.training.seq_length)
                                            : job.training.seq_length;
  x.o_local = x.q_local;
  if (is_mla(m)) {
    // MLA: per head, queries and keys of qk_nope + qk_rope, values of v_head_dim; the attention
    // kernel's FLOPs are those of one head dimension of their mean.
    const MlaSpec& a = m.mla;
    x.mla = true;
    x.q_local = x.a_local * (a.qk_nope_head_dim + a.qk_rope_head_dim);
    x.kv_local = x.a_local * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim);
    x.o_local = x.a_local * a.v_head_dim;
    x.mla_rope_local = x.a_local * a.qk_rope_head_dim;
    x.hd = (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) / 2;
  }
  x.vocab_local = padded_vocab_size(m, static_cast<int>(x.t)) / x.t;
  x.e = activation_bytes_per_element(job.training.precision);
  x.main_grad_bytes = job.system.grad_reduce_in_fp32 ? 4.0 : 2.0;
  x.attention_kernel = job.system.attention_kernel;
  x.sp = job.parallel.sequence_parallel && x.t > 1;
  x.fused = job.system.fused_kernels;
  x.ptb = m.use_parallel_residual;
  x.hidden_dropout = m.hidden_dropout > 0;
  x.attention_dropout = m.attention_dropout > 0;
  x.bias = m.attention_bias;
  x.attn_overlap = job.system.tp_overlap_scope == TpOverlapScope::AllLinears;
  x.rope = m.rope;
  x.rope_unfused = m.rope && m.rope_yarn && !x.mla;
  x.qk_norm = has_qk_norm(m);
  x.fp8 = job.training.precision == Precision::Fp8;
  x.fp8_recipe = job.training.fp8_recipe;
  x.fp8_forward_rs = x.fp8 && job.system.tp_overlap && job.system.tp_fp8_forward_reduce_scatter;
  // TE v2.9 utils.py is_non_tn_fp8_gemm_supported: compute capability 10.x, 11.x or 13+.
  const int sm = job.cluster.gpu.architecture_sm;
  x.fp8_non_tn = x.fp8 && ((sm >= 100 && sm < 120) || sm >= 130);
  return x;
}

double dd(std::int64_t v) { return static_cast<double>(v); }

LayerOp gemm(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, double e, bool overlap) {
  LayerOp op;
  op.name = std::move(name);
  op.kind = OpKind::Gemm;
  op.gemm_m = m; op.gemm_n = n; op.gemm_k = k;
  op.flops = 2.0 * dd(m) * dd(n) * dd(k);
  op.bytes = e * (dd(m) * dd(k) + dd(k) * dd(n) + dd(m) * dd(n));
  op.tp_overlap_path = overlap;
  return op;
}

// A transformer layer's linear: FP8 under fp8 training.
namespace {
// A GEMM's FP8 marks: whether it runs in FP8, and with the blockwise recipe's scales.
void set_fp8(LayerOp& op, const Dims& x, bool fp8) {
  op.fp8 = fp8;
  op.fp8_block_scaled = fp8 && x.fp8_recipe == Fp8Recipe::Blockwise;
}
}  // namespace

LayerOp linear(const Dims& x, std::string name, std::int64_t m, std::int64_t n, std::int64_t k, bool overlap) {
  LayerOp op = gemm(std::move(name), m, n, k, x.e, overlap);
  set_fp8(op, x, x.fp8);
  return op;
}

LayerOp mem(std::string name, OpKind kind, double bytes, int kernels) {
  LayerOp op;
  op.name = std::move(name);
  op.kind = kind;
  op.bytes = bytes;
  op.kernels = kernels;
  return op;
}

LinearWeights linear_weights(const std::vector<LayerOp>& ops, bool backward) {
  LinearWeights w;
  for (const LayerOp& op : ops) {
    if (op.kind != OpKind::Gemm || (backward && !op.weight_gradient)) continue;
    const double one = dd(op.gemm_n) * dd(backward ? op.gemm_m : op.gemm_k);
    if (op.expert_rows.empty()) {
      w.dense += one;
    } else {
      w.expert += one * static_cast<double>(op.expert_rows.size());
    }
    ++w.linears;
  }
  return w;
}

LayerOp comm(std::string name, OpKind kind, double bytes, bool overlap) {
  LayerOp op;
  op.name = std::move(name);
  op.kind = kind;
  op.comm_bytes = bytes;
  op.kernels = 1;
  op.tp_overlap_path = overlap;
  return op;
}

// Tokens a norm / residual kernel touches: the local SP shard, or the full micro-batch.
double resid_elems(const Dims& x) { return dd(x.tokens) * dd(x.h) / (x.sp ? dd(x.t) : 1.0); }

void mark_compute_from(std::vector<LayerOp>& ops, std::size_t from, bool LayerOp::*flag) {
  for (std::size_t i = from; i < ops.size(); ++i) {
    if (!is_communication(ops[i].kind)) ops[i].*flag = true;
  }
}

LayerOp norm_fwd(const Dims& x, const char* name) {
  const double n = resid_elems(x);
  return x.fused ? mem(name, OpKind::Norm, 2.0 * n * x.e, 1)
                 : mem(name, OpKind::Norm, 3.0 * n * x.e, 2);
}
LayerOp norm_bwd(const Dims& x, const char* name) {
  const double n = resid_elems(x);  // reads x, dy; writes dx (+ weight-grad partials)
  return x.fused ? mem(name, OpKind::Norm, 3.0 * n * x.e, 2) : mem(name, OpKind::Norm, 5.0 * n * x.e, 4);
}
LayerOp bda_fwd(const Dims& x, const char* name) {
  const double n = resid_elems(x);
  // The residual add (2r+w) always runs and the dropout mask is written once; unfused, the bias
  // add (r+w) and the dropout (r+w) are kernels of their own.
  double bytes = 3.0 * n * x.e + (x.hidden_dropout ? n : 0.0);
  int kernels = 1;
  for (const bool separate : {x.bias, x.hidden_dropout}) {
    if (!x.fused && separate) {
      bytes += 2.0 * n * x.e;
      ++kernels;
    }
  }
  return mem(name, OpKind::Elementwise, bytes, kernels);
}
// Dropout backward reads dy and the mask and writes dx; without dropout the backward is the
// identity and launches nothing. (A bias's gradient reduction is not modelled either way.)
void add_bda_bwd(std::vector<LayerOp>& ops, const Dims& x, const char* name) {
  if (!x.hidden_dropout) return;
  const double n = resid_elems(x);
  ops.push_back(x.fused ? mem(name, OpKind::Elementwise, 2.0 * n * x.e + n, 1)
                        : mem(name, OpKind::Elementwise, 4.0 * n * x.e + n, 2));
}
LayerOp act_fwd(const Dims& x) {
  const double out = dd(x.tokens) * dd(x.f_local);
  const double in = dd(x.tokens) * dd(x.fc1_local);
  const char* name = x.gated ? "swiglu" : "bias_gelu";
  return x.fused ? mem(name, OpKind::Elementwise, (in + out) * x.e, 1)
                 : mem(name, OpKind::Elementwise, (2.0 * in + in + out) * x.e, 2);
}
LayerOp act_bwd(const Dims& x) {
  const double out = dd(x.tokens) * dd(x.f_local);
  const double in = dd(x.tokens) * dd(x.fc1_local);
  const char* name = x.gated ? "swiglu_bwd" : "bias_gelu_bwd";
  return x.fused ? mem(name, OpKind::Elementwise, (2.0 * in + out) * x.e, 1)
                 : mem(name, OpKind::Elementwise, (3.0 * in + out) * x.e, 2);
}

LayerOp attention(const JobSpec& job, const Dims& x, bool backward) {
  LayerOp op;
  op.name = backward ? "attention_core_bwd" : "attention_core";
  op.kind = OpKind::Attention;
  op.attn = AttentionShape{x.b, x.a_local, x.s_local, x.span, x.hd, true, backward, x.attention_dropout,
                           x.attention_kernel};
  // Executed FLOPs: QK^T and PV over the causal (halved) span; backward does 2.5x forward.
  const double fwd = 4.0 * dd(x.b) * dd(x.a_local) * dd(x.s_local) * dd(x.span) * dd(x.hd) / 2.0;
  op.flops = backward ? 2.5 * fwd : fwd;
  // Flash attention: reads Q, K, V (+ O, dO, LSE backward), writes O (dQ, dK, dV backward).
  const double qkv = dd(x.tokens) * dd(x.q_local + x.kv_local) * x.e;
  const double o = dd(x.tokens) * dd(x.o_local) * x.e;
  op.bytes = backward ? 2.0 * qkv + 2.0 * o : qkv + o;
  (void)job;
  return op;
}

}  // namespace model_detail

using namespace model_detail;

std::vector<LayerOp> layer_forward_ops(const JobSpec& job) { return layer_forward_ops(job, LayerKind{}); }

namespace {

// Whether the layer's MoE block runs its first forward without autograd (checkpointed: full
// recompute, or recompute_modules "moe") and again with it before the backward.
bool moe_block_checkpointed(const JobSpec& job) {
  const TrainingSpec& t = job.training;
  return t.recompute == Recompute::Full || (t.recompute == Recompute::Selective && t.recompute_modules.moe);
}

// A dense MLP after its norm: Megatron-Core's TELayerNormColumnParallelLinear FC1 (the norm's
// FP8 cast and the SP all-gather inside it), the activation, the row-parallel FC2 with its
// input's cast, the reduce-scatter.
void add_dense_mlp_fwd(std::vector<LayerOp>& ops, const Dims& x) {
  add_fp8_norm_output_cast(ops, x, "post_attn_norm_output", resid_elems(x));
  add_ag(ops, x, "tp_all_gather_mlp", true, norm_out_bytes(x));
  ops.push_back(linear(x, "fc1", x.tokens, x.fc1_local, x.h, true));
  ops.push_back(act_fwd(x));
  add_fp8_cast_transpose(ops, x, "fc2_input", dd(x.tokens) * dd(x.f_local));
  ops.push_back(linear(x, "fc2", x.tokens, x.h, x.f_local, true));
  add_rs_or_ar(ops, x, "tp_reduce_scatter_mlp", true, forward_rs_bytes(x, true));
}

// `recompute`: this list is the recomputation before the backward, not the first forward.
std::vector<LayerOp> forward_kernels(const JobSpec& job, const LayerKind& kind, bool recompute = false) {
  const Dims x = dims(job, kind);
  std::vector<LayerOp> ops;
  ops.reserve(20);
  const std::int64_t T = x.tokens;
  if (x.ptb) {
    // y = x + Attn(LN(x)) + MLP(LN(x)): one norm, one AG, one RS (MegaScale §3.1, Fig. 3a).
    ops.push_back(norm_fwd(x, "input_norm"));
    add_fp8_norm_output_cast(ops, x, "input_norm_output", resid_elems(x));
    add_ag(ops, x, "tp_all_gather", true, norm_out_bytes(x));
    add_qkv_fwd(ops, job, x);
    ops.push_back(linear(x, "fc1", T, x.fc1_local, x.h, true));
    add_query_reshape_copy(ops, job, x);
    add_qk_norm(ops, x, false);
    add_rope(ops, x, false);
    add_cp(ops, x, "cp_kv_exchange");
    add_value_contiguous_copy(ops, job, x);
    ops.push_back(attention(job, x, false));
    ops.push_back(act_fwd(x));
    add_fp8_cast_transpose(ops, x, "fc2_input", dd(T) * dd(x.f_local));
    add_proj_input_cast_fwd(ops, x, dd(T) * dd(x.o_local));
    ops.push_back(linear(x, "attn_proj", T, x.h, x.o_local, x.attn_overlap));
    ops.push_back(linear(x, "fc2", T, x.h, x.f_local, true));  // accumulates onto attn_proj (beta=1)
    add_rs_or_ar(ops, x, "tp_reduce_scatter", true, forward_rs_bytes(x, true));
    ops.push_back(bda_fwd(x, "bias_dropout_add"));
    return ops;
  }
  ops.push_back(norm_fwd(x, "input_norm"));
  // MLA's norm is a module of its own and its down-projections quantize their inputs themselves
  // (add_qkv_fwd).
  if (!x.mla) {
    add_fp8_norm_output_cast(ops, x, "input_norm_output", resid_elems(x));
    add_ag(ops, x, "tp_all_gather_attn", x.attn_overlap, norm_out_bytes(x));
  }
  add_qkv_fwd(ops, job, x);
  add_query_reshape_copy(ops, job, x);
  add_qk_norm(ops, x, false);
  add_rope(ops, x, false);
  add_cp(ops, x, "cp_kv_exchange");
  add_value_contiguous_copy(ops, job, x);
  ops.push_back(attention(job, x, false));
  add_proj_input_cast_fwd(ops, x, dd(T) * dd(x.o_local));
  ops.push_back(linear(x, "attn_proj", T, x.h, x.o_local, x.attn_overlap));
  add_rs_or_ar(ops, x, "tp_reduce_scatter_attn", x.attn_overlap, forward_rs_bytes(x, x.attn_overlap));
  ops.push_back(bda_fwd(x, "bias_dropout_add_attn"));
  ops.push_back(norm_fwd(x, "post_attn_norm"));
  if (kind.moe) {
    add_moe_forward(ops, job, x, recompute || !moe_block_checkpointed(job));
  } else {
    add_dense_mlp_fwd(ops, x);
  }
  ops.push_back(bda_fwd(x, "bias_dropout_add_mlp"));
  ops.back().combine_node = kind.moe;  // MoE: in the combine node (LayerOp::combine_node)
  return ops;
}

}  // namespace

namespace model_detail {

// dgrad: dX[T,k] = dY[T,n] W^T ; wgrad: dW[k,n] = X^T[k,T] dY[T,n].
// Returns the dgrad GEMM's position in `ops`; its wgrad GEMM follows it directly.
std::size_t add_gemm_bwd(std::vector<LayerOp>& ops, const Dims& x, const char* name, std::int64_t n,
                         std::int64_t k, bool overlap, bool fp8) {
  const std::size_t dgrad = ops.size();
  ops.push_back(gemm(std::string(name) + "_dgrad", x.tokens, k, n, x.e, overlap));
  set_fp8(ops.back(), x, fp8);
  ops.push_back(gemm(std::string(name) + "_wgrad", k, n, x.tokens, x.e, overlap));
  set_fp8(ops.back(), x, fp8);
  ops.back().weight_gradient = true;
  ops.back().main_grad_bytes = x.main_grad_bytes;
  return dgrad;
}
// A layer linear's backward (FP8 under fp8 training): its output gradient (n features) is cast
// and transposed first (every activation runs outside TE in Megatron-Core's layers, so no
// activation backward writes the FP8 copies itself). Returns the dgrad GEMM's position
// (add_gemm_bwd).
std::size_t add_linear_bwd(std::vector<LayerOp>& ops, const Dims& x, const char* name, std::int64_t n,
                           std::int64_t k, bool overlap) {
  add_fp8_cast_transpose(ops, x, std::string(name) + "_grad", dd(x.tokens) * dd(n));
  return add_gemm_bwd(ops, x, name, n, k, overlap, x.fp8);
}

// A row-parallel linear's backward (n = h output features): with a gathered FP8 gradient the
// dgrad GEMM reads it as gathered and the wgrad GEMM its transpose; otherwise as add_linear_bwd.
void add_row_linear_bwd(std::vector<LayerOp>& ops, const Dims& x, const char* name, std::int64_t k, bool overlap) {
  if (!fp8_gathered_grad(x)) {
    add_linear_bwd(ops, x, name, x.h, k, overlap);
    return;
  }
  add_gemm_bwd(ops, x, name, x.h, k, overlap, true);
  // The transpose runs between the dgrad and the wgrad GEMM, which reads it (none on a non-TN GPU).
  if (!x.fp8_non_tn) ops.insert(ops.end() - 1, fp8_transpose(std::string(name) + "_grad", dd(x.tokens) * dd(x.h)));
}

}  // namespace model_detail

namespace {

std::vector<LayerOp> backward_kernels(const JobSpec& job, const LayerKind& kind) {
  const Dims x = dims(job, kind);
  std::vector<LayerOp> ops;
  ops.reserve(28);
  const bool ffn = true;
  const double norm_out = dd(x.tokens) * dd(x.h);
  if (x.ptb) {
    add_bda_bwd(ops, x, "bias_dropout_add_bwd");
    add_grad_ag(ops, x, "tp_all_gather_grad", "output", ffn);  // backward of the forward RS
    add_row_linear_bwd(ops, x, "fc2", x.f_local, ffn);
    add_proj_input_cast_bwd(ops, x, dd(x.tokens) * dd(x.o_local));
    add_row_linear_bwd(ops, x, "attn_proj", x.o_local, x.attn_overlap);
    ops.push_back(act_bwd(x));
    ops.push_back(attention(job, x, true));
    add_cp(ops, x, "cp_kv_grad_exchange");
    add_rope(ops, x, true);
    add_qk_norm(ops, x, true);
    add_qkv_grad_concat(ops, job, x);
    if (fp8_norm_output_transposed_in_backward(x)) ops.push_back(fp8_transpose("input_norm_output", norm_out));
    const std::size_t fc1 = add_linear_bwd(ops, x, "fc1", x.fc1_local, x.h, ffn);
    const std::size_t qkv = add_qkv_bwd(ops, job, x);
    add_col_bwd_comm(ops, x, "shared", ffn, {fc1, qkv}, norm_out_bytes(x));
    ops.push_back(norm_bwd(x, "input_norm_bwd"));
    return ops;
  }
  const std::size_t bda_from = ops.size();
  add_bda_bwd(ops, x, "bias_dropout_add_mlp_bwd");
  if (kind.moe) mark_compute_from(ops, bda_from, &LayerOp::combine_node);  // LayerOp::combine_node
  if (kind.moe) {
    add_moe_backward(ops, job, x);
  } else {
    add_grad_ag(ops, x, "tp_all_gather_grad_mlp", "fc2", ffn);
    add_row_linear_bwd(ops, x, "fc2", x.f_local, ffn);
    ops.push_back(act_bwd(x));
    if (fp8_norm_output_transposed_in_backward(x)) ops.push_back(fp8_transpose("post_attn_norm_output", norm_out));
    const std::size_t fc1 = add_linear_bwd(ops, x, "fc1", x.fc1_local, x.h, ffn);
    add_col_bwd_comm(ops, x, "mlp", ffn, {fc1}, norm_out_bytes(x));
  }
  ops.push_back(norm_bwd(x, "post_attn_norm_bwd"));
  const std::size_t attention_from = ops.size();
  add_bda_bwd(ops, x, "bias_dropout_add_attn_bwd");
  add_grad_ag(ops, x, "tp_all_gather_grad_attn", "attn_proj", x.attn_overlap);
  add_proj_input_cast_bwd(ops, x, dd(x.tokens) * dd(x.o_local));
  add_row_linear_bwd(ops, x, "attn_proj", x.o_local, x.attn_overlap);
  ops.push_back(attention(job, x, true));
  add_cp(ops, x, "cp_kv_grad_exchange");
  add_rope(ops, x, true);
  add_qk_norm(ops, x, true);
  add_qkv_grad_concat(ops, job, x);
  if (!x.mla && fp8_norm_output_transposed_in_backward(x)) ops.push_back(fp8_transpose("input_norm_output", norm_out));
  const std::size_t qkv = add_qkv_bwd(ops, job, x);
  if (!x.mla) add_col_bwd_comm(ops, x, "attn", x.attn_overlap, {qkv}, norm_out_bytes(x));  // MLA's: add_qkv_bwd
  ops.push_back(norm_bwd(x, "input_norm_bwd"));
  mark_compute_from(ops, attention_from, &LayerOp::attention_block);
  return ops;
}

// The forward's kernels as run: those of the layer and autocast's casts. Full recompute replays
// exactly these; the forward pass adds FSDP's staging of the gathered parameters.
std::vector<LayerOp> forward_compute_ops(const JobSpec& job, const LayerKind& kind, bool recompute = false) {
  std::vector<LayerOp> ops = forward_kernels(job, kind, recompute);
  if (job.system.autocast_fp32_weights) add_autocast_casts(ops, dims(job, kind), false);
  return ops;
}

}  // namespace

std::vector<LayerOp> layer_forward_ops(const JobSpec& job, const LayerKind& kind) {
  std::vector<LayerOp> ops = forward_compute_ops(job, kind);
  if (job.system.fsdp_staging != FsdpStaging::None) {
    add_fsdp_staging(ops, job, dims(job, kind), linear_weights(ops, false), false);
  }
  return ops;
}

std::vector<LayerOp> layer_backward_ops(const JobSpec& job) { return layer_backward_ops(job, LayerKind{}); }

std::vector<LayerOp> layer_backward_ops(const JobSpec& job, const LayerKind& kind) {
  std::vector<LayerOp> ops = backward_kernels(job, kind);
  if (job.system.autocast_fp32_weights) add_autocast_casts(ops, dims(job, kind), true);
  if (job.system.fsdp_staging != FsdpStaging::None) {
    add_fsdp_staging(ops, job, dims(job, kind), linear_weights(forward_kernels(job, kind), false), true);
  }
  return ops;
}

namespace {

// Megatron-Core's selective recompute, module by module (training.recompute_modules): the
// forward kernels of each module that was not kept, run again before its backward.
std::vector<LayerOp> selective_recompute_ops(const JobSpec& job, const LayerKind& kind) {
  const RecomputeModules& r = job.training.recompute_modules;
  const Dims x = dims(job, kind);
  std::vector<LayerOp> ops;
  if (r.layernorm) {
    ops.push_back(norm_fwd(x, "input_norm"));
    ops.push_back(norm_fwd(x, "post_attn_norm"));
  }
  if (r.mla_up_proj && x.mla) add_mla_up_projections(ops, job, x);
  if (r.core_attn) {
    add_value_contiguous_copy(ops, job, x);
    ops.push_back(attention(job, x, false));
  }
  if (!kind.moe && r.mlp) {
    // The MLP module checkpointed whole: its FC1 carries the norm (TELayerNormColumnParallelLinear).
    ops.push_back(norm_fwd(x, "post_attn_norm"));
    add_dense_mlp_fwd(ops, x);
  }
  if (kind.moe) {
    if (r.moe) {
      add_moe_forward(ops, job, x, true);
    } else {
      if (r.moe_act) add_moe_activation(ops, job, x);
      if (r.shared_experts) add_shared_experts_forward(ops, job, x);
    }
  }
  return ops;
}

}  // namespace

std::vector<LayerOp> layer_recompute_ops(const JobSpec& job) { return layer_recompute_ops(job, LayerKind{}); }

std::vector<LayerOp> moe_block_forward_ops(const JobSpec& job) {
  std::vector<LayerOp> ops;
  if (is_moe(job.model)) add_moe_forward(ops, job, dims(job, LayerKind{true, false}), true);
  return ops;
}

std::vector<LayerOp> moe_block_backward_ops(const JobSpec& job) {
  std::vector<LayerOp> ops;
  if (is_moe(job.model)) add_moe_backward(ops, job, dims(job, LayerKind{true, false}));
  return ops;
}

std::vector<LayerOp> layer_recompute_ops(const JobSpec& job, const LayerKind& kind) {
  switch (job.training.recompute) {
    case Recompute::None: return {};
    case Recompute::Selective: return selective_recompute_ops(job, kind);
    case Recompute::Full: return forward_compute_ops(job, kind, true);
  }
  return {};
}

}  // namespace megasim
