// The attention block's input projections: Megatron's fused QKV linear, or multi-head latent
// attention's low-rank projections (Megatron-Core MLASelfAttention): the query and key/value
// down-projections, duplicated on every TP rank, each followed by a norm of its latent, then the
// column-parallel up-projections to the local heads.
#include "op_builders.hpp"

namespace megasim::model_detail {

namespace {

struct MlaWidths {
  std::int64_t q_latent, kv_latent, kv_down;  // kv_down: kv_lora_rank + the shared rope key
  std::int64_t q_up, kv_up;                   // local heads' query (nope + rope), key nope + value
};

MlaWidths mla_widths(const JobSpec& job, const Dims& x) {
  const MlaSpec& a = job.model.mla;
  return MlaWidths{a.q_lora_rank, a.kv_lora_rank, a.kv_lora_rank + a.qk_rope_head_dim,
                   x.a_local * (a.qk_nope_head_dim + a.qk_rope_head_dim),
                   x.a_local * (a.qk_nope_head_dim + a.v_head_dim)};
}

}  // namespace

void add_qkv_fwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const std::int64_t T = x.tokens;
  if (!x.mla) {
    ops.push_back(linear(x, "qkv", T, x.q_local + x.kv_local, x.h, x.attn_overlap));
    return;
  }
  const MlaWidths w = mla_widths(job, x);
  // Under FP8 each duplicated down-projection (TELinear, parallel_mode "duplicated") quantizes its
  // 16-bit input, this rank's shard, both ways at once: nothing is gathered.
  if (w.q_latent > 0) {
    add_fp8_cast_transpose(ops, x, "q_down_input", resid_elems(x));
    ops.push_back(linear(x, "q_down", T, w.q_latent, x.h, false));
    ops.push_back(mem("q_latent_norm", OpKind::Norm, 2.0 * dd(T) * dd(w.q_latent) * x.e, 1));
    ops.push_back(linear(x, "q_up", T, w.q_up, w.q_latent, x.attn_overlap));
  } else {
    ops.push_back(linear(x, "q_proj", T, w.q_up, x.h, x.attn_overlap));
  }
  add_fp8_cast_transpose(ops, x, "kv_down_input", resid_elems(x));
  ops.push_back(linear(x, "kv_down", T, w.kv_down, x.h, false));
  ops.push_back(mem("kv_latent_norm", OpKind::Norm, 2.0 * dd(T) * dd(w.kv_latent) * x.e, 1));
  ops.push_back(linear(x, "kv_up", T, w.kv_up, w.kv_latent, x.attn_overlap));
}

void add_mla_up_projections(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const MlaWidths w = mla_widths(job, x);
  if (w.q_latent > 0) ops.push_back(linear(x, "q_up", x.tokens, w.q_up, w.q_latent, x.attn_overlap));
  ops.push_back(linear(x, "kv_up", x.tokens, w.kv_up, w.kv_latent, x.attn_overlap));
  // RoPE on the rope part of the queries and the shared key (Megatron-Core recomputes it with them).
  const double rope = dd(x.tokens) * dd(x.a_local + 1) * dd(job.model.mla.qk_rope_head_dim);
  ops.push_back(mem("mla_rope", OpKind::Elementwise, 2.0 * rope * x.e, 1));
}

std::size_t add_qkv_bwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  if (!x.mla) return add_linear_bwd(ops, x, "qkv", x.q_local + x.kv_local, x.h, x.attn_overlap);
  const MlaWidths w = mla_widths(job, x);
  const std::int64_t T = x.tokens;
  add_linear_bwd(ops, x, "kv_up", w.kv_up, w.kv_latent, x.attn_overlap);
  ops.push_back(mem("kv_latent_norm_bwd", OpKind::Norm, 3.0 * dd(T) * dd(w.kv_latent) * x.e, 1));
  const std::size_t kv_down = add_linear_bwd(ops, x, "kv_down", w.kv_down, x.h, false);
  if (w.q_latent == 0) {
    add_linear_bwd(ops, x, "q_proj", w.q_up, x.h, x.attn_overlap);
    return kv_down;
  }
  add_linear_bwd(ops, x, "q_up", w.q_up, w.q_latent, x.attn_overlap);
  ops.push_back(mem("q_latent_norm_bwd", OpKind::Norm, 3.0 * dd(T) * dd(w.q_latent) * x.e, 1));
  add_linear_bwd(ops, x, "q_down", w.q_latent, x.h, false);
  return kv_down;
}

}  // namespace megasim::model_detail
