// PyTorch FSDP's per-unit staging copies (system.fsdp_staging, model/fsdp_staging_ops.cpp): the
// bytes by hand from PyTorch's source, where they appear, and their time against the lent H100's
// measurement (bench/data/h100-fsdp-grad-staging.json).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/model/layer_ops.hpp"

namespace megasim {
namespace {

const Catalog& catalog() {
  static const Catalog c = Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  return c;
}

// An MPT data-parallel job under the pytorch-fsdp preset, with more overrides.
JobSpec mpt(const std::string& model, int gpus, int mbs, const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets{"model=" + model, "cluster=dgx-h100-ndr-clos", "cluster.num_gpus=" + std::to_string(gpus),
                                "system.preset=pytorch-fsdp", "parallel.zero_stage=3",
                                "parallel.tensor_model_parallel_size=1", "parallel.pipeline_model_parallel_size=1",
                                "parallel.virtual_pipeline_model_parallel_size=1", "parallel.context_parallel_size=1",
                                "parallel.sequence_parallel=false", "training.seq_length=2048",
                                "training.micro_batch_size=" + std::to_string(mbs),
                                "training.global_batch_size=" + std::to_string(gpus * mbs), "training.recompute=none"};
  sets.insert(sets.end(), more.begin(), more.end());
  return load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/llama-3.1-70b-1024-h100.json", sets, catalog());
}

double staged_bytes(const std::vector<LayerOp>& ops) {
  double b = 0;
  for (const LayerOp& op : ops)
    if (op.name.rfind("fsdp_staging", 0) == 0) b += op.bytes;
  return b;
}

constexpr double kMpt13bWeights = 12.0 * 5120 * 5120;  // per layer: QKV, projection, FC1, FC2

TEST(FsdpStaging, Fsdp1BytesByHand) {
  // 8 shards, FP32 reduce. Forward: the FP32 shard cast to BF16 before the gather (6/8 B).
  // Backward: the same cast before the re-gather, the BF16 gradient cast to FP32 (2 + 4), the
  // in-place pre-divide (4 + 4), the shard's post-divide (8/8).
  const JobSpec j = mpt("mpt-13b", 8, 2);
  EXPECT_EQ(j.system.fsdp_staging, FsdpStaging::Fsdp1);
  EXPECT_DOUBLE_EQ(staged_bytes(layer_forward_ops(j)), 0.75 * kMpt13bWeights);
  EXPECT_DOUBLE_EQ(staged_bytes(layer_backward_ops(j)), (0.75 + 6 + 8 + 1) * kMpt13bWeights);
  // BF16 reduce: no cast, a 2 + 2 B pre-divide and a 4/8 B post-divide.
  const JobSpec bf16 = mpt("mpt-13b", 8, 2, {"system.grad_reduce_in_fp32=false"});
  EXPECT_DOUBLE_EQ(staged_bytes(layer_backward_ops(bf16)), (0.75 + 4 + 0.5) * kMpt13bWeights);
  // ZeRO-2 (SHARD_GRAD_OP) keeps the forward's gather: no copy before the backward.
  const JobSpec z2 = mpt("mpt-13b", 8, 2, {"parallel.zero_stage=2"});
  EXPECT_DOUBLE_EQ(staged_bytes(layer_backward_ops(z2)), (6 + 8 + 1) * kMpt13bWeights);
}

TEST(FsdpStaging, Fsdp2BytesByHand) {
  // Each gather: copy-in with the cast (6/8) and copy-out of the full BF16 parameters (2 + 2);
  // the reduce: gradients copied, cast, into the reduce-scatter input (2 + 4) and post-divided (1).
  const JobSpec j = mpt("mpt-13b", 8, 2, {"system.fsdp_staging=fsdp2"});
  EXPECT_DOUBLE_EQ(staged_bytes(layer_forward_ops(j)), 4.75 * kMpt13bWeights);
  EXPECT_DOUBLE_EQ(staged_bytes(layer_backward_ops(j)), (4.75 + 6 + 1) * kMpt13bWeights);
}

TEST(FsdpStaging, OnlyWhereFsdpShardsAndNotInTheRecompute) {
  EXPECT_DOUBLE_EQ(staged_bytes(layer_backward_ops(mpt("mpt-13b", 8, 2, {"system.fsdp_staging=none"}))), 0.0);
  EXPECT_DOUBLE_EQ(staged_bytes(layer_backward_ops(mpt("mpt-13b", 8, 2, {"parallel.zero_stage=1", "system.dp_reduce_every_micro_batch=false"}))), 0.0);
  // Activation checkpointing replays the forward's kernels, not its gather.
  const JobSpec ckpt = mpt("mpt-13b", 8, 2, {"training.recompute=full"});
  EXPECT_GT(staged_bytes(layer_forward_ops(ckpt)), 0.0);
  EXPECT_DOUBLE_EQ(staged_bytes(layer_recompute_ops(ckpt)), 0.0);
  // Gradients kept whole until the step's last micro-batch (no_sync): no per-micro-batch reduce.
  const JobSpec once = mpt("mpt-13b", 8, 1, {"system.dp_reduce_every_micro_batch=false", "training.global_batch_size=16"});
  EXPECT_DOUBLE_EQ(staged_bytes(layer_backward_ops(once)), 0.75 * kMpt13bWeights);
}

// Against the lent H100 (bench/data/h100-fsdp-grad-staging.json): FSDP1's gradient cast and
// pre-divide beside the next block's backward cost 2.01 / 1.16 ms per MPT-13B / MPT-7B block
// (2.09 / 1.24 run serially). megasim prices the same 14 B per weight as one memory-bound kernel
// at the hardware profile's elementwise rate: within 25%, and never hidden.
TEST(FsdpStaging, GradientStagingAgainstTheMeasuredBlocks) {
  struct Row { const char* model; int mbs; double weights, measured_ms; };
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  for (const Row& r : {Row{"mpt-13b", 2, kMpt13bWeights, 2.0112}, Row{"mpt-7b", 6, 12.0 * 4096 * 4096, 1.1556}}) {
    const StepReport on = simulate_step(mpt(r.model, 8, r.mbs), catalog(), o);
    const StepReport off = simulate_step(mpt(r.model, 8, r.mbs, {"system.fsdp_staging=none"}), catalog(), o);
    const double bwd_ms = 1e3 * (on.layer_time.backward_s - off.layer_time.backward_s);
    // Of the backward's 15.75 B per weight, the measurement ran the cast and pre-divide's 14.
    const double cast_and_predivide_ms = bwd_ms * 14.0 / 15.75;
    EXPECT_NEAR(cast_and_predivide_ms / r.measured_ms, 1.0, 0.25) << r.model << " " << cast_and_predivide_ms;
    EXPECT_GT(on.step_time_s, off.step_time_s) << r.model;
  }
}

// The real FSDP1 and FSDP2 on one rank (same measurement): 3.15 and 4.15 ms per MPT-13B block
// beyond its BF16 kernels. With one shard FSDP1 casts the whole unit before the forward and the
// backward and the gradient once (18 B per weight, no divides); FSDP2 copies in and out before
// both and copies the gradient in (26 B). megasim prices them at 2.37 and 3.30 ms. The rest,
// about 0.85 ms in both, fits the one-rank collective copying the FP32 gradient (8 B per weight
// at the 3 TB/s the measured copies ran; not profiled kernel by kernel); with more ranks that
// traffic is the collective's, not staging.
TEST(FsdpStaging, OneRankFsdpAgainstTheMeasuredBlocks) {
  SimulateOptions o;
  o.engine = EngineKind::Analytic;
  const StepReport off = simulate_step(mpt("mpt-13b", 1, 2, {"system.fsdp_staging=none"}), catalog(), o);
  const double collective_copy_ms = 1e3 * 8.0 * kMpt13bWeights / 3.0e12;
  for (const auto& [impl, measured_ms, bytes_per_weight] : {std::tuple{"fsdp1", 3.1490, 18.0}, std::tuple{"fsdp2", 4.1541, 26.0}}) {
    const JobSpec j = mpt("mpt-13b", 1, 2, {std::string("system.fsdp_staging=") + impl});
    EXPECT_DOUBLE_EQ(staged_bytes(layer_forward_ops(j)) + staged_bytes(layer_backward_ops(j)),
                     bytes_per_weight * kMpt13bWeights) << impl;
    const StepReport on = simulate_step(j, catalog(), o);
    const double ms = 1e3 * (on.layer_time.forward_s + on.layer_time.backward_s - off.layer_time.forward_s -
                             off.layer_time.backward_s);
    EXPECT_NEAR((ms + collective_copy_ms) / measured_ms, 1.0, 0.1) << impl << " " << ms;
  }
}

}  // namespace
}  // namespace megasim
