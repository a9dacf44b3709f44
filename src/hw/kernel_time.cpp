// Per-op and per-layer compute times built on the kernel models.
#include "megasim/hw/kernel_time.hpp"

#include <algorithm>

#include "megasim/model/params.hpp"

namespace megasim {

double op_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const JobSpec& job,
                 const LayerOp& op) {
  const Precision p = job.training.precision;
  double t = 0;
  switch (op.kind) {
    case OpKind::Gemm: {
      // Under fp8 training only the layers' linears are FP8; other GEMMs stay BF16.
      const Precision gp = op.fp8 ? Precision::Fp8 : (p == Precision::Fp8 ? Precision::Bf16 : p);
      t = gemm_time_s(hw, gpu, gp, op.gemm_m, op.gemm_n, op.gemm_k);
      // Megatron-family frameworks accumulate weight gradients straight into the main-grad
      // buffer (gradient-accumulation fusion: the wgrad GEMM reads and writes C in the
      // gradient dtype instead of writing a 16-bit result; without the fusion a separate add
      // moves more). The measured GEMM rates are for 16-bit outputs: add the extra bytes' time,
      // less what the GEMM's main loop hides (measured per precision).
      if (op.weight_gradient) {
        const double exposed = gemm_params(hw, gp).main_grad_exposed_fraction;
        const double grad_bytes = job.system.grad_reduce_in_fp32 ? 4.0 : 2.0;
        t += exposed * (2.0 * grad_bytes - 2.0) * static_cast<double>(op.gemm_m) *
             static_cast<double>(op.gemm_n) / gpu.memory_bandwidth_Bps;
      }
      break;
    }
    case OpKind::Attention: {
      const AttentionKernel k =
          parse_attention_kernel(job.system.attention_kernel, "system.attention_kernel");
      t = attention_time_s(hw, gpu, p, k, op.attn.backward, op.attn.batch, op.attn.heads,
                           op.attn.seq_q, op.attn.seq_kv_span, op.attn.head_dim, op.attn.causal,
                           op.attn.dropout);
      break;
    }
    case OpKind::Elementwise:
      t = op.kernels * hw.memory_latency_s +
          op.bytes / (gpu.memory_bandwidth_Bps * hw.elementwise_bw_fraction);
      break;
    case OpKind::Norm:
      t = op.kernels * hw.memory_latency_s +
          op.bytes / (gpu.memory_bandwidth_Bps * hw.norm_bw_fraction);
      break;
    default: return 0.0;  // communication: timed by the network model
  }
  return t + op.kernels * hw.kernel_launch_overhead_s;
}

double ops_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const JobSpec& job,
                  const std::vector<LayerOp>& ops) {
  double device = 0;
  int kernels = 0;
  for (const LayerOp& op : ops) {
    if (is_communication(op.kind)) continue;
    device += op_time_s(hw, gpu, job, op);
    kernels += op.kernels;
  }
  return std::max(device, kernels * hw.host_dispatch_s);
}

namespace {
void split(const HardwareProfile& hw, const GpuSpec& gpu, const JobSpec& job,
           const std::vector<LayerOp>& ops, double& gemm, double& attn, double& memory,
           double& overlap_path) {
  for (const LayerOp& op : ops) {
    const double t = op_time_s(hw, gpu, job, op);
    if (op.kind == OpKind::Gemm) {
      gemm += t;
      if (op.tp_overlap_path) overlap_path += t;
    } else if (op.kind == OpKind::Attention) {
      attn += t;
    } else if (!is_communication(op.kind)) {
      memory += t;
    }
  }
}
}  // namespace

LayerComputeTimes layer_compute_times(const JobSpec& job, const HardwareProfile& hw) {
  const GpuSpec& gpu = job.cluster.gpu;
  LayerComputeTimes r;
  const auto fwd = layer_forward_ops(job);
  const auto bwd = layer_backward_ops(job);
  r.forward_s = ops_time_s(hw, gpu, job, fwd);
  r.backward_s = ops_time_s(hw, gpu, job, bwd);
  r.recompute_s = ops_time_s(hw, gpu, job, layer_recompute_ops(job));
  split(hw, gpu, job, fwd, r.gemm_forward_s, r.attention_forward_s, r.memory_forward_s,
        r.overlap_path_gemm_forward_s);
  split(hw, gpu, job, bwd, r.gemm_backward_s, r.attention_backward_s, r.memory_backward_s,
        r.overlap_path_gemm_backward_s);
  return r;
}

StageExtraTimes stage_extra_times(const JobSpec& job, const HardwareProfile& hw) {
  const GpuSpec& gpu = job.cluster.gpu;
  return StageExtraTimes{ops_time_s(hw, gpu, job, embedding_forward_ops(job)),
                         ops_time_s(hw, gpu, job, embedding_backward_ops(job)),
                         ops_time_s(hw, gpu, job, lm_head_forward_ops(job)),
                         ops_time_s(hw, gpu, job, lm_head_backward_ops(job))};
}

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

double overlap_compute_slowdown(const HardwareProfile& hw) {
  const double sms = std::max(1, hw.gemm.sm_count);
  return sms / (sms - hw.nccl_channels_sharing_sms);
}

}  // namespace megasim
