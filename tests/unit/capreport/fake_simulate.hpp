#pragma once
// A hand-made stand-in for the step simulator: step time = 2 s of compute per DP-independent
// share + 0.5 s of exposed DP communication; rejects data-parallel sizes that do not divide
// the global batch (as the real validation does).
#include <string>

#include "megasim/config/specs.hpp"
#include "megasim/core/error.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim::testing {

inline JobSpec fake_job() {
  JobSpec j;
  j.name = "fake-175b";
  j.model.name = "gpt3-175b";
  j.cluster.gpu.name = "a100-sxm4-80gb";
  j.cluster.num_gpus = 512;
  j.cluster.gpus_per_node = 8;
  j.parallel.tensor_model_parallel_size = 8;
  j.parallel.pipeline_model_parallel_size = 8;
  j.parallel.data_parallel_size = 8;
  j.training.seq_length = 2048;
  j.training.global_batch_size = 768;
  j.training.micro_batch_size = 1;
  j.training.train_tokens = 300e9;
  j.system.comm_init_store = CommInitStore::Redis;
  j.system.comm_init_ordered = true;
  return j;
}

// Compute time 100 s / DP (perfect scaling), exposed DP comm 0.5 s, bubble 0.2 s.
inline StepReport fake_simulate(const JobSpec& j) {
  const std::int64_t dp = j.parallel.data_parallel_size;
  if (j.training.global_batch_size % dp != 0) {
    throw InputError("training.global_batch_size", "must be divisible by DP = " + std::to_string(dp));
  }
  StepReport r;
  r.name = j.name;
  r.engine = "fake";
  r.num_gpus = j.cluster.num_gpus;
  r.breakdown.compute_s = 100.0 / static_cast<double>(dp);
  r.breakdown.exposed_dp_comm_s = 0.5;
  r.breakdown.pipeline_bubble_s = 0.2;
  r.step_time_s = r.breakdown.total_s();
  r.tokens_per_s = static_cast<double>(j.training.global_batch_size * j.training.seq_length) / r.step_time_s;
  r.model_parameters = 175e9;
  r.model_flops_per_step = 6.0 * 175e9 * static_cast<double>(j.training.global_batch_size * j.training.seq_length);
  r.mfu = r.model_flops_per_step / (r.step_time_s * static_cast<double>(r.num_gpus) * 312e12);
  r.model_tflops_per_gpu = r.mfu * 312;
  r.memory.weights_bytes = 6e9;
  r.memory.gradients_bytes = 6e9;
  r.memory.optimizer_states_bytes = 24e9 / static_cast<double>(dp);
  r.memory.activations_bytes = 30e9;
  r.memory.buffers_bytes = 4e9;
  r.memory_capacity_bytes = 80.0 * 1024 * 1024 * 1024;
  r.memory_fits = r.memory.total_bytes() <= r.memory_capacity_bytes;
  r.plan.tp = j.parallel.tensor_model_parallel_size;
  r.plan.pp = j.parallel.pipeline_model_parallel_size;
  r.plan.dp = dp;
  r.plan.micro_batches_per_pipeline = j.training.global_batch_size / dp;
  return r;
}

}  // namespace megasim::testing
