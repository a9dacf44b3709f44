// Parameter counting. Shapes follow Megatron-Core / Hugging Face: q = a·d, kv = 2·g·d.
#include "megasim/model/params.hpp"

#include <algorithm>

namespace megasim {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }
std::int64_t head_dim(const ModelSpec& m) {
  return m.head_dim > 0 ? m.head_dim : m.hidden_size / std::max<std::int64_t>(1, m.num_attention_heads);
}
std::int64_t kv_heads(const ModelSpec& m) {
  return m.num_key_value_heads > 0 ? m.num_key_value_heads : m.num_attention_heads;
}
std::int64_t ffn(const ModelSpec& m) {
  return m.intermediate_size > 0 ? m.intermediate_size : 4 * m.hidden_size;
}
double norm_params(const ModelSpec& m) {
  return m.normalization == Norm::LayerNorm ? 2.0 * d(m.hidden_size) : d(m.hidden_size);
}
int norms_per_layer(const ModelSpec& m) { return m.use_parallel_residual ? 1 : 2; }

}  // namespace

double layer_parameter_count(const ModelSpec& m) {
  return layer_parameters_per_tp_rank(m, 1);
}

double layer_parameters_per_tp_rank(const ModelSpec& m, int tensor_parallel) {
  return layer_parameters(m, false, tensor_parallel, 1, 1).total();
}

namespace {

// Attention of one layer on one TP rank: GQA (QKV column-parallel, projection row-parallel) or
// MLA (Megatron-Core: the down-projections and their norms duplicated on every TP rank, the
// up-projections column-parallel, the projection row-parallel).
double attention_parameters(const ModelSpec& m, double t) {
  const double h = d(m.hidden_size);
  if (is_mla(m)) {
    const MlaSpec& a = m.mla;
    const double heads = d(m.num_attention_heads);
    const double qk = d(a.qk_nope_head_dim + a.qk_rope_head_dim);
    double replicated = h * d(a.kv_lora_rank + a.qk_rope_head_dim) + d(a.kv_lora_rank);  // kv down + its norm
    double sharded = d(a.kv_lora_rank) * heads * d(a.qk_nope_head_dim + a.v_head_dim) +  // kv up
                     heads * d(a.v_head_dim) * h;                                           // projection
    if (a.q_lora_rank > 0) {
      replicated += h * d(a.q_lora_rank) + d(a.q_lora_rank);
      sharded += d(a.q_lora_rank) * heads * qk;
    } else {
      sharded += h * heads * qk;
    }
    return replicated + sharded / t;
  }
  const double q = d(m.num_attention_heads * head_dim(m));
  const double kv = 2.0 * d(kv_heads(m) * head_dim(m));
  double p = (h * (q + kv) + q * h) / t;
  if (m.attention_bias) p += (q + kv) / t + h;
  return p;
}

// One MLP of FFN width f split over `t` ranks (column-parallel FC1, row-parallel FC2).
double mlp_parameters(const ModelSpec& m, double f, double t) {
  const double h = d(m.hidden_size);
  const double fc1_out = m.gated_mlp ? 2.0 * f : f;
  double p = (h * fc1_out + f * h) / t;
  if (m.attention_bias) p += fc1_out / t + h;
  return p;
}

}  // namespace

LayerParameters layer_parameters(const ModelSpec& m, bool moe_layer, int tensor_parallel, int expert_parallel,
                                 int expert_tensor_parallel) {
  const double t = static_cast<double>(std::max(1, tensor_parallel));
  LayerParameters p;
  if (!is_mla(m) && (!moe_layer || !is_moe(m))) {
    // The dense GQA layer in one expression (the sum order every earlier result was computed in).
    const double h = d(m.hidden_size);
    const double q = d(m.num_attention_heads * head_dim(m));
    const double kv = 2.0 * d(kv_heads(m) * head_dim(m));
    const double f = d(ffn(m));
    const double fc1_out = m.gated_mlp ? 2.0 * f : f;
    // Column-parallel (QKV, FC1): weights and biases split; row-parallel (proj, FC2): weights
    // split, bias replicated (added after the reduction).
    p.dense = (h * (q + kv) + q * h + h * fc1_out + f * h) / t;
    if (m.attention_bias) p.dense += (q + kv + fc1_out) / t + 2.0 * h;
    p.dense += norms_per_layer(m) * norm_params(m);
    return p;
  }
  p.dense = attention_parameters(m, t) + norms_per_layer(m) * norm_params(m);
  if (!moe_layer || !is_moe(m)) {
    p.dense += mlp_parameters(m, d(ffn(m)), t);
    return p;
  }
  const MoeSpec& e = m.moe;
  // The router's weight is duplicated on every rank; shared experts are a TP-parallel MLP.
  p.dense += d(m.hidden_size) * d(e.num_experts);
  if (e.shared_expert_intermediate_size > 0) p.dense += mlp_parameters(m, d(e.shared_expert_intermediate_size), t);
  const double local_experts = d(e.num_experts) / std::max(1, expert_parallel);
  p.expert = local_experts * mlp_parameters(m, d(e.expert_intermediate_size), std::max(1, expert_tensor_parallel));
  return p;
}

bool is_moe_layer(const ModelSpec& m, std::int64_t layer) {
  if (!is_moe(m) || m.moe.layer_is_moe.empty()) return false;
  const auto last = static_cast<std::int64_t>(m.moe.layer_is_moe.size()) - 1;
  return m.moe.layer_is_moe[static_cast<std::size_t>(std::min(layer, last))] != 0;
}

bool is_sliding_layer(const ModelSpec& m, std::int64_t layer) {
  if (!m.sliding_window) return false;
  if (m.layer_is_sliding.empty()) return true;
  const auto last = static_cast<std::int64_t>(m.layer_is_sliding.size()) - 1;
  return m.layer_is_sliding[static_cast<std::size_t>(std::min(layer, last))] != 0;
}

double embedding_parameter_count(const ModelSpec& m) {
  double p = d(m.vocab_size) * d(m.hidden_size);
  if (m.max_position_embeddings > 0 && !m.rope) p += d(m.max_position_embeddings) * d(m.hidden_size);
  return p;
}

double head_parameter_count(const ModelSpec& m) {
  const double head = m.tie_word_embeddings ? 0.0 : d(m.vocab_size) * d(m.hidden_size);
  return head + norm_params(m);
}

double parameter_count(const ModelSpec& m) {
  if (!is_moe(m)) {
    return d(m.num_hidden_layers) * layer_parameter_count(m) + embedding_parameter_count(m) + head_parameter_count(m);
  }
  double p = embedding_parameter_count(m) + head_parameter_count(m);
  for (std::int64_t i = 0; i < m.num_hidden_layers; ++i) p += layer_parameters(m, is_moe_layer(m, i), 1, 1, 1).total();
  return p;
}

double active_parameter_count(const ModelSpec& m) {
  double p = embedding_parameter_count(m) + head_parameter_count(m);
  for (std::int64_t i = 0; i < m.num_hidden_layers; ++i) {
    const LayerParameters l = layer_parameters(m, is_moe_layer(m, i), 1, 1, 1);
    // A token passes through top-k of the routed experts.
    p += l.dense + (l.expert > 0 ? l.expert * d(m.moe.experts_per_token) / d(m.moe.num_experts) : 0.0);
  }
  return p;
}

namespace {

// What an MTP module holds besides its transformer layer, on one of `t` TP ranks: the
// projection of [embedding; hidden] (2h -> h, split over TP) and the norms of its two inputs.
double mtp_projection_parameters(const ModelSpec& m, int t) {
  const double h = d(m.hidden_size);
  return 2.0 * h * h / t + 2.0 * norm_params(m);
}

// One MTP module without the embedding and head it shares with the main model in training.
double mtp_layer_parameter_count(const ModelSpec& m) {
  return layer_parameters(m, is_moe_layer(m, m.num_hidden_layers), 1, 1, 1).total() + mtp_projection_parameters(m, 1);
}

}  // namespace

double mtp_parameter_count(const ModelSpec& m) {
  if (m.num_nextn_predict_layers == 0) return 0.0;
  // Each module as the checkpoint stores it: its layer, with copies of the embedding and of the
  // output head (and its norm), which training shares with the main model.
  return d(m.num_nextn_predict_layers) *
         (mtp_layer_parameter_count(m) + d(m.vocab_size) * d(m.hidden_size) + head_parameter_count(m) +
          (m.tie_word_embeddings ? d(m.vocab_size) * d(m.hidden_size) : 0.0));
}

std::int64_t padded_vocab_size(const ModelSpec& m, int tensor_parallel) {
  const std::int64_t mult = 128 * std::max(1, tensor_parallel);
  return (m.vocab_size + mult - 1) / mult * mult;
}

namespace {

// Slots the embedding and the loss take in Megatron-Core's pipeline split (0, 1 or 2).
std::int64_t accounted_slots(const ParallelSpec& p) {
  return (p.account_for_embedding_in_pipeline_split ? 1 : 0) + (p.account_for_loss_in_pipeline_split ? 1 : 0);
}

}  // namespace

std::int64_t layers_on_stage(const JobSpec& job, int stage) {
  const int p = std::max(1, job.parallel.pipeline_model_parallel_size);
  const std::int64_t total = job.model.num_hidden_layers;
  const ParallelSpec& par = job.parallel;
  if (accounted_slots(par) > 0 || !par.layout_layers.empty()) {
    // Megatron-Core builds accounted splits chunk by chunk: the stage holds what its chunks hold.
    std::int64_t n = 0;
    for (int v = 0; v < std::max(1, par.virtual_pipeline_model_parallel_size); ++v) n += layers_in_chunk(job, stage, v);
    return n;
  }
  if (p == 1) return total;
  const auto& first = par.decoder_first_pipeline_num_layers;
  const auto& last = par.decoder_last_pipeline_num_layers;
  std::int64_t rest = total;
  int middle = p;
  if (first) { rest -= *first; --middle; }
  if (last) { rest -= *last; --middle; }
  if (stage == 0 && first) return *first;
  if (stage == p - 1 && last) return *last;
  return middle > 0 ? rest / middle : 0;
}

std::int64_t layers_in_chunk(const JobSpec& job, int stage, int chunk) {
  const ParallelSpec& par = job.parallel;
  const int p = std::max(1, par.pipeline_model_parallel_size);
  const int v = std::max(1, par.virtual_pipeline_model_parallel_size);
  if (!par.layout_layers.empty()) return par.layout_layers[static_cast<std::size_t>(chunk * p + stage)];
  if (accounted_slots(par) > 0) {
    std::int64_t n = (job.model.num_hidden_layers + accounted_slots(par)) / p / v;
    if (stage == 0 && chunk == 0 && par.account_for_embedding_in_pipeline_split) --n;
    if (stage == p - 1 && chunk == v - 1 && par.account_for_loss_in_pipeline_split) --n;
    return n;
  }
  // Spread as evenly as the split allows (validated to divide).
  const std::int64_t stage_layers = layers_on_stage(job, stage);
  return stage_layers / v + (chunk < stage_layers % v ? 1 : 0);
}

double embedding_parameters_per_gpu(const JobSpec& job) {
  const ModelSpec& m = job.model;
  const int t = std::max(1, job.parallel.tensor_model_parallel_size);
  double params = d(padded_vocab_size(m, t)) / t * d(m.hidden_size);
  if (m.max_position_embeddings > 0 && !m.rope) params += d(m.max_position_embeddings) * d(m.hidden_size);
  return params;
}

double lm_head_parameters_per_gpu(const JobSpec& job) {
  const ModelSpec& m = job.model;
  const int t = std::max(1, job.parallel.tensor_model_parallel_size);
  const int p = std::max(1, job.parallel.pipeline_model_parallel_size);
  double params = norm_params(m);
  // Untied: own head. Tied with PP > 1: Megatron keeps a synchronised copy on the last stage.
  if (!m.tie_word_embeddings || p > 1) params += d(padded_vocab_size(m, t)) / t * d(m.hidden_size);
  return params;
}

std::int64_t first_layer_in_chunk(const JobSpec& job, int stage, int chunk) {
  // Megatron-Core numbers model chunks chunk-major: virtual stage v * PP + s holds the layers
  // after those of every virtual stage before it.
  const int p = std::max(1, job.parallel.pipeline_model_parallel_size);
  std::int64_t first = 0;
  for (int v = 0; v <= chunk; ++v) {
    for (int s = 0; s < p && !(v == chunk && s == stage); ++s) first += layers_in_chunk(job, s, v);
  }
  return first;
}

LayerParameters layer_parameters_per_gpu(const JobSpec& job, bool moe_layer) {
  const ParallelSpec& par = job.parallel;
  return layer_parameters(job.model, moe_layer, par.tensor_model_parallel_size,
                          std::max(1, par.expert_model_parallel_size), expert_tensor_parallel_size(job));
}

void add_layer_parameters_per_gpu(const JobSpec& job, std::int64_t first, std::int64_t count,
                                  StageParameters& into) {
  for (std::int64_t i = first; i < first + count; ++i) {
    const LayerParameters l = layer_parameters_per_gpu(job, is_moe_layer(job.model, i));
    into.dense += l.dense;
    into.expert += l.expert;
  }
}

StageParameters stage_parameters_per_gpu(const JobSpec& job, int stage) {
  const ModelSpec& m = job.model;
  const ParallelSpec& par = job.parallel;
  const int t = std::max(1, par.tensor_model_parallel_size);
  const int p = std::max(1, par.pipeline_model_parallel_size);
  StageParameters out;
  if (is_moe(m)) {
    for (int v = 0; v < std::max(1, par.virtual_pipeline_model_parallel_size); ++v) {
      add_layer_parameters_per_gpu(job, first_layer_in_chunk(job, stage, v), layers_in_chunk(job, stage, v), out);
    }
  } else {  // every layer alike: one product (and the planner's memory loop stays cheap)
    out.dense = d(layers_on_stage(job, stage)) * layer_parameters(m, false, t, 1, 1).dense;
  }
  if (stage == 0) out.dense += embedding_parameters_per_gpu(job);
  if (stage == p - 1) {
    out.dense += lm_head_parameters_per_gpu(job);
    for (std::int64_t k = 0; k < m.num_nextn_predict_layers; ++k) {
      add_layer_parameters_per_gpu(job, m.num_hidden_layers + k, 1, out);
      out.dense += mtp_projection_parameters(m, t);
    }
    // MTP embeds the shifted tokens with the main model's embedding: the last stage keeps a copy.
    if (m.num_nextn_predict_layers > 0 && p > 1 && !m.tie_word_embeddings) out.dense += embedding_parameters_per_gpu(job);
  }
  return out;
}

double parameters_per_gpu(const JobSpec& job, int stage) {
  return stage_parameters_per_gpu(job, stage).total();
}

}  // namespace megasim
