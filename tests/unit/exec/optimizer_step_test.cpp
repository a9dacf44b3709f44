// The optimizer step by implementation (system.optimizer_implementation, exec/optimizer_step.cpp):
// bytes per parameter by hand from each implementation's operations, and the time against the
// lent H100's measurement (bench/data/h100-optimizer-step.json).
#include <gtest/gtest.h>

#include <string>

#include "exec/optimizer_step.hpp"
#include "megasim/catalogs/hardware_profile_reader.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/model/params.hpp"
#include "model/test_jobs.hpp"

namespace megasim {
namespace {

HardwareProfile hopper() {
  const auto catalog = Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  return load_hardware_profile(catalog.entry("hw", "hopper", "hw"), "hw");
}

// Seconds per parameter of the shard, launch latencies aside.
double seconds_per_param(const JobSpec& j, const HardwareProfile& hw, int passes) {
  const double params = parameters_per_gpu(j, 3) / 4;  // ZeRO-1 over DP 4
  return (optimizer_step_time_s(j, hw, 3) - passes * (hw.memory_latency_s + hw.kernel_launch_overhead_s)) / params;
}

TEST(OptimizerStep, BytesPerParameterByImplementation) {
  const HardwareProfile hw = hopper();
  JobSpec j = testing::gpt175b_megascale();
  j.parallel.zero_stage = 1;
  const double per_byte = 1.0 / (j.cluster.gpu.memory_bandwidth_Bps * hw.elementwise_bw_fraction);
  struct Row { OptimizerImpl impl; int passes; double megatron_bytes; };
  // FP32 gradients. Fused: read master, m, v, grad (16), write master, m, v (12). foreach and
  // for-loop: decay 8, lerp 12, v *= 8, addcmul 12, sqrt 8, / 8, + eps 8, addcdiv 16 (80).
  // Composer: its m update is mul + add (8 + 12) instead of lerp (88). Megatron also writes the
  // BF16 weights (+2); PyTorch FSDP does not.
  for (const Row& r : {Row{OptimizerImpl::Fused, 1, 30}, Row{OptimizerImpl::Foreach, 8, 82},
                       Row{OptimizerImpl::ForLoop, 8, 82}, Row{OptimizerImpl::DecoupledAdamw, 9, 90}}) {
    j.system.optimizer_implementation = r.impl;
    j.system.fsdp_staging = FsdpStaging::None;
    EXPECT_NEAR(seconds_per_param(j, hw, r.passes) / per_byte, r.megatron_bytes, 1e-6);
    j.system.fsdp_staging = FsdpStaging::Fsdp1;
    EXPECT_NEAR(seconds_per_param(j, hw, r.passes) / per_byte, r.megatron_bytes - 2, 1e-6);
  }
  // BF16 gradients: the fused kernel reads 2 B less; the others read the gradient twice.
  j.system.grad_reduce_in_fp32 = false;
  j.system.fsdp_staging = FsdpStaging::None;
  j.system.optimizer_implementation = OptimizerImpl::Foreach;
  EXPECT_NEAR(seconds_per_param(j, hw, 8) / per_byte, 78, 1e-6);
}

// 1e9 FP32 parameters on the lent H100 (3.35 TB/s): fused 10.96 ms, foreach 30.12, for-loop
// 27.66, Composer's DecoupledAdamW 31.04. The byte counts at the Hopper profile's elementwise
// rate land within 10%.
TEST(OptimizerStep, ImplementationsAgainstTheMeasuredH100) {
  const HardwareProfile hw = hopper();
  JobSpec j = testing::gpt175b_megascale();
  j.parallel.zero_stage = 1;
  j.cluster.gpu.memory_bandwidth_Bps = 3.35e12;
  j.system.fsdp_staging = FsdpStaging::Fsdp1;  // the measurement keeps no BF16 copy
  struct Row { OptimizerImpl impl; int passes; double measured_ms; };
  for (const Row& r : {Row{OptimizerImpl::Fused, 1, 10.956}, Row{OptimizerImpl::Foreach, 8, 30.124},
                       Row{OptimizerImpl::ForLoop, 8, 27.655}, Row{OptimizerImpl::DecoupledAdamw, 9, 31.044}}) {
    j.system.optimizer_implementation = r.impl;
    EXPECT_NEAR(1e12 * seconds_per_param(j, hw, r.passes) / r.measured_ms, 1.0, 0.1);
  }
}

// Under ZeRO the routed experts' shard is over the expert data-parallel group, not DP: Qwen3-30B-A3B
// on 16 GPUs with EP 8 updates its dense parameters over DP 16 and its experts over EDP 2.
TEST(OptimizerStep, ExpertsShardOverExpertDataParallel) {
  const auto catalog = Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  const HardwareProfile hw = load_hardware_profile(catalog.entry("hw", "hopper", "hw"), "hw");
  const JobSpec j = load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/llama-3.1-70b-1024-h100.json",
                             {"model=qwen3-30b-a3b", "cluster.num_gpus=16", "parallel.tensor_model_parallel_size=1",
                              "parallel.pipeline_model_parallel_size=1", "parallel.virtual_pipeline_model_parallel_size=1",
                              "parallel.context_parallel_size=1", "parallel.expert_model_parallel_size=8",
                              "parallel.sequence_parallel=false", "parallel.zero_stage=1", "training.seq_length=4096",
                              "training.global_batch_size=16"},
                             catalog);
  ASSERT_EQ(expert_data_parallel_size(j), 2);
  const StageParameters sp = stage_parameters_per_gpu(j, 0);
  ASSERT_GT(sp.expert, 2 * sp.dense);  // 3.6 B expert and 1.5 B dense parameters per GPU
  const double bytes = (sp.dense / 16 + sp.expert / 2) * 30.0;
  const double expect = hw.memory_latency_s + hw.kernel_launch_overhead_s +
                        bytes / (j.cluster.gpu.memory_bandwidth_Bps * hw.elementwise_bw_fraction);
  EXPECT_NEAR(optimizer_step_time_s(j, hw, 0) / expect, 1.0, 1e-9);
}

}  // namespace
}  // namespace megasim
