#pragma once
// Shared job fixtures for model/hw tests.
#include "megasim/config/specs.hpp"

namespace megasim::testing {

inline JobSpec gpt175b_megascale() {
  JobSpec j;
  ModelSpec& m = j.model;
  m.hidden_size = 12288; m.num_hidden_layers = 96; m.num_attention_heads = 128;
  m.num_key_value_heads = 128; m.head_dim = 96; m.intermediate_size = 4 * 12288;
  m.vocab_size = 64000; m.max_position_embeddings = 2048;
  j.parallel.tensor_model_parallel_size = 8; j.parallel.pipeline_model_parallel_size = 8;
  j.parallel.sequence_parallel = true; j.parallel.data_parallel_size = 4;
  j.training.seq_length = 2048; j.training.global_batch_size = 768; j.training.micro_batch_size = 1;
  j.system.attention_kernel = AttentionKernel::FlashV2;
  j.cluster.gpu.name = "h200"; j.cluster.gpu.peak_bf16_flops = 989.4e12;
  j.cluster.gpu.memory_bandwidth_Bps = 4.8e12; j.cluster.gpu.memory_bytes = 141e9;
  return j;
}

inline ModelSpec llama(std::int64_t h, std::int64_t L, std::int64_t a, std::int64_t g, std::int64_t f) {
  ModelSpec m;
  m.hidden_size = h; m.num_hidden_layers = L; m.num_attention_heads = a; m.num_key_value_heads = g;
  m.head_dim = 128; m.intermediate_size = f; m.vocab_size = 128256; m.gated_mlp = true;
  m.hidden_act = Activation::Silu; m.normalization = Norm::RmsNorm; m.attention_bias = false;
  m.rope = true; m.tie_word_embeddings = false;
  return m;
}

}  // namespace megasim::testing
