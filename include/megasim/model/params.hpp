#pragma once
// Parameter counts of a decoder-only transformer (pure functions of ModelSpec / JobSpec).
#include <cstdint>

#include "megasim/config/specs.hpp"

namespace megasim {

// Parameters of one layer on one GPU, split by how they are sharded and reduced: `dense`
// (attention, norms, a dense MLP, shared experts, the router: TP-sharded, reduced over DP) and
// `expert` (the routed experts this GPU holds: sharded over EP x ETP, reduced over expert DP).
struct LayerParameters {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
// `moe_layer`: the layer's MLP is the MoE block (ignored for a dense model). Attention is GQA or
// MLA (Megatron-Core: MLA's down-projections are duplicated on every TP rank).
LayerParameters layer_parameters(const ModelSpec& m, bool moe_layer, int tensor_parallel, int expert_parallel,
                                 int expert_tensor_parallel);
// The same for one GPU of `job`: its TP, EP and expert-TP sizes.
LayerParameters layer_parameters_per_gpu(const JobSpec& job, bool moe_layer);
// Whether layer `layer` (0-based) carries an MoE block / attends within the sliding window. The
// multi-token-prediction layers (indices from num_hidden_layers on) take the last layer's kind.
bool is_moe_layer(const ModelSpec& m, std::int64_t layer);
bool is_sliding_layer(const ModelSpec& m, std::int64_t layer);

// Parameters of one dense transformer layer: QKV (GQA aware), output projection, MLP (2 or 3
// matrices), biases when attention_bias, and its norms (LayerNorm weight+bias, RMSNorm weight).
double layer_parameter_count(const ModelSpec& m);
// Word embedding (+ learned positions when max_position_embeddings > 0 and !rope).
double embedding_parameter_count(const ModelSpec& m);
// Final norm + LM head (0 for the head when tied).
double head_parameter_count(const ModelSpec& m);
// Whole model without its multi-token-prediction modules, each shared tensor counted once.
double parameter_count(const ModelSpec& m);
// Parameters one token passes through: parameter_count less the routed experts it is not sent
// to (top-k of E in every MoE layer). The embedding and head count, as in Mixtral's 12.9 B.
double active_parameter_count(const ModelSpec& m);
// DeepSeek-V3's multi-token-prediction modules as the checkpoint stores them (each: one layer,
// the 2h -> h projection, norms, and copies of the embedding and output head), reported apart
// from parameter_count as the paper does (671 B + 14 B); 0 without MTP.
double mtp_parameter_count(const ModelSpec& m);


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

// The global index of the first layer of model chunk `chunk` of stage `stage` (Megatron-Core's
// interleaved numbering: virtual stage chunk * PP + stage follows every earlier one).
std::int64_t first_layer_in_chunk(const JobSpec& job, int stage, int chunk);

// What one GPU of a stage holds, split as LayerParameters (the embedding, head and MTP
// projection count as dense). ZeRO shards `dense` over DP x CP and `expert` over expert DP.
struct StageParameters {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
StageParameters stage_parameters_per_gpu(const JobSpec& job, int stage);
// Adds what one GPU holds of layers [first, first + count) (MTP modules' layers from
// num_hidden_layers on, of the last layer's kind) to `into`, layer by layer.
void add_layer_parameters_per_gpu(const JobSpec& job, std::int64_t first, std::int64_t count,
                                  StageParameters& into);

// Parameters held by one GPU of pipeline stage `stage` before any ZeRO sharding: its layers,
// the (padded, TP-sharded) embedding on the first stage and the head on the last stage. With
// tied embeddings and PP > 1 the last stage keeps its own copy of the embedding (Megatron).
double parameters_per_gpu(const JobSpec& job, int stage);

// The non-layer parts of parameters_per_gpu: what one GPU of the first stage holds for the
// input embedding, and what one GPU of the last stage holds for the final norm and LM head.
double embedding_parameters_per_gpu(const JobSpec& job);
double lm_head_parameters_per_gpu(const JobSpec& job);

}  // namespace megasim
