// The rotary position embedding's kernels of a layer pass, fused or Megatron-Core's unfused
// path (YaRN); which layers rotate is layer_ops.cpp's.
#include "op_builders.hpp"

namespace megasim::model_detail {

// Rotary position embeddings: one fused kernel per tensor (Transformer Engine's fused RoPE, which
// Megatron-Core's apply_rope_fusion selects) reads Q and K and writes them rotated; the backward
// rotates dQ and dK back. Memory-bound: read + write of the local Q and K heads.
//
// YaRN is never fused: Megatron-LM (training/arguments.py) and Megatron-Bridge (GPTModelProvider
// .provide) turn apply_rope_fusion off for any position_embedding_type but "rope", and
// Megatron-Core's rope_utils.apply_rotary_pos_emb falls back to the unfused path whenever the
// YaRN attention scale mscale is not 1 (0.1 ln(factor) + 1). The unfused path
// (_apply_rotary_pos_emb_bshd, at 0d8e0714cd29) per tensor: cos, sin of the frequencies, each
// scaled and cast (6 small launches), then t * cos, -x2, cat(-x2, x1), * sin, the add and a final
// cat: 6 launches and 12 passes of the tensor. Its autograd backward: grad * sin, the negation,
// the chunk's cat, grad * cos, the add of t's two gradients, the slices' zero-filled gradients
// and their sum: 9 launches, 17 passes by the code. Measured on a lent H100 with that code at
// GPT-OSS's shapes (tools/measure/mcore_yarn_rope.py, bench/data/h100-mcore-yarn-rope.json): 12
// launches forward, 7 backward per tensor; Q (16.8 M elements) and K (2.1 M) together take
// 0.48 / 0.76 ms, 34 / 54 passes of both at the elementwise rate (the small broadcast kernels run
// far below it; for the larger query alone 26 / 27), the figures used: at wider local tensors
// they over-price. Plain PyTorch ops, so a plain launch's host time. (MLA's YaRN RoPE has a
// fused Triton kernel, fused_mla_yarn_rope_apply.py, and is priced by its own reads and writes below.)
void add_rope(std::vector<LayerOp>& ops, const Dims& x, bool backward) {
  if (!x.rope) return;
  const double elems = dd(x.tokens) * dd(x.q_local + x.kv_local / 2);
  if (x.rope_unfused) {
    LayerOp op = mem(backward ? "rope_unfused_bwd" : "rope_unfused", OpKind::Elementwise,
                     (backward ? 54.0 : 34.0) * elems * x.e, backward ? 2 * 7 : 2 * 12);
    op.plain_torch_launches = true;
    ops.push_back(op);
    return;
  }
  if (x.mla) {
    // Megatron-Core's fused MLA RoPE (fused_mla_yarn_rope_apply.py): the query kernel rewrites the
    // whole query (nope and rope parts); the key-value kernel reads the up-projection's output
    // (nope and value parts, without rope) and writes the key (nope + rope) and the value. The
    // backward kernels move the same bytes the other way. (The shared rope key's read is small.)
    const double q = dd(x.q_local);
    const double kv_in = dd(x.kv_local - x.mla_rope_local);
    ops.push_back(mem(backward ? "rope_bwd" : "rope", OpKind::Elementwise,
                      dd(x.tokens) * (2.0 * q + kv_in + dd(x.kv_local)) * x.e, 2));
    return;
  }
  ops.push_back(mem(backward ? "rope_bwd" : "rope", OpKind::Elementwise, 2.0 * elems * x.e, 2));
}

}  // namespace megasim::model_detail
