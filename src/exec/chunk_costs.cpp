#include "chunk_costs.hpp"

#include <algorithm>
#include <cmath>

#include "megasim/model/params.hpp"
#include "pass_times.hpp"

namespace megasim {

namespace {

constexpr double kMaxDpBucketsPerChunk = 16.0;

// Overlapped DP collectives per step for one chunk, each way (ChunkCosts::dp_buckets).
int dp_buckets_of_chunk(const Context& c, const ChunkCosts& ch, int chunk) {
  const JobSpec& job = c.job;
  const SystemSpec& sys = job.system;
  // Megatron-Core buckets only model chunk 0 (disable_bucketing=(model_chunk_idx > 0):
  // later chunks' collectives overlap compute anyway); FSDP (ZeRO-3) gathers per unit in
  // every chunk, and gradients reduced every micro-batch go bucket by bucket in every chunk.
  const bool bucketed_chunk = sys.dp_overlap_granularity == "bucket" &&
                              ((sys.dp_overlap && chunk == 0) || job.parallel.zero_stage == 3 ||
                               gradients_reduced_every_micro_batch(job));
  if (!bucketed_chunk) return 1;
  // Megatron-Core fills buckets in backward order, max(40M, 1M x DP) elements by default,
  // DP counted with context parallelism (megatron/core/distributed/distributed_data_parallel.py:
  // larger buckets at large DP keep each rank's ring chunk bandwidth-bound); more than
  // kMaxDpBucketsPerChunk would only add events (the exposed tail is already 1/cap).
  const double bucket_elements = std::max(c.hw.buffers.grad_bucket_elements,
                                          1e6 * static_cast<double>(job.parallel.data_parallel_size) *
                                              job.parallel.context_parallel_size);
  const double buckets = std::ceil(ch.param_bytes / kWeightBytesPerParam / bucket_elements);
  return static_cast<int>(std::clamp(buckets, 1.0, kMaxDpBucketsPerChunk));
}

// One chunk of `layers` layers; the first stage's first chunk also carries the embedding, the
// last stage's last chunk the LM head (and their share of the stage's DP traffic).
ChunkCosts chunk_cost(const Context& c, const LayerPasses& lp, const TpOverlapConfig& ov, int layers,
                      bool has_embedding, bool has_lm_head) {
  const JobSpec& job = c.job;
  PassTimes f = lp.layer_fwd.scaled(layers);
  PassTimes b = lp.layer_bwd.scaled(layers);
  if (has_embedding) {
    f += lp.embedding_fwd;
    b += lp.embedding_bwd;
  }
  if (has_lm_head) {
    f += lp.head_fwd;
    b += lp.head_bwd;
  }
  ChunkCosts ch = pass_costs(f, b, ov);
  ch.param_bytes = kWeightBytesPerParam *
                   (layers * layer_parameters_per_tp_rank(job.model, job.parallel.tensor_model_parallel_size) +
                    (has_embedding ? embedding_parameters_per_gpu(job) : 0.0) +
                    (has_lm_head ? lm_head_parameters_per_gpu(job) : 0.0));
  ch.layers = layers;
  ch.has_embedding = has_embedding;
  ch.has_lm_head = has_lm_head;
  return ch;
}

}  // namespace

LayerPasses time_layer_passes(const Context& c) {
  const JobSpec& job = c.job;
  LayerPasses p;
  p.layer_fwd = time_ops(c, layer_forward_ops(job));
  p.layer_bwd = time_ops(c, layer_backward_ops(job));
  p.layer_bwd += time_ops(c, layer_recompute_ops(job));
  p.embedding_fwd = time_ops(c, embedding_forward_ops(job));
  p.embedding_bwd = time_ops(c, embedding_backward_ops(job));
  p.head_fwd = time_ops(c, lm_head_forward_ops(job));
  p.head_bwd = time_ops(c, lm_head_backward_ops(job));
  return p;
}

ChunkCosts pass_costs(const PassTimes& f, const PassTimes& b, const TpOverlapConfig& ov) {
  ChunkCosts ch;
  ch.fwd_compute_s = f.compute_s;
  ch.bwd_compute_s = b.compute_s;
  ch.fwd_tp_comm_s = f.tp_comm_s();
  ch.bwd_tp_comm_s = b.tp_comm_s();
  ch.fwd_tp_exposed_s = apply_tp_overlap(f, ov).exposed_s;
  ch.bwd_tp_exposed_s = apply_tp_overlap(b, ov).exposed_s;
  ch.fwd_cp_exposed_s = f.cp_comm_s;  // K/V ring exchange is on the critical path
  ch.bwd_cp_exposed_s = b.cp_comm_s;
  return ch;
}

std::vector<std::vector<ChunkCosts>> stage_chunk_costs(const Context& c, const LayerPasses& passes,
                                                       const TpOverlapConfig& ov) {
  const int pp = c.job.parallel.pipeline_model_parallel_size;
  const int vpp = c.job.parallel.virtual_pipeline_model_parallel_size;
  std::vector<std::vector<ChunkCosts>> stages;
  int first_layer = 0;
  for (int s = 0; s < pp; ++s) {
    std::vector<ChunkCosts> chunks;
    for (int v = 0; v < vpp; ++v) {
      const auto layers = static_cast<int>(layers_in_chunk(c.job, s, v));
      ChunkCosts ch = chunk_cost(c, passes, ov, layers, s == 0 && v == 0, s == pp - 1 && v == vpp - 1);
      ch.dp_buckets = dp_buckets_of_chunk(c, ch, v);
      ch.first_layer = first_layer;
      first_layer += layers;
      chunks.push_back(ch);
    }
    stages.push_back(std::move(chunks));
  }
  return stages;
}

}  // namespace megasim
