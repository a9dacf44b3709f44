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

// This rank's share of the tokens: its sequence shard under SP, every token without.
Dims on_shard(const Dims& x) {
  Dims s = x;
  if (x.sp) s.tokens = x.tokens / x.t;
  return s;
}

// A latent's norm (fused into the up-projection, TELayerNormColumnParallelLinear) on this rank's
// shard, its FP8 cast, and under SP the all-gather of the latent the up-projection runs on.
void add_latent_norm_and_gather(std::vector<LayerOp>& ops, const Dims& x, const Dims& xs, const std::string& name,
                                std::int64_t latent, bool overlap) {
  const double shard = dd(xs.tokens) * dd(latent);
  ops.push_back(mem(name + "_norm", OpKind::Norm, 2.0 * shard * x.e, 1));
  add_fp8_norm_output_cast(ops, x, name + "_norm_output", shard);
  add_ag(ops, x, ("tp_all_gather_" + name).c_str(), overlap, norm_out_bytes(x), latent);
}

// Without a query latent: the query projection, a plain column-parallel TE linear on the hidden
// states behind MLA's own norm.
void add_q_proj_fwd(std::vector<LayerOp>& ops, const Dims& x, const MlaWidths& w) {
  add_column_input_cast(ops, x, "q_proj_input");
  add_ag(ops, x, "tp_all_gather_attn", x.attn_overlap, norm_out_bytes(x));
  ops.push_back(linear(x, "q_proj", x.tokens, w.q_up, x.h, x.attn_overlap));
}

}  // namespace

// MLA (Megatron-Core multi_latent_attention.py get_query_key_value_tensors): the down-projections
// are duplicated TELinears on this rank's sequence shard (nothing gathered: each quantizes its own
// 16-bit input both ways under FP8); the up-projections are column-parallel and gather the
// latents, smaller than the hidden states, under SP; the shared rope key is gathered too.
// Without a query latent the query projection is column-parallel on the gathered hidden states.
void add_qkv_fwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const std::int64_t T = x.tokens;
  if (!x.mla) {
    ops.push_back(linear(x, "qkv", T, x.q_local + x.kv_local, x.h, x.attn_overlap));
    return;
  }
  const MlaWidths w = mla_widths(job, x);
  const Dims xs = on_shard(x);
  const double shard_h = dd(xs.tokens) * dd(x.h);
  if (w.q_latent > 0) {
    add_fp8_cast_transpose(ops, x, "q_down_input", shard_h);
    ops.push_back(linear(x, "q_down", xs.tokens, w.q_latent, x.h, false));
  }
  add_fp8_cast_transpose(ops, x, "kv_down_input", shard_h);
  ops.push_back(linear(x, "kv_down", xs.tokens, w.kv_down, x.h, false));
  add_ag(ops, x, "tp_all_gather_rope_key", false, x.e, job.model.mla.qk_rope_head_dim);
  if (w.q_latent > 0) {
    add_latent_norm_and_gather(ops, x, xs, "q_latent", w.q_latent, x.attn_overlap);
    ops.push_back(linear(x, "q_up", T, w.q_up, w.q_latent, x.attn_overlap));
  } else {
    add_q_proj_fwd(ops, x, w);
  }
  add_latent_norm_and_gather(ops, x, xs, "kv_latent", w.kv_latent, x.attn_overlap);
  ops.push_back(linear(x, "kv_up", T, w.kv_up, w.kv_latent, x.attn_overlap));
}

// recompute_modules mla_up_proj: the checkpointed up-projections with their fused norms and
// gathers, and the RoPE of their outputs.
void add_mla_up_projections(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  const MlaWidths w = mla_widths(job, x);
  const Dims xs = on_shard(x);
  if (w.q_latent > 0) {
    add_latent_norm_and_gather(ops, x, xs, "q_latent", w.q_latent, x.attn_overlap);
    ops.push_back(linear(x, "q_up", x.tokens, w.q_up, w.q_latent, x.attn_overlap));
  } else {
    add_q_proj_fwd(ops, x, w);  // the checkpointed function runs linear_q_proj too
  }
  add_latent_norm_and_gather(ops, x, xs, "kv_latent", w.kv_latent, x.attn_overlap);
  ops.push_back(linear(x, "kv_up", x.tokens, w.kv_up, w.kv_latent, x.attn_overlap));
  // The RoPE again, as the forward runs it: the checkpointed qkv_up_proj_and_rope_apply
  // (multi_latent_attention.py) calls fused_apply_mla_rope_for_q / _for_kv, which rewrite the
  // whole query, key and value, not only their rope parts.
  add_rope(ops, x, false);
}

namespace {

// An up-projection's backward: its output gradient cast, dgrad and wgrad on every token; the
// gathered latent's transpose for the wgrad; the latent's gradient reduce-scattered (all-reduced
// without SP) back to the shard and the latent gathered again for the wgrad; the norm's backward
// on the shard.
void add_up_projection_bwd(std::vector<LayerOp>& ops, const Dims& x, const Dims& xs, const std::string& name,
                           std::int64_t out, std::int64_t latent) {
  if (fp8_norm_output_transposed_in_backward(x)) {
    ops.push_back(fp8_transpose(name + "_latent_norm_output", dd(x.tokens) * dd(latent)));
  }
  const std::size_t dgrad = add_linear_bwd(ops, x, (name + "_up").c_str(), out, latent, x.attn_overlap);
  add_col_bwd_comm(ops, x, (name + "_latent").c_str(), x.attn_overlap, {dgrad}, norm_out_bytes(x), latent);
  ops.push_back(mem(name + "_latent_norm_bwd", OpKind::Norm, 3.0 * dd(xs.tokens) * dd(latent) * x.e, 1));
}

}  // namespace

std::size_t add_qkv_bwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x) {
  if (!x.mla) return add_linear_bwd(ops, x, "qkv", x.q_local + x.kv_local, x.h, x.attn_overlap);
  const MlaWidths w = mla_widths(job, x);
  const Dims xs = on_shard(x);
  add_up_projection_bwd(ops, x, xs, "kv", w.kv_up, w.kv_latent);
  // The rope key's gather backward: a reduce-scatter of its gradient.
  if (x.sp && x.t > 1) {
    ops.push_back(comm("tp_reduce_scatter_rope_key_grad", OpKind::TpReduceScatter,
                       dd(x.tokens) * dd(job.model.mla.qk_rope_head_dim) * x.e, false));
  }
  // The duplicated down-projections' backward on the shard: their dgrad is this rank's own.
  const std::size_t kv_down = add_linear_bwd(ops, xs, "kv_down", w.kv_down, x.h, false);
  if (w.q_latent == 0) {
    add_column_input_transpose(ops, x, "q_proj_input");  // before the GEMMs that read it
    const std::size_t q = add_linear_bwd(ops, x, "q_proj", w.q_up, x.h, x.attn_overlap);
    add_col_bwd_comm(ops, x, "attn", x.attn_overlap, {q}, norm_out_bytes(x));
    return kv_down;
  }
  add_up_projection_bwd(ops, x, xs, "q", w.q_up, w.q_latent);
  add_linear_bwd(ops, xs, "q_down", w.q_latent, x.h, false);
  return kv_down;
}

}  // namespace megasim::model_detail
