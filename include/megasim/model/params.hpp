#pragma once
// Parameter counts of a decoder-only transformer (pure functions of ModelSpec / JobSpec).
#include <cstdint>

#include "megasim/config/specs.hpp"

namespace megasim {

// Parameters of one transformer layer: QKV (GQA aware), output projection, MLP (2 or 3
// matrices), biases when attention_bias, and its norms (LayerNorm weight+bias, RMSNorm weight).
double layer_parameter_count(const ModelSpec& m);
// Word embedding (+ learned positions when max_position_embeddings > 0 and !rope).
double embedding_parameter_count(const ModelSpec& m);
// Final norm + LM head (0 for the head when tied).
double head_parameter_count(const ModelSpec& m);
// Whole model, each shared tensor counted once.
double parameter_count(const ModelSpec& m);

// Vocabulary padded as Megatron does (make-vocab-size-divisible-by 128, times TP).
std::int64_t padded_vocab_size(const ModelSpec& m, int tensor_parallel);

// Parameters one TP rank holds for one layer: weight matrices divided by TP, column-parallel
// biases divided by TP, norms and row-parallel biases replicated.
double layer_parameters_per_tp_rank(const ModelSpec& m, int tensor_parallel);

// Layers held by pipeline stage `stage` (uneven first/last splits and Megatron-Core's
// embedding/loss accounting honoured).
std::int64_t layers_on_stage(const JobSpec& job, int stage);

// Layers held by model chunk `chunk` (0 .. VPP-1) of stage `stage`. Without accounting the
// stage's layers spread evenly (validated to divide); with account_for_embedding (loss) in the
// pipeline split the first chunk of the first stage (last chunk of the last stage) holds one
// layer fewer, its slot taken by the embedding (loss), as Megatron-Core builds them.
std::int64_t layers_in_chunk(const JobSpec& job, int stage, int chunk);

// Parameters held by one GPU of pipeline stage `stage` before any ZeRO sharding: its layers,
// the (padded, TP-sharded) embedding on the first stage and the head on the last stage. With
// tied embeddings and PP > 1 the last stage keeps its own copy of the embedding (Megatron).
double parameters_per_gpu(const JobSpec& job, int stage);

// The non-layer parts of parameters_per_gpu: what one GPU of the first stage holds for the
// input embedding, and what one GPU of the last stage holds for the final norm and LM head.
double embedding_parameters_per_gpu(const JobSpec& job);
double lm_head_parameters_per_gpu(const JobSpec& job);

}  // namespace megasim
