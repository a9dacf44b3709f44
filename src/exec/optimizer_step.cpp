#include "optimizer_step.hpp"

#include <algorithm>

#include "megasim/model/params.hpp"

namespace megasim {

namespace {

// HBM bytes per parameter of the shard and the passes over it, by implementation, from each
// one's sequence of operations; g the gradient's bytes. Each pass is charged one kernel's latency
// (the loops launch one per tensor: with FSDP1's flat parameter per block, tens of microseconds
// more, left out).
// Checked on the lent H100 (tools/measure/optimizer_step.py, bench/data/h100-optimizer-step.json,
// 1e9 FP32 parameters in 40 tensors): fused 10.96 ms, foreach 30.12, for-loop 27.66, Composer's
// DecoupledAdamW 31.04; these byte counts at the Hopper profile's elementwise rate give 10.3,
// 29.5, 29.5 and 32.5 ms.
struct OptimizerTraffic {
  double bytes_per_param;
  int passes;
};

OptimizerTraffic adam_traffic(OptimizerImpl impl, double g) {
  switch (impl) {
    case OptimizerImpl::Fused:
      // Read master, m, v and the gradient; write master, m, v: one kernel.
      return {12.0 + g + 12.0, 1};
    case OptimizerImpl::Foreach:
    case OptimizerImpl::ForLoop:
      // torch.optim.AdamW (_multi_tensor_adamw / _single_tensor_adamw): weight decay p *= c
      // (8), m.lerp_(g) (8 + g), v *= b2 (8), v.addcmul_(g, g) (8 + g), sqrt(v) (8), / c2 (8),
      // + eps (8), p.addcdiv_(m, denom) (16).
      return {72.0 + 2.0 * g, 8};
    case OptimizerImpl::DecoupledAdamw:
      // Composer's loop: p.mul_ (8), m.mul_ (8), m.add_(g) (8 + g), v.mul_ (8),
      // v.addcmul_(g, g) (8 + g), sqrt (8), / c2 (8), + eps (8), p.addcdiv_ (16).
      return {80.0 + 2.0 * g, 9};
  }
  return {12.0 + g + 12.0, 1};
}

}  // namespace

double optimizer_step_time_s(const JobSpec& job, const HardwareProfile& hw, int stage) {
  // Under ZeRO each rank updates its shard only: dense parameters sharded over DP x CP, routed
  // experts' over the expert data-parallel group (Megatron-Core's distributed optimizer, as the
  // memory model shards their states).
  const StageParameters sp = stage_parameters_per_gpu(job, stage);
  const bool sharded = job.parallel.zero_stage >= 1;
  const double dp = static_cast<double>(std::max<std::int64_t>(1, job.parallel.data_parallel_size)) *
                    std::max(1, job.parallel.context_parallel_size);
  const double edp = static_cast<double>(expert_data_parallel_size(job));
  const double params = sp.dense / (sharded ? dp : 1.0) + sp.expert / (sharded ? edp : 1.0);
  const double grad_b = job.system.grad_reduce_in_fp32 ? 4.0 : 2.0;
  OptimizerTraffic t = adam_traffic(job.system.optimizer_implementation, grad_b);
  // Megatron and DeepSpeed copy the updated master weights into the 16-bit model weights (2 B);
  // PyTorch FSDP has none (it casts the FP32 shard as it gathers: fsdp_staging).
  if (job.system.fsdp_staging == FsdpStaging::None) t.bytes_per_param += 2.0;
  if (job.training.optimizer == Optimizer::Lamb) {  // Apex FusedLAMB (validate.cpp): norm passes
    t.bytes_per_param += 8.0;
    t.passes = 3;
  }
  return t.passes * (hw.memory_latency_s + hw.kernel_launch_overhead_s) +
         params * t.bytes_per_param / (job.cluster.gpu.memory_bandwidth_Bps * hw.elementwise_bw_fraction);
}

}  // namespace megasim
