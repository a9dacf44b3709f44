// Megatron-Core FLOP counting (see flops.hpp for the convention).
#include "megasim/model/flops.hpp"

#include <algorithm>

#include "megasim/model/params.hpp"

namespace megasim {
namespace {

struct Terms {  // per token, forward + backward
  double linear_attn;  // QKV + output projection
  double score;        // QK^T and PV over the attended span
  double mlp;
  double lm_head;
};

Terms terms(const ModelSpec& m, std::int64_t seq) {
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads);
  const double g = static_cast<double>(m.num_key_value_heads > 0 ? m.num_key_value_heads
                                                                  : m.num_attention_heads);
  const double hd = static_cast<double>(m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads);
  const double q = a * hd;
  const double f = static_cast<double>(m.intermediate_size > 0 ? m.intermediate_size : 4 * m.hidden_size);
  const double L = static_cast<double>(m.num_hidden_layers);
  std::int64_t span = seq;
  if (m.sliding_window) span = std::min(*m.sliding_window, seq);
  const double gamma = m.gated_mlp ? 1.5 : 1.0;
  const double c = 12.0 * L * h * h;  // 12·L·h² per token
  return Terms{c * (1.0 + g / a) * (q / h), c * (static_cast<double>(span) / h) * (q / h),
               c * (f / h) * gamma, c * static_cast<double>(m.vocab_size) / (2.0 * L * h)};
}

// Per layer, per token, forward + backward. MLA follows Megatron-Core's MLA term (training.py:
// the low-rank projections, and the score and context products over half the causal matrix, as
// that term writes them); MoE layers count the top-k routed experts and the shared experts.
Terms layer_terms(const ModelSpec& m, std::int64_t layer, std::int64_t seq) {
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads);
  const double gamma = m.gated_mlp ? 1.5 : 1.0;
  Terms t{};
  const std::int64_t span = is_sliding_layer(m, layer) ? std::min(*m.sliding_window, seq) : seq;
  if (is_mla(m)) {
    const MlaSpec& x = m.mla;
    const double qk = static_cast<double>(x.qk_nope_head_dim + x.qk_rope_head_dim);
    const double v = static_cast<double>(x.v_head_dim);
    const double q_term = x.q_lora_rank > 0 ? static_cast<double>(x.q_lora_rank) * (h + a * qk + 1.0) : h * a * qk;
    t.linear_attn = 6.0 * (q_term +
                           static_cast<double>(x.kv_lora_rank) *
                               (h + a * static_cast<double>(x.qk_nope_head_dim) + a * v + 1.0) +
                           h * static_cast<double>(x.qk_rope_head_dim) + a * v * h);
    t.score = 6.0 * static_cast<double>(span) * a * (qk + v) / 2.0;
  } else {
    const double g = static_cast<double>(m.num_key_value_heads > 0 ? m.num_key_value_heads : m.num_attention_heads);
    const double hd = static_cast<double>(m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads);
    const double q = a * hd;
    t.linear_attn = 12.0 * h * h * (1.0 + g / a) * (q / h);
    t.score = 12.0 * h * h * (static_cast<double>(span) / h) * (q / h);
  }
  if (is_moe_layer(m, layer)) {
    const MoeSpec& e = m.moe;
    t.mlp = 12.0 * h * gamma *
            (static_cast<double>(e.expert_intermediate_size) * static_cast<double>(e.experts_per_token) +
             static_cast<double>(e.shared_expert_intermediate_size));
  } else {
    const double f = static_cast<double>(m.intermediate_size > 0 ? m.intermediate_size : 4 * m.hidden_size);
    t.mlp = 12.0 * h * f * gamma;
  }
  return t;
}

// Whether every layer is the same dense GQA layer (the closed form above applies).
bool uniform_dense(const ModelSpec& m) {
  return !is_moe(m) && !is_mla(m) && m.layer_is_sliding.empty() && m.num_nextn_predict_layers == 0;
}

// Sum over the layers, the multi-token-prediction modules included (Megatron-Core counts each
// as one more layer of the last layer's kind, its norms and 2h -> h projection, and one more
// pass through the output head).
Terms all_terms(const ModelSpec& m, std::int64_t seq) {
  if (uniform_dense(m)) return terms(m, seq);
  Terms sum{};
  const std::int64_t layers = m.num_hidden_layers + m.num_nextn_predict_layers;
  for (std::int64_t i = 0; i < layers; ++i) {
    const Terms t = layer_terms(m, i, seq);
    sum.linear_attn += t.linear_attn;
    sum.score += t.score;
    sum.mlp += t.mlp;
  }
  const double h = static_cast<double>(m.hidden_size);
  const double mtp = static_cast<double>(m.num_nextn_predict_layers);
  sum.linear_attn += 6.0 * mtp * (3.0 * h + 2.0 * h * h);
  sum.lm_head = 6.0 * h * static_cast<double>(m.vocab_size) * (mtp + 1.0);
  return sum;
}

// What training.recompute_modules replays, per token: the attention core by Korthikanti's
// convention (the whole score term), the other modules their forward (a third of their term).
// Norms and the activation function are memory-bound and count no FLOPs.
double selective_recompute_flops_per_token(const JobSpec& job, const Terms& all) {
  const RecomputeModules& r = job.training.recompute_modules;
  const ModelSpec& m = job.model;
  double extra = r.core_attn ? all.score : 0.0;
  if (!(r.mlp || r.moe || r.shared_experts || r.mla_up_proj)) return extra;
  const double h = static_cast<double>(m.hidden_size);
  const double gamma = m.gated_mlp ? 1.5 : 1.0;
  const std::int64_t layers = m.num_hidden_layers + m.num_nextn_predict_layers;
  // MLA's up-projections are the same in every layer: one forward, 2 FLOPs per weight.
  double up_proj = 0;
  if (r.mla_up_proj && is_mla(m)) {
    const MlaSpec& x = m.mla;
    const double a = static_cast<double>(m.num_attention_heads);
    const double q_up = static_cast<double>(x.q_lora_rank > 0 ? x.q_lora_rank : m.hidden_size) * a *
                        static_cast<double>(x.qk_nope_head_dim + x.qk_rope_head_dim);
    const double kv_up = static_cast<double>(x.kv_lora_rank) * a * static_cast<double>(x.qk_nope_head_dim + x.v_head_dim);
    up_proj = 2.0 * (q_up + kv_up);
  }
  for (std::int64_t i = 0; i < layers; ++i) {
    const bool moe = is_moe_layer(m, i);
    if ((!moe && r.mlp) || (moe && r.moe)) {
      extra += layer_terms(m, i, job.training.seq_length).mlp / 3.0;
    } else if (moe && r.shared_experts) {
      extra += 12.0 * h * gamma * static_cast<double>(m.moe.shared_expert_intermediate_size) / 3.0;
    }
    extra += up_proj;
  }
  return extra;
}

}  // namespace

double model_flops_per_token(const JobSpec& job) {
  const Terms t = all_terms(job.model, job.training.seq_length);
  return t.linear_attn + t.score + t.mlp + t.lm_head;
}

double model_flops_per_step(const JobSpec& job) {
  return static_cast<double>(job.training.global_batch_size) *
         static_cast<double>(job.training.seq_length) * model_flops_per_token(job);
}

double hardware_flops_per_step(const JobSpec& job) {
  const Terms t = all_terms(job.model, job.training.seq_length);
  double per_token = t.linear_attn + t.score + t.mlp + t.lm_head;
  // Each term above is fwd+bwd = 3x its forward; a recomputed forward adds 1/3 of it (full:
  // Narayanan Eq. 3, 96·B·s·l·h²·(1 + s/6h + V/16lh)). Selective follows Korthikanti's published
  // convention 72·B·s·l·h²·(1 + s/3h + V/12lh) (formulas.md), which adds the whole score term,
  // i.e. 3x the physically recomputed forward; the time model (layer_recompute_ops) replays
  // only the forward.
  switch (job.training.recompute) {
    case Recompute::None: break;
    case Recompute::Selective: per_token += selective_recompute_flops_per_token(job, t); break;
    case Recompute::Full: per_token += (t.linear_attn + t.score + t.mlp) / 3.0; break;
  }
  return static_cast<double>(job.training.global_batch_size) *
         static_cast<double>(job.training.seq_length) * per_token;
}

}  // namespace megasim
