#include "optimizer_step.hpp"

#include <algorithm>

#include "megasim/model/params.hpp"

namespace megasim {

double optimizer_step_time_s(const JobSpec& job, const HardwareProfile& hw, int stage) {
  const double dp = static_cast<double>(std::max<std::int64_t>(1, job.parallel.data_parallel_size)) *
                    std::max(1, job.parallel.context_parallel_size);
  double params = parameters_per_gpu(job, stage);
  if (job.parallel.zero_stage >= 1) params /= dp;  // each rank updates its shard only
  const double grad_b = job.system.grad_reduce_in_fp32 ? 4.0 : 2.0;
  double bytes_per_param = 12.0 + grad_b + 12.0 + 2.0;
  if (job.training.optimizer == Optimizer::Lamb) bytes_per_param += 8.0;
  // Multi-tensor apply launches few kernels; count one latency per pass.
  const int passes = job.training.optimizer == Optimizer::Lamb ? 3 : 1;
  return passes * (hw.memory_latency_s + hw.kernel_launch_overhead_s) +
         params * bytes_per_param /
             (job.cluster.gpu.memory_bandwidth_Bps * hw.elementwise_bw_fraction);
}

}  // namespace megasim
