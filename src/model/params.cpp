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
  const double t = static_cast<double>(std::max(1, tensor_parallel));
  const double h = d(m.hidden_size);
  const double q = d(m.num_attention_heads * head_dim(m));
  const double kv = 2.0 * d(kv_heads(m) * head_dim(m));
  const double f = d(ffn(m));
  const double fc1_out = m.gated_mlp ? 2.0 * f : f;
  // Column-parallel (QKV, FC1): weights and biases split; row-parallel (proj, FC2): weights
  // split, bias replicated (added after the reduction).
  double p = (h * (q + kv) + q * h + h * fc1_out + f * h) / t;
  if (m.attention_bias) p += (q + kv + fc1_out) / t + 2.0 * h;
  p += norms_per_layer(m) * norm_params(m);
  return p;
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
  return d(m.num_hidden_layers) * layer_parameter_count(m) + embedding_parameter_count(m) +
         head_parameter_count(m);
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
  if (accounted_slots(par) > 0) {
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

double parameters_per_gpu(const JobSpec& job, int stage) {
  const int t = std::max(1, job.parallel.tensor_model_parallel_size);
  const int p = std::max(1, job.parallel.pipeline_model_parallel_size);
  double params = d(layers_on_stage(job, stage)) * layer_parameters_per_tp_rank(job.model, t);
  if (stage == 0) params += embedding_parameters_per_gpu(job);
  if (stage == p - 1) params += lm_head_parameters_per_gpu(job);
  return params;
}

}  // namespace megasim
