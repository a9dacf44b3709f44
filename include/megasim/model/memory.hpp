#pragma once
// Memory per GPU: weights, gradients, optimizer states, activations, buffers (A3 breakdown).
#include "megasim/config/specs.hpp"

namespace megasim {

// Software buffer sizes (defaults of the libraries, not physical efficiencies). hw profiles
// carry their own copy loaded from configs/hw/*.json; these defaults match those files.
struct BufferSizes {
  // NCCL: NCCL_BUFFSIZE 4 MiB (Simple) + ~1 MiB LL/LL128 per channel per peer, 2 ring peers,
  // 16 channels -> 160 MiB per communicator (NCCL env docs: NCCL_BUFFSIZE default 4 MiB).
  double nccl_bytes_per_communicator = 160.0 * 1024 * 1024;
  // cuBLAS workspace (PyTorch default CUBLAS_WORKSPACE_CONFIG :4096:8 = 32 MiB on Hopper+).
  double cublas_workspace_bytes = 32.0 * 1024 * 1024;
  // CUDA context + kernels images resident on the device (commonly ~0.5 GiB; UNCONFIRMED).
  double cuda_context_bytes = 512.0 * 1024 * 1024;
  // Megatron DDP bucket: 40M elements; ZeRO-2/3 keep 2 unsharded buckets in flight.
  double grad_bucket_elements = 40e6;
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

// Micro-batches' worth of layers whose activations stage `stage` holds at its peak, in units of
// "one layer, one micro-batch" (1F1B: (p - stage) micro-batches of its layers; interleaved:
// Megatron's warm-up count of model chunks).
double activation_layer_units_in_flight(const JobSpec& job, int stage);

// Peak memory of one GPU on pipeline stage `stage` (stage 0 is the peak under 1F1B).
// Cheap (no allocation): the planner calls it in tight loops.
MemoryBreakdown memory_per_gpu(const JobSpec& job, int pipeline_stage = 0,
                               const BufferSizes& buffers = BufferSizes{});

}  // namespace megasim
