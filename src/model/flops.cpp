// Megatron-Core FLOP counting (see flops.hpp for the convention).
#include "megasim/model/flops.hpp"

#include <algorithm>

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

}  // namespace

double model_flops_per_token(const JobSpec& job) {
  const Terms t = terms(job.model, job.training.seq_length);
  return t.linear_attn + t.score + t.mlp + t.lm_head;
}

double model_flops_per_step(const JobSpec& job) {
  return static_cast<double>(job.training.global_batch_size) *
         static_cast<double>(job.training.seq_length) * model_flops_per_token(job);
}

double hardware_flops_per_step(const JobSpec& job) {
  const Terms t = terms(job.model, job.training.seq_length);
  double per_token = t.linear_attn + t.score + t.mlp + t.lm_head;
  // Each term above is fwd+bwd = 3x its forward; a recomputed forward adds 1/3 of it (full:
  // Narayanan Eq. 3, 96·B·s·l·h²·(1 + s/6h + V/16lh)). Selective follows Korthikanti's published
  // convention 72·B·s·l·h²·(1 + s/3h + V/12lh) (formulas.md), which adds the whole score term,
  // i.e. 3x the physically recomputed forward; the time model (layer_recompute_ops) replays
  // only the forward.
  switch (job.training.recompute) {
    case Recompute::None: break;
    case Recompute::Selective: per_token += t.score; break;
    case Recompute::Full: per_token += (t.linear_attn + t.score + t.mlp) / 3.0; break;
  }
  return static_cast<double>(job.training.global_batch_size) *
         static_cast<double>(job.training.seq_length) * per_token;
}

}  // namespace megasim
