// Per-op and per-layer compute times built on the kernel models.
#include "megasim/hw/kernel_time.hpp"

#include "megasim/core/error.hpp"

#include <algorithm>


namespace megasim {

namespace {

// MoE expert GEMMs: one grouped kernel, or a loop of one GEMM per expert (each with its launch).
// The shared dimension that is not the rows: fprop/dgrad (rows x n x k), wgrad (k x n x rows)
// where the op's gemm_m holds that k.
double expert_gemm_time_s(const HardwareProfile& hw, const GpuSpec& gpu, Precision p, const LayerOp& op) {
  const std::int64_t other = op.weight_gradient ? op.gemm_m : op.gemm_k;
  if (op.grouped) return grouped_gemm_time_s(hw, gpu, p, op.expert_rows, op.gemm_n, other, op.weight_gradient);
  double t = 0;
  for (const std::int64_t r : op.expert_rows) {
    t += op.weight_gradient ? gemm_time_s(hw, gpu, p, other, op.gemm_n, r) : gemm_time_s(hw, gpu, p, r, op.gemm_n, other);
  }
  return t;
}

// A block-scaled FP8 GEMM's time relative to the per-tensor one the FP8 block fits (measured).
double blockwise_time_ratio(const HardwareProfile& hw, bool wgrad) {
  const GemmParams& g = gemm_params(hw, Precision::Fp8);
  const double r = wgrad ? g.blockwise_wgrad_time_ratio : g.blockwise_fprop_dgrad_time_ratio;
  if (!(r > 0)) {
    throw InputError("training.fp8_recipe", "blockwise FP8 GEMMs are not measured for hw." + hw.name +
                                                " (gemm_fp8.blockwise_*_time_ratio); use tensorwise, delayed or mxfp8");
  }
  return r;
}

}  // namespace

double op_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const LayerOp& op) {
  double t = 0;
  switch (op.kind) {
    case OpKind::Gemm: {
      // Under fp8 training only the layers' linears are FP8 (op.fp8); other GEMMs stay 16-bit,
      // which BF16 and FP16 run at the same rates.
      const Precision gp = op.fp8 ? Precision::Fp8 : Precision::Bf16;
      if (!op.expert_rows.empty()) {
        t = expert_gemm_time_s(hw, gpu, gp, op);
      } else {
        t = gemm_time_s(hw, gpu, gp, op.gemm_m, op.gemm_n, op.gemm_k);
      }
      if (op.fp8 && op.fp8_block_scaled) t *= blockwise_time_ratio(hw, op.weight_gradient);
      // Megatron-family frameworks accumulate weight gradients straight into the main-grad
      // buffer (gradient-accumulation fusion: the wgrad GEMM reads and writes C in the
      // gradient dtype instead of writing a 16-bit result; without the fusion a separate add
      // moves more). The measured GEMM rates are for 16-bit outputs: add the extra bytes' time,
      // less what the GEMM's main loop hides (measured per precision).
      if (op.weight_gradient) {
        const double exposed = gemm_params(hw, gp).main_grad_exposed_fraction;
        t += exposed * (2.0 * op.main_grad_bytes - 2.0) * static_cast<double>(op.gemm_m) *
             static_cast<double>(op.gemm_n) / gpu.memory_bandwidth_Bps;
      }
      break;
    }
    case OpKind::Attention:
      // Attention runs in 16-bit under every precision (Transformer Engine keeps it out of FP8).
      t = attention_time_s(hw, gpu, Precision::Bf16, op.attn.kernel, op.attn.backward, op.attn.batch,
                           op.attn.heads, op.attn.seq_q, op.attn.seq_kv_span, op.attn.head_dim, op.attn.causal,
                           op.attn.dropout);
      break;
    case OpKind::Elementwise:
      t = op.kernels * hw.memory_latency_s +
          (op.bytes - op.upcast_bytes) / (gpu.memory_bandwidth_Bps * hw.elementwise_bw_fraction) +
          op.upcast_bytes / (gpu.memory_bandwidth_Bps * hw.upcast_bw_fraction);
      break;
    case OpKind::Norm:
      t = op.kernels * hw.memory_latency_s +
          op.bytes / (gpu.memory_bandwidth_Bps * hw.norm_bw_fraction);
      break;
    default: return 0.0;  // communication: timed by the network model
  }
  return t + op.kernels * hw.kernel_launch_overhead_s;
}

double ops_time_s(const HardwareProfile& hw, const GpuSpec& gpu, const std::vector<LayerOp>& ops) {
  double device = 0;
  int kernels = 0;
  for (const LayerOp& op : ops) {
    if (is_communication(op.kind)) continue;
    device += op_time_s(hw, gpu, op);
    kernels += op.kernels;
  }
  return std::max(device, kernels * hw.host_dispatch_s);  // at plain PyTorch's launch rate
}

double overlap_compute_slowdown(const HardwareProfile& hw) {
  const double sms = std::max(1, hw.gemm.sm_count);
  return sms / (sms - hw.nccl_channels_sharing_sms);
}

}  // namespace megasim
