// The full-size copies PyTorch FSDP makes of each unit's (here: each layer's) parameters and
// gradients once per micro-batch under ZeRO-2/3 (system.fsdp_staging), whatever the micro-batch
// size: at one or two sequences per GPU they are 10-15% of a layer's time.
//
// Bytes per parameter of the layer, N the number of shards (DP x CP; expert DP for experts),
// r the reduce dtype's bytes (4 with system.grad_reduce_in_fp32, else 2), from PyTorch's source:
//   FSDP1 (torch/distributed/fsdp/_runtime_utils.py, _flat_param.py):
//     each all-gather: the FP32 shard cast to the BF16 param_dtype first (pre_unshard ->
//       _use_low_precision_shard: read 4, write 2 per sharded parameter: 6/N); the gather lands
//       in the flat parameter itself, no copy out;
//     each reduce: the unsharded BF16 gradient cast to reduce_dtype (_post_backward_hook: read 2,
//       write r; nothing when r = 2), pre-divided in place (_div_if_needed with the gradient
//       pre-divide factor, > 1 from 2 ranks: read and write r) and the shard post-divided (2r/N).
//   FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py):
//     each all-gather: the shards copied, cast, into the all-gather input (foreach_all_gather:
//       6/N) and the output copied out into the unsharded parameters
//       (foreach_all_gather_copy_out, split_with_sizes_copy: read and write 2);
//     each reduce: the gradients copied, cast, into the reduce-scatter input (foreach_reduce,
//       _chunk_cat: read 2, write r) and the shard post-divided (2r/N).
// ZeRO-3 (FULL_SHARD, reshard after forward) gathers before the forward and again before the
// backward; ZeRO-2 (SHARD_GRAD_OP) keeps the forward's gather. Gradients are staged by every
// micro-batch's backward when they are reduced every micro-batch; otherwise (FSDP's no_sync)
// only the last micro-batch's, once a step, which this per-micro-batch op list leaves out.
//
// FSDP runs these kernels on its side streams, but they do not hide behind the layer's GEMMs:
// on the lent H100 (bench/data/h100-fsdp-grad-staging.json, tools/measure/fsdp_grad_staging.py)
// FSDP1's gradient cast and pre-divide beside the next block's backward cost 2.01 ms a MPT-13B
// block against 2.09 ms run serially, and a one-rank FSDP2 block runs 4.15 ms longer than its
// kernels, its staging's 26 B per parameter at the measured BF16 -> FP32 cast rate. So they are
// ordinary memory-bound kernels here, on the layer's pass, their upcasts at the upcast rate.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "op_builders.hpp"

namespace megasim::model_detail {

namespace {

// HBM bytes of staging, and how many of them are BF16 -> FP32 casts (PyTorch's upcast kernel
// runs at 0.65 of an add's rate: hardware profile memory.upcast_bw_fraction).
struct StagingBytes {
  double total = 0;
  double upcast = 0;
};

// Per parameter: one all-gather's staging for N shards.
StagingBytes gather_bytes_per_param(FsdpStaging impl, double n) {
  const double copy_in = 6.0 / n;  // FP32 shard -> BF16 gather input (a downcast)
  return {impl == FsdpStaging::Fsdp2 ? copy_in + 4.0 : copy_in, 0.0};
}

// Per parameter: one reduce's staging for N shards and r-byte reduce elements.
StagingBytes reduce_bytes_per_param(FsdpStaging impl, double r, double n) {
  const double post_divide = n >= 2.0 ? 2.0 * r / n : 0.0;  // on one rank nothing divides
  const double upcast = r > 2.0 ? 2.0 + r : 0.0;            // BF16 gradient -> FP32
  if (impl == FsdpStaging::Fsdp2) return {2.0 + r + post_divide, upcast};  // copy-in, cast on the way
  // The pre-divide factor is 1 on one rank (_get_gradient_predivide_factor), and then skipped.
  const double pre_divide = n >= 2.0 ? 2.0 * r : 0.0;
  return {upcast + pre_divide + post_divide, upcast};
}

StagingBytes staging_bytes(FsdpStaging impl, double params, double shards, double r, bool gather, bool reduce) {
  StagingBytes b;
  if (params <= 0 || shards <= 0) return b;
  if (gather) {
    const StagingBytes g = gather_bytes_per_param(impl, shards);
    b.total += g.total * params;
    b.upcast += g.upcast * params;
  }
  if (reduce) {
    const StagingBytes d = reduce_bytes_per_param(impl, r, shards);
    b.total += d.total * params;
    b.upcast += d.upcast * params;
  }
  return b;
}

}  // namespace

void add_fsdp_staging(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, const LinearWeights& p,
                      bool backward) {
  const FsdpStaging impl = job.system.fsdp_staging;
  const int zero = job.parallel.zero_stage;
  if (impl == FsdpStaging::None || zero < 2) return;
  const bool gather = !backward || zero >= 3;
  const bool reduce = backward && gradients_reduced_every_micro_batch(job);
  const double dense_shards = dd(std::max<std::int64_t>(1, job.parallel.data_parallel_size)) * dd(x.cp);
  const double expert_shards = dd(expert_data_parallel_size(job));
  const StagingBytes dense = staging_bytes(impl, p.dense, dense_shards, x.main_grad_bytes, gather, reduce);
  const StagingBytes expert = staging_bytes(impl, p.expert, expert_shards, x.main_grad_bytes, gather, reduce);
  const double bytes = dense.total + expert.total;
  if (bytes <= 0) return;
  // One kernel per copy: FSDP1's flat parameter is one tensor; FSDP2 copies with one foreach /
  // split / chunk-cat kernel per unit.
  const int kernels = (gather ? (impl == FsdpStaging::Fsdp2 ? 2 : 1) : 0) +
                      (reduce ? (impl == FsdpStaging::Fsdp2 ? 2 : 3) : 0);
  ops.push_back(mem(backward ? "fsdp_staging_bwd" : "fsdp_staging", OpKind::Elementwise, bytes, kernels));
  ops.back().upcast_bytes = dense.upcast + expert.upcast;
}

}  // namespace megasim::model_detail
