// RMSNorm of the query and key (qk_layernorm: Qwen3 and Gemma 3 per head, OLMo over the projection), between
// the QKV projection and the rotary embedding.
#include "op_builders.hpp"

namespace megasim::model_detail {

// Megatron-Core (transformer/attention.py get_query_key_value_tensors, at 0d8e0714cd29) splits
// the fused QKV output into strided views; `query.reshape` to [s, b, heads, head_dim] copies the
// non-contiguous slice, and q_layernorm / k_layernorm are Transformer Engine's RMSNorm (TENorm),
// whose op makes the key slice contiguous first (TE v2.9 ops/basic/rmsnorm.py `input_.contiguous()`).
// Forward: two copies and two norm kernels, each reading and writing the local Q or K once. (The
// query's reshape copy is Megatron-Core's for GQA models with the norm or without: counted here
// with the norm, by qkv_split_ops.cpp without it.)
// Backward: TE's RMSNorm backward (the data gradient, then its dgamma finalize kernel) per tensor
// and the two weights' main_grad accumulations; the copies' gradients are views that the QKV
// split's backward concatenates anyway. Memory-bound: Q and K read and written, and the backward
// reads the input and the gradient and writes the input gradient. Counted from the code, not
// measured. MLA normalises its latents inside the attention projections instead.
void add_qk_norm(std::vector<LayerOp>& ops, const Dims& x, bool backward) {
  if (!x.qk_norm) return;
  const double k_local = dd(x.kv_local) / 2.0;  // kv_local holds K and V of equal width
  const double elems = dd(x.tokens) * (dd(x.q_local) + k_local);
  if (backward) {
    ops.push_back(mem("qk_norm_bwd", OpKind::Norm, 3.0 * elems * x.e, 6));
    return;
  }
  ops.push_back(mem("qk_norm_input_copies", OpKind::Elementwise, 2.0 * elems * x.e, 2));
  ops.push_back(mem("qk_norm", OpKind::Norm, 2.0 * elems * x.e, 2));
}

}  // namespace megasim::model_detail
