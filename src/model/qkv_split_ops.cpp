// The copies Megatron-Core's self-attention makes around its fused QKV output
// (system.qkv_split_copies), read from Megatron-Core 0d8e0714cd29 and Transformer Engine v2.9 on
// the default path (split QKV, fused RoPE, TE DotProductAttention with cuDNN's fused attention,
// sbhd). Each is one memory-bound copy kernel, read and written once. Counted from the code, not
// measured. MLA's projections are separate GEMMs and make none of them.
#include "op_builders.hpp"

namespace megasim::model_detail {

namespace {

bool copies_apply(const JobSpec& job, const Dims& x) { return job.system.qkv_split_copies && !x.mla; }

}  // namespace

// transformer/attention.py get_query_key_value_tensors splits the QKV output, viewed as
// [s, b, groups, (heads/groups + 2) x head_dim], into strided views and reshapes the query to
// [s, b, heads, head_dim]: with GQA and two or more local groups no view can merge the group and
// head dimensions (the group stride holds the key and value too), so reshape copies the local
// query. With one local group, or MHA, it is a view. Under the QK norm its copy is already
// qk_norm_input_copies' (qk_norm_ops.cpp).
void add_query_reshape_copy(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  if (!copies_apply(job, x) || x.qk_norm) return;
  if (x.g_local < 2 || x.a_local == x.g_local) return;
  ops.push_back(mem("query_reshape_copy", OpKind::Elementwise, 2.0 * dd(x.tokens) * dd(x.q_local) * x.e, 1));
}

// TE's get_qkv_layout (attention/dot_product_attention/utils.py) finds the key made contiguous
// by the RoPE or QK-norm kernel beside the value still a strided view of the QKV output, a layout
// it does not take, and makes all three contiguous: only the value copies. It runs again
// wherever the attention core is recomputed.
void add_value_contiguous_copy(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  if (!copies_apply(job, x) || !(x.rope || x.qk_norm)) return;
  const double v_local = dd(x.kv_local) / 2.0;  // kv_local holds K and V of equal width
  ops.push_back(mem("value_contiguous_copy", OpKind::Elementwise, 2.0 * dd(x.tokens) * v_local * x.e, 1));
}

// Backward of the split: Megatron-Core's import of TE's _SplitAlongDim fails under TE >= 2.3
// (extensions/transformer_engine.py), so the split is torch.split, whose backward concatenates
// the query, key and value gradients into the QKV output's gradient (at::cat) - and they are
// separate buffers anyway (cuDNN's sbhd_sbhd_sbhd gradients, the RoPE backward's new tensors).
void add_qkv_grad_concat(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  if (!copies_apply(job, x)) return;
  ops.push_back(mem("qkv_grad_concat", OpKind::Elementwise, 2.0 * dd(x.tokens) * dd(x.q_local + x.kv_local) * x.e, 1));
}

}  // namespace megasim::model_detail
