#pragma once
// Memory per GPU: weights, gradients, optimizer states, activations, buffers (A3 breakdown).
#include <cstdint>

#include "megasim/config/specs.hpp"

namespace megasim {

// Software buffer sizes. No defaults here: every figure comes with its source from the GPU's
// hardware profile (configs/hw/*.json `buffers`, loaded into HardwareProfile::buffers).
struct BufferSizes {
  double nccl_bytes_per_communicator = 0;  // NCCL's per-channel buffers of one communicator
  double cublas_workspace_bytes = 0;       // cuBLAS workspace
  double cuda_context_bytes = 0;           // CUDA context + resident kernel images
  double grad_bucket_elements = 0;         // DP bucket; sharded gradients keep 2 unsharded in flight
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_states_bytes = 0;
  double activations_bytes = 0;
  double buffers_bytes = 0;
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_states_bytes + activations_bytes +
           buffers_bytes;
  }
};

// Activation bytes one layer keeps for one micro-batch on one rank (Korthikanti et al. 2022,
// generalised for GQA, FFN size, gated MLP, PTB, sliding window, CP; see memory.cpp).
double layer_activation_bytes(const JobSpec& job);
// The same for layer `layer` (0-based; MoE or dense MLP, sliding or full attention by index).
double layer_activation_bytes(const JobSpec& job, std::int64_t layer);
// An MoE block's activations for `tokens` tokens of one rank, before the division by TP that
// layer_activation_bytes applies: routed copies' permuted inputs and expert FC1/activation
// outputs, router logits and probabilities, shared-expert outputs.
double moe_mlp_activation_bytes(const JobSpec& job, double tokens);
// The mean of layer_activation_bytes over the layers stage `stage` holds.
double stage_layer_activation_bytes(const JobSpec& job, int stage);

// Micro-batches' worth of layers whose activations stage `stage` holds at its peak, in units of
// "one layer, one micro-batch" (1F1B: (p - stage) micro-batches of its layers; interleaved:
// Megatron's warm-up count of model chunks).
double activation_layer_units_in_flight(const JobSpec& job, int stage);

// Memory of one GPU on pipeline stage `stage` (the report and the planner take the stage that
// needs the most: peak_memory_per_gpu). Cheap (no allocation): the planner calls it in tight loops.
// `buffers` comes from the GPU's hardware profile (configs/hw, HardwareProfile::buffers).
MemoryBreakdown memory_per_gpu(const JobSpec& job, int pipeline_stage, const BufferSizes& buffers);

// The pipeline stage whose GPUs need the most memory and their breakdown. Candidates: the first
// stage (embedding, most micro-batches in flight), the second (the first with more layers when
// the first/last stages are uneven) and the last (LM head logits, which win with a large
// vocabulary at small PP).
struct PeakMemory {
  int stage = 0;
  MemoryBreakdown breakdown;
};
PeakMemory peak_memory_per_gpu(const JobSpec& job, const BufferSizes& buffers);

// Whether a rank keeps only its DP shard of the gradients: ZeRO-2/3 when they are reduced as
// the backward produces them (every micro-batch, or a step of one micro-batch).
bool gradients_sharded(const JobSpec& job);

}  // namespace megasim
